package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/gatewaytest"
)

// apiKey is the gateway API key the server announces: the key itself, and
// whether it came from GATEWAY_API_KEY, in which case it is never printed.
type apiKey struct {
	value   string
	fromEnv bool
}

// loadAPIKey returns the key of GATEWAY_API_KEY, or else a generated key,
// which it prints once on stderr, and adds it to store: as the admin key
// "key-default" of the workspace "default" when the store is otherwise
// empty (alone), else as the member key "key-demo" of that workspace,
// unless the store already holds it. A disabled key of the store is not
// reused: a key is generated instead.
func loadAPIKey(store *gateway.MemoryStore, alone bool, stderr io.Writer) apiKey {
	add := func(key string) {
		k := gateway.APIKey{ID: "key-demo", Digest: gateway.HashAPIKey(key), WorkspaceID: defaultWorkspace}
		if alone {
			k.ID, k.Role = defaultKeyID, gateway.RoleAdmin
		}
		store.AddAPIKey(k)
	}
	if v := os.Getenv("GATEWAY_API_KEY"); v != "" {
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
	fmt.Fprintf(stderr, "gateway: generated API key %s; set GATEWAY_API_KEY to keep it\n", v)
	add(v)
	return apiKey{value: v}
}

// startDemo starts the demo's fake provider on a loopback port and adds
// the virtual key "demo" (provider openai, usable from every workspace)
// that points at it, with a random credential the provider requires. It
// fails if store already has a virtual key "demo". The caller closes the
// provider.
func startDemo(store *gateway.MemoryStore) (*gatewaytest.Server, error) {
	if _, err := store.VirtualKey(context.Background(), "demo"); err == nil {
		return nil, errors.New("gateway: -demo: the config file already has a virtual key named demo")
	}
	token := "sk-demo-" + rand.Text()
	fake := gatewaytest.NewServer()
	fake.RequireToken(token)
	store.AddVirtualKey(gateway.VirtualKey{Slug: "demo", Provider: gateway.ProviderOpenAI, APIKey: token, BaseURL: fake.URL})
	return fake, nil
}

// demoBody is the chat completion the demo's curl command sends. It holds
// no single quote, so that the command can quote it for a shell.
const demoBody = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello, gateway"}]}`

// demoCurl returns a shell command that sends demoBody through the virtual
// key "demo" to the server listening on addr, with key. A key from
// GATEWAY_API_KEY is written as a reference to the variable, so that the
// command works in the shell that started the server without printing it.
func demoCurl(addr net.Addr, key apiKey) string {
	host := addr.String()
	if ta, ok := addr.(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		ip := "127.0.0.1"
		if ta.IP.To4() == nil {
			ip = "::1"
		}
		host = net.JoinHostPort(ip, strconv.Itoa(ta.Port))
	}
	keyHeader := "'x-gateway-api-key: " + key.value + "'"
	if key.fromEnv {
		keyHeader = `"x-gateway-api-key: $GATEWAY_API_KEY"`
	}
	return "curl http://" + host + "/v1/chat/completions -H " + keyHeader +
		" -H 'x-gateway-virtual-key: demo' -H 'Content-Type: application/json' -d '" + demoBody + "'"
}

// defaultKeyID and defaultWorkspace name the admin key the server adds
// for GATEWAY_API_KEY, or generates, when no config file names its keys.
const (
	defaultKeyID     = "key-default"
	defaultWorkspace = "default"
)

// storedAPIKey is loadAPIKey for a durable store, run without -config.
// The key of GATEWAY_API_KEY is added as the admin key "key-default" of
// the workspace "default" (replacing an earlier key-default, such as a
// generated one) unless the store holds it already. Without
// GATEWAY_API_KEY, a store that holds no API key, as a new database does,
// gets a generated admin key so, printed once on stderr; a store that
// holds keys is used as it is, and no key is generated or printed.
func storedAPIKey(ctx context.Context, st *backend, stderr io.Writer) (apiKey, error) {
	if v := os.Getenv("GATEWAY_API_KEY"); v != "" {
		k, err := st.apiKey(ctx, gateway.HashAPIKey(v))
		switch {
		case err == nil:
			if k.Disabled {
				fmt.Fprintf(stderr, "gateway: warning: the key of GATEWAY_API_KEY is disabled in %s\n", st.name)
			}
		case errors.Is(err, gateway.ErrNotFound):
			if err := st.putAPIKey(ctx, defaultAdminKey(v)); err != nil {
				return apiKey{}, fmt.Errorf("gateway: storing the key of GATEWAY_API_KEY in %s: %w", st.name, err)
			}
		default:
			return apiKey{}, fmt.Errorf("gateway: -db %s: %w", st.name, err)
		}
		return apiKey{value: v, fromEnv: true}, nil
	}
	has, err := st.hasAPIKeys(ctx)
	if err != nil {
		return apiKey{}, fmt.Errorf("gateway: -db %s: %w", st.name, err)
	}
	if has {
		fmt.Fprintf(stderr, "gateway: using the API keys stored in %s\n", st.name)
		return apiKey{}, nil
	}
	v := "gw-" + rand.Text()
	if err := st.putAPIKey(ctx, defaultAdminKey(v)); err != nil {
		return apiKey{}, fmt.Errorf("gateway: storing a generated API key in %s: %w", st.name, err)
	}
	fmt.Fprintf(stderr, "gateway: generated API key %s (admin of the workspace %s), stored in %s; set GATEWAY_API_KEY to choose your own\n",
		v, defaultWorkspace, st.name)
	return apiKey{value: v}, nil
}

// defaultAdminKey returns the admin key "key-default" of the workspace
// "default" for the key v.
func defaultAdminKey(v string) gateway.APIKey {
	now := time.Now().UTC()
	return gateway.APIKey{ID: defaultKeyID, Digest: gateway.HashAPIKey(v), WorkspaceID: defaultWorkspace, Role: gateway.RoleAdmin,
		CreatedAt: now, UpdatedAt: now}
}
