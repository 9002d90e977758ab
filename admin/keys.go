package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
	"github.com/modelgateway/gateway/observe"
)

// Bounds of the API keys control plane.
const (
	minKeyTransition = 30 * time.Minute
	maxKeyTransition = 365 * 24 * time.Hour
)

// serveAPIKeys serves the API keys control plane under {prefix}/api-keys
// (the control plane, the reference's shapes):
//
//	POST   /api-keys/{type}/{sub-type}  create → 200 {"id","key","object":"api-key"}
//	GET    /api-keys                    list   → 200 {"object":"list","data","total"}
//	GET    /api-keys/{id}               read   → 200 the key, masked
//	PUT    /api-keys/{id}               update → 200 {}
//	DELETE /api-keys/{id}               delete → 200 {}
//	POST   /api-keys/{id}/rotate        rotate → 200 {"id","key","key_transition_expires_at"}
//
// Reads need the api_keys.read scope, writes api_keys.write (403
// otherwise). A workspace key sees and changes only the workspace keys of
// its own workspace: any other key is a 404, as if it did not exist. An
// organisation key acts on every key, names a workspace with workspace_id
// (in the query of a list, the body of a create), and alone may create
// organisation keys. A key may grant only scopes it holds itself.
//
// Keys are ordered by scope (docs/architecture.md, Trust): a key creates, updates, rotates
// and deletes only keys whose scopes (Scopes, or its role's preset when it
// names none) are a subset of its own, and only an organisation key acts
// on an organisation key; any other is a 403 naming the scope it lacks.
// No key changes its own scopes, rate_limits, usage_limits or expires_at
// (403 naming the field); it may rename, describe or rotate itself.
// name is a label (checkLabel), description at most 4096 bytes without
// NUL, defaults.metadata within the bounds of x-gateway-metadata and
// defaults.config_id a config id of at most 64 bytes (400 naming the
// field). Answers carrying a plaintext key (create, rotate) are sent with
// Cache-Control: no-store. The audit record of a write names the
// workspace of the key acted on (or created), whoever made it.
//
// The plaintext of a key appears only in the answers of create and
// rotate; the gateway stores its SHA-256 digest alone, so reads show a
// mask ("gw-****" and the last 4 hex digits of the digest) in its place.
// rate_limits are checked like the type, unit and value of rate-limits
// policies (a 400 names the field, e.g. rate_limits[0].unit), stored as
// given and enforced on the key's data-plane requests (see
// APIKey.RateLimits); usage_limits are checked like a usage-limits
// policy's fields (a 400 names the field, e.g. usage_limits.credit_limit)
// and enforced as a budget of the key (see budget_keys.go). A bad type
// or sub-type in the create path is a 400 naming type or sub-type.
// Control-plane requests are never rate-limited.
func (a *plane) serveAPIKeys(w http.ResponseWriter, r *http.Request) {
	id, ok := control.Scoped(w, r, gateway.ScopeAPIKeysRead, gateway.ScopeAPIKeysWrite)
	if !ok {
		return
	}
	store := a.o.Keys
	if store == nil {
		gateway.WriteError(w, r, &gateway.Error{Status: http.StatusNotFound, Type: gateway.TypeNotFound, Code: gateway.CodeNotFound,
			Message: "API keys are not managed on this gateway"})
		return
	}
	kid := r.PathValue("id")
	var m httpapi.Methods
	switch {
	case r.PathValue("type") != "":
		m = httpapi.Methods{http.MethodPost: func(w http.ResponseWriter, r *http.Request) error { return a.createAPIKey(w, r, store, id) }}
	case kid == "":
		m = httpapi.Methods{http.MethodGet: func(w http.ResponseWriter, r *http.Request) error { return a.listAPIKeys(w, r, store, id) }}
	case strings.HasSuffix(r.Pattern, "/rotate"):
		m = httpapi.Methods{http.MethodPost: func(w http.ResponseWriter, r *http.Request) error { return a.rotateAPIKey(w, r, store, id, kid) }}
	default:
		m = httpapi.Methods{
			http.MethodGet:    func(w http.ResponseWriter, r *http.Request) error { return a.getAPIKey(w, r, store, id, kid) },
			http.MethodPut:    func(w http.ResponseWriter, r *http.Request) error { return a.updateAPIKey(w, r, store, id, kid) },
			http.MethodDelete: func(w http.ResponseWriter, r *http.Request) error { return a.deleteAPIKey(w, r, store, id, kid) },
		}
	}
	err := m.Serve(w, r)
	if err != nil {
		control.Fail(w, r, a.o.ErrorLog, "API key store", err)
	}
}

func (a *plane) createAPIKey(w http.ResponseWriter, r *http.Request, store KeyStore, id gateway.Identity) error {
	typ, sub := gateway.KeyType(r.PathValue("type")), gateway.KeySubType(r.PathValue("subtype"))
	if typ != gateway.KeyOrganisation && typ != gateway.KeyWorkspace {
		return control.Invalid("type", "type must be organisation or workspace")
	}
	if sub != gateway.KeyService && sub != gateway.KeyUser {
		return control.Invalid("sub-type", "sub-type must be service or user")
	}
	var c apiKeyCreate
	if err := control.Decode(r, &c, false); err != nil {
		return err
	}
	now := a.now().UTC()
	k := gateway.APIKey{ID: control.NewUUID(), Name: c.Name, Description: c.Description, Type: typ, SubType: sub, UserID: c.UserID,
		Role: gateway.RoleMember, CreatedAt: now, UpdatedAt: now}
	switch {
	case c.Name == "":
		return control.Invalid("name", "name is required")
	case sub == gateway.KeyUser && c.UserID == "":
		return control.Invalid("user_id", "user_id is required for a user key")
	case sub == gateway.KeyService && c.UserID != "":
		return control.Invalid("user_id", "a service key has no user_id")
	}
	if err := checkKeyText(&c.Name, &c.Description); err != nil {
		return err
	}
	if err := c.Defaults.check(); err != nil {
		return err
	}
	switch {
	case typ == gateway.KeyOrganisation && id.Type != gateway.KeyOrganisation:
		return &gateway.Error{Status: http.StatusForbidden, Type: gateway.TypePermission, Code: gateway.CodePermissionDenied, Param: "type",
			Message: "only an organisation key may create organisation keys"}
	case typ == gateway.KeyOrganisation && c.WorkspaceID != "":
		return control.Invalid("workspace_id", "an organisation key has no workspace_id")
	case typ == gateway.KeyOrganisation:
	case id.Type == gateway.KeyOrganisation && c.WorkspaceID == "":
		return control.Invalid("workspace_id", "workspace_id is required for a workspace key made by an organisation key")
	case id.Type == gateway.KeyOrganisation:
		k.WorkspaceID = c.WorkspaceID
	case id.WorkspaceID == "":
		return &gateway.Error{Status: http.StatusForbidden, Type: gateway.TypePermission, Code: gateway.CodePermissionDenied,
			Message: "a key without a workspace cannot create keys"}
	case c.WorkspaceID != "" && c.WorkspaceID != id.WorkspaceID:
		return control.OtherWorkspace()
	default:
		k.WorkspaceID = id.WorkspaceID
	}
	observe.ActedIn(r, k.WorkspaceID)
	if err := checkScopes(id, c.Scopes); err != nil {
		return err
	}
	k.Scopes = c.Scopes
	var err error
	if k.RateLimits, err = gateway.RateLimitsJSON(c.RateLimits); err != nil {
		return err
	}
	if k.UsageLimits, err = gateway.UsageLimitsJSON(c.UsageLimits, false); err != nil {
		return err
	}
	if c.Defaults != nil {
		k.Metadata, k.DefaultConfig = c.Defaults.Metadata, c.Defaults.ConfigID
	}
	if k.ExpiresAt, err = expiresAt(c.ExpiresAt, now); err != nil {
		return err
	}
	if err := passOnLimits(r.Context(), store, id, &k); err != nil {
		return err
	}
	plain := newGatewayKey()
	k.Digest = gateway.HashAPIKey(plain)
	if err := store.CreateAPIKey(r.Context(), &k); err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store") // the plaintext, shown once
	httpapi.WriteJSON(w, http.StatusOK, struct {
		ID     string `json:"id"`
		Key    string `json:"key"`
		Object string `json:"object"`
	}{k.ID, plain, apiKeyObject})
	return nil
}

// the digest's last 2 bytes: 4 hex digits

func (a *plane) listAPIKeys(w http.ResponseWriter, r *http.Request, store KeyStore, id gateway.Identity) error {
	q := r.URL.Query()
	page, err := control.Page(q)
	if err != nil {
		return err
	}
	ws := ""
	if vs, ok := q["workspace_id"]; ok {
		if len(vs) != 1 || vs[0] == "" {
			return control.Invalid("workspace_id", "workspace_id must be given once, not empty")
		}
		ws = vs[0]
	}
	if id.Type != gateway.KeyOrganisation {
		if ws != "" && ws != id.WorkspaceID {
			return control.OtherWorkspace()
		}
		ws = id.WorkspaceID
		if ws == "" {
			ws = "\x00" // a workspace key of no workspace sees nothing
		}
	}
	all, err := store.APIKeys(r.Context(), ws)
	if err != nil {
		return err
	}
	data, total := httpapi.Filter(all, func(k *gateway.APIKey) bool { return control.Sees(id, k) && (ws == "" || k.WorkspaceID == ws) },
		keyWire, page)
	httpapi.WriteJSON(w, http.StatusOK, struct {
		Object string       `json:"object"`
		Data   []apiKeyWire `json:"data"`
		Total  int          `json:"total"`
	}{"list", data, total})
	return nil
}

func (a *plane) getAPIKey(w http.ResponseWriter, r *http.Request, store KeyStore, id gateway.Identity, kid string) error {
	k, err := lookupAPIKey(r.Context(), store, id, kid)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, keyWire(k))
	return nil
}

// passOnLimits makes a key created by a key that carries rate_limits,
// usage_limits or an expiry carry them too: a key may not lift its own
// limits (docs/architecture.md, Trust), so neither may it mint an unlimited twin. Absent
// limits are the creator's and other ones are refused (403 naming the
// field); the new key expires no later than its creator. A creator the
// store does not hold (a key the host authenticates some other way) passes
// nothing on.
func passOnLimits(ctx context.Context, store KeyStore, id gateway.Identity, k *gateway.APIKey) error {
	if id.KeyID == "" {
		return nil
	}
	creator, err := store.APIKeyByID(ctx, id.KeyID)
	if errors.Is(err, gateway.ErrNotFound) || err == nil && creator == nil {
		return nil
	}
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name      string
		own, made *json.RawMessage
	}{{"rate_limits", &creator.RateLimits, &k.RateLimits}, {"usage_limits", &creator.UsageLimits, &k.UsageLimits}} {
		switch {
		case len(*f.own) == 0:
		case len(*f.made) == 0:
			*f.made = bytes.Clone(*f.own)
		case !sameJSON(*f.own, *f.made):
			return &gateway.Error{Status: http.StatusForbidden, Type: gateway.TypePermission, Code: gateway.CodePermissionDenied, Param: f.name,
				Message: "a key with " + f.name + " creates keys only with the same " + f.name}
		}
	}
	if !creator.ExpiresAt.IsZero() && (k.ExpiresAt.IsZero() || k.ExpiresAt.After(creator.ExpiresAt)) {
		k.ExpiresAt = creator.ExpiresAt
	}
	return nil
}

// sameJSON reports whether a and b are the same JSON text but for
// insignificant white space.
func sameJSON(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}

// changeAPIKey reads key kid, lets change alter it and writes it back,
// reading again when the key changed meanwhile (see KeyStore). The
// caller's right to act on the key (Identity.mayActOn) is checked on
// each key as read, so that the write replaces only a key the caller
// may change: a key whose scopes grew after a first read is refused.
// The key's workspace is noted for the audit record.
func changeAPIKey(r *http.Request, store KeyStore, id gateway.Identity, kid string, change func(k *gateway.APIKey) error) error {
	ctx := r.Context()
	return control.SwapStored(r, "API key "+control.Quote(kid), apiKeyNotFound(kid), func() (error, error) {
		old, err := lookupAPIKey(ctx, store, id, kid)
		if err != nil {
			return nil, err
		}
		observe.ActedIn(r, old.WorkspaceID)
		if err := control.MayActOn(id, old); err != nil {
			return nil, err
		}
		k := cloneAPIKey(old)
		if err := change(k); err != nil {
			return nil, err
		}
		return store.UpdateAPIKey(ctx, old, k), nil
	})
}

func (a *plane) updateAPIKey(w http.ResponseWriter, r *http.Request, store KeyStore, id gateway.Identity, kid string) error {
	var u apiKeyUpdate
	if err := control.Decode(r, &u, false); err != nil {
		return err
	}
	if kid == id.KeyID {
		if err := u.selfChange(); err != nil {
			return err
		}
	}
	now := a.now().UTC()
	var (
		rl, ul json.RawMessage
		exp    time.Time
		err    error
	)
	if err := checkKeyText(u.Name, u.Description); err != nil {
		return err
	}
	if err := u.Defaults.check(); err != nil {
		return err
	}
	if u.Scopes != nil {
		if err := checkScopes(id, *u.Scopes); err != nil {
			return err
		}
	}
	if rl, err = gateway.RateLimitsJSON(u.RateLimits); err != nil {
		return err
	}
	if ul, err = gateway.UsageLimitsJSON(u.UsageLimits, false); err != nil {
		return err
	}
	if exp, err = expiresAt(u.ExpiresAt, now); err != nil {
		return err
	}
	err = changeAPIKey(r, store, id, kid, func(k *gateway.APIKey) error {
		if u.Name != nil {
			k.Name = *u.Name
		}
		if u.Description != nil {
			k.Description = *u.Description
		}
		if u.Scopes != nil {
			k.Scopes = *u.Scopes
		}
		if u.RateLimits != nil {
			k.RateLimits = rl
		}
		if u.UsageLimits != nil {
			k.UsageLimits = ul
		}
		if u.Defaults != nil {
			k.Metadata, k.DefaultConfig = u.Defaults.Metadata, u.Defaults.ConfigID
		}
		if u.ExpiresAt != nil {
			k.ExpiresAt = exp
		}
		k.UpdatedAt = now
		return nil
	})
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, struct{}{})
	return nil
}

// deleteAPIKey deletes key kid if the caller may act on it. The check
// and the delete are not one transaction (KeyStore has no conditional
// delete): a key whose scopes grow in between is deleted as read.
func (a *plane) deleteAPIKey(w http.ResponseWriter, r *http.Request, store KeyStore, id gateway.Identity, kid string) error {
	k, err := lookupAPIKey(r.Context(), store, id, kid)
	if err != nil {
		return err
	}
	observe.ActedIn(r, k.WorkspaceID)
	if err := control.MayActOn(id, k); err != nil {
		return err
	}
	if err := store.DeleteAPIKey(r.Context(), kid); err != nil {
		if errors.Is(err, gateway.ErrNotFound) {
			return apiKeyNotFound(kid)
		}
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, struct{}{})
	return nil
}

func (a *plane) rotateAPIKey(w http.ResponseWriter, r *http.Request, store KeyStore, id gateway.Identity, kid string) error {
	var b rotateBody
	if err := control.Decode(r, &b, true); err != nil {
		return err
	}
	var period time.Duration
	if ms := b.KeyTransitionPeriodMS; ms != nil {
		if *ms < minKeyTransition.Milliseconds() || *ms > maxKeyTransition.Milliseconds() {
			return control.Invalid("key_transition_period_ms",
				"key_transition_period_ms must be from 1800000 (30 minutes) to "+strconv.FormatInt(maxKeyTransition.Milliseconds(), 10))
		}
		period = time.Duration(*ms) * time.Millisecond
	}
	now := a.now().UTC()
	plain := newGatewayKey()
	err := changeAPIKey(r, store, id, kid, func(k *gateway.APIKey) error {
		k.PreviousDigest, k.PreviousValidUntil = k.Digest, time.Time{}
		if period > 0 {
			k.PreviousValidUntil = now.Add(period)
		}
		k.Digest = gateway.HashAPIKey(plain)
		k.UpdatedAt = now
		return nil
	})
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store") // the plaintext, shown once
	httpapi.WriteJSON(w, http.StatusOK, struct {
		ID        string    `json:"id"`
		Key       string    `json:"key"`
		ExpiresAt time.Time `json:"key_transition_expires_at"`
	}{kid, plain, now.Add(period)})
	return nil
}
