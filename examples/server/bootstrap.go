package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/memstore"
)

// apiKeyEnv is the environment variable whose key seeds a store that
// holds no API key.
const apiKeyEnv = "GATEWAY_API_KEY"

// apiKey is the gateway API key the server announces: the key itself, and
// whether it came from GATEWAY_API_KEY, in which case it is never printed.
type apiKey struct {
	value   string
	fromEnv bool
}

// defaultKeyID names the organisation admin key the server adds to a
// store that holds no API key; demoKeyID and demoWorkspace the member key
// -demo adds beside a config file's keys.
const (
	defaultKeyID  = "key-default"
	demoKeyID     = "key-demo"
	demoWorkspace = "default"
)

// loadState fills the store st at start-up (docs/architecture.md, Trust, bootstrap):
//
//   - the config file's entries (file, read from path; nil without
//     -config) are created or replaced, the other stored entries left
//     alone: the file is the operator's, applied at every start;
//   - then a store that holds no API key at all, as a new database,
//     gets one organisation admin key (see seedAPIKey): the key of
//     GATEWAY_API_KEY, or a generated one printed once. A store that holds
//     keys gets none: GATEWAY_API_KEY does not bring back a key that was
//     rotated or deleted over HTTP.
//
// With -demo (an in-memory store) beside a config file's keys, the
// demo's member key is added too (see demoAPIKey). loadState returns the
// key the server announces, if any, for the demo's curl command.
func loadState(ctx context.Context, st *backend, file *admin.File, path string, demo bool, stderr io.Writer) (apiKey, error) {
	if file != nil {
		if err := st.load(ctx, file); err != nil {
			return apiKey{}, fmt.Errorf("%w (in %s)", err, path)
		}
	}
	has, err := st.hasAPIKeys(ctx)
	if err != nil {
		return apiKey{}, fmt.Errorf("gateway: -db %s: %w", st.name, err)
	}
	if !has {
		return seedAPIKey(ctx, st, stderr)
	}
	if demo {
		return demoAPIKey(st.mem, stderr), nil
	}
	if st.durable() {
		fmt.Fprintf(stderr, "gateway: using the API keys stored in %s\n", st.name)
	}
	v := os.Getenv(apiKeyEnv)
	if v == "" {
		return apiKey{}, nil
	}
	k, err := st.apiKey(ctx, gateway.HashAPIKey(v))
	switch {
	case errors.Is(err, gateway.ErrNotFound):
		fmt.Fprintf(stderr, "gateway: warning: the key of %s is not one of the keys in %s, and is not added: "+
			"it seeds only a store that holds no API key, so that a key rotated or deleted stays so\n", apiKeyEnv, st.name)
		return apiKey{}, nil
	case err != nil:
		return apiKey{}, fmt.Errorf("gateway: -db %s: %w", st.name, err)
	case k.Disabled:
		fmt.Fprintf(stderr, "gateway: warning: the key of %s is disabled in %s\n", apiKeyEnv, st.name)
	}
	return apiKey{value: v, fromEnv: true}, nil
}

// seedAPIKey adds to st, which holds no API key, the organisation admin
// key "key-default": the key of GATEWAY_API_KEY, or else a random key,
// printed once on stderr (the store keeps only its digest). It holds
// every scope over every workspace, so that the operator can create
// workspaces and their keys.
func seedAPIKey(ctx context.Context, st *backend, stderr io.Writer) (apiKey, error) {
	key := apiKey{value: os.Getenv(apiKeyEnv), fromEnv: true}
	if key.value == "" {
		key = apiKey{value: "gw-" + rand.Text()}
	}
	if err := st.putAPIKey(ctx, orgAdminKey(key.value)); err != nil {
		return apiKey{}, fmt.Errorf("gateway: storing the first API key in %s: %w", st.name, err)
	}
	switch {
	case key.fromEnv:
		fmt.Fprintf(stderr, "gateway: added the key of %s as the organisation admin key %s\n", apiKeyEnv, defaultKeyID)
	case st.durable():
		fmt.Fprintf(stderr, "gateway: generated API key %s (the organisation admin key %s), stored in %s; it is not printed again\n",
			key.value, defaultKeyID, st.name)
	default:
		fmt.Fprintf(stderr, "gateway: generated API key %s (the organisation admin key %s); set %s to keep it\n",
			key.value, defaultKeyID, apiKeyEnv)
	}
	return key, nil
}

// orgAdminKey returns the organisation admin key "key-default" for the
// key v.
func orgAdminKey(v string) gateway.APIKey {
	now := time.Now().UTC()
	return gateway.APIKey{ID: defaultKeyID, Digest: gateway.HashAPIKey(v), Type: gateway.KeyOrganisation, Role: gateway.RoleAdmin,
		Name: "organisation admin", CreatedAt: now, UpdatedAt: now}
}

// demoAPIKey returns the key the demo's curl command carries when the
// config file gave the in-memory store keys: the key of GATEWAY_API_KEY
// when it is one of them and not disabled; else that key, or a generated
// one printed once, added as the member key "key-demo" of the workspace
// "default".
func demoAPIKey(store *memstore.Store, stderr io.Writer) apiKey {
	add := func(v string) {
		store.AddAPIKey(gateway.APIKey{ID: demoKeyID, Digest: gateway.HashAPIKey(v), WorkspaceID: demoWorkspace})
	}
	if v := os.Getenv(apiKeyEnv); v != "" {
		k, err := store.APIKey(context.Background(), gateway.HashAPIKey(v))
		if err != nil {
			add(v)
			return apiKey{value: v, fromEnv: true}
		}
		if !k.Disabled {
			return apiKey{value: v, fromEnv: true}
		}
	}
	v := "gw-" + rand.Text()
	fmt.Fprintf(stderr, "gateway: generated API key %s (the member key %s of the workspace %s); set %s to keep it\n",
		v, demoKeyID, demoWorkspace, apiKeyEnv)
	add(v)
	return apiKey{value: v}
}
