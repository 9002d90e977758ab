package admin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
)

// apiKeyObject is the "object" of an API key in responses.
const apiKeyObject = "api-key"

// newGatewayKey returns a fresh gateway API key: "gw-" and 64 hex digits
// of crypto/rand.
func newGatewayKey() string {
	var b [32]byte
	rand.Read(b[:])
	return "gw-" + hex.EncodeToString(b[:])
}

// apiKeyDefaults is the defaults object of an API key.
type apiKeyDefaults struct {
	Metadata map[string]string `json:"metadata,omitempty"`
	ConfigID string            `json:"config_id,omitempty"`
}

// apiKeyCreate is the body of POST /api-keys/{type}/{sub-type}: the
// reference's CreateApiKeyObject without organisation_id, alert_emails and
// rotation_policy, which are refused as unknown fields.
type apiKeyCreate struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	WorkspaceID string          `json:"workspace_id"`
	UserID      string          `json:"user_id"`
	Scopes      []gateway.Scope `json:"scopes"`
	RateLimits  json.RawMessage `json:"rate_limits"`
	UsageLimits json.RawMessage `json:"usage_limits"`
	Defaults    *apiKeyDefaults `json:"defaults"`
	ExpiresAt   json.RawMessage `json:"expires_at"`
}

// apiKeyUpdate is the body of PUT /api-keys/{id}; absent fields are left
// as they are.
type apiKeyUpdate struct {
	Name        *string          `json:"name"`
	Description *string          `json:"description"`
	Scopes      *[]gateway.Scope `json:"scopes"`
	RateLimits  json.RawMessage  `json:"rate_limits"`
	UsageLimits json.RawMessage  `json:"usage_limits"`
	Defaults    *apiKeyDefaults  `json:"defaults"`
	ExpiresAt   json.RawMessage  `json:"expires_at"`
}

// check checks the defaults a tenant writes on a key: metadata within
// the bounds of x-gateway-metadata (it is copied into every log record of
// the key), and config_id the id of a saved config: 1 to 64 letters,
// digits, '-', '_' and '.', or empty for none.
func (d *apiKeyDefaults) check() error {
	if d == nil {
		return nil
	}
	if err := control.Metadata("defaults.metadata", d.Metadata); err != nil {
		return err
	}
	if len(d.ConfigID) > maxConfigRefBytes {
		return control.Invalid("defaults.config_id", "defaults.config_id must be at most "+strconv.Itoa(maxConfigRefBytes)+" bytes")
	}
	for i := 0; i < len(d.ConfigID); i++ {
		if c := d.ConfigID[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return control.Invalid("defaults.config_id", "defaults.config_id must be the id of a saved config: letters, digits, '-', '_' and '.'")
		}
	}
	return nil
}

// checkKeyText checks the name and description of a key's create or update
// body (nil for absent).
func checkKeyText(name, description *string) error {
	if name != nil {
		if *name == "" {
			return control.Invalid("name", "name must not be empty")
		}
		if err := control.Label("name", *name); err != nil {
			return err
		}
	}
	if description != nil {
		return control.Description("description", *description)
	}
	return nil
}

// selfChange refuses an update of a key by itself that changes its
// scopes, limits or expiry (docs/architecture.md, Trust): a key cannot widen what it was
// given. It may still rename, describe or rotate itself.
func (u *apiKeyUpdate) selfChange() error {
	for _, f := range []struct {
		name string
		set  bool
	}{{"scopes", u.Scopes != nil}, {"rate_limits", u.RateLimits != nil}, {"usage_limits", u.UsageLimits != nil},
		{"expires_at", u.ExpiresAt != nil}} {
		if f.set {
			return &gateway.Error{Status: http.StatusForbidden, Type: gateway.TypePermission, Code: gateway.CodePermissionDenied, Param: f.name,
				Message: "a key may not change its own " + f.name + "; another key holding the scopes may"}
		}
	}
	return nil
}

// checkScopes checks scopes a caller grants: known, and held by the caller.
func checkScopes(id gateway.Identity, scopes []gateway.Scope) error {
	if len(scopes) == 0 {
		return control.Invalid("scopes", "scopes must hold at least one scope")
	}
	for i, s := range scopes {
		p := "scopes[" + strconv.Itoa(i) + "]"
		if !gateway.ValidScope(s) {
			return control.Invalid(p, p+": unknown scope "+control.Quote(string(s)))
		}
		if !id.Can(s) {
			return &gateway.Error{Status: http.StatusForbidden, Type: gateway.TypePermission, Code: gateway.CodePermissionDenied, Param: p,
				Message: "a key may not grant the " + string(s) + " scope, which it lacks"}
		}
	}
	return nil
}

// expiresAt parses expires_at: zero for absent or null; a time in the
// past is refused.
func expiresAt(raw json.RawMessage, now time.Time) (time.Time, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return time.Time{}, nil
	}
	var t time.Time
	if err := json.Unmarshal(raw, &t); err != nil {
		return t, control.Invalid("expires_at", "expires_at must be an RFC 3339 date-time or null")
	}
	if !t.After(now) {
		return t, control.Invalid("expires_at", "expires_at must be in the future")
	}
	return t.UTC(), nil
}

// apiKeyWire is the reference's ApiKeyObject. Key is a mask, never the key.
type apiKeyWire struct {
	ID            string          `json:"id"`
	Key           string          `json:"key"`
	Name          string          `json:"name"`
	Description   string          `json:"description"`
	Type          string          `json:"type"`
	WorkspaceID   string          `json:"workspace_id,omitempty"`
	UserID        string          `json:"user_id,omitempty"`
	Status        string          `json:"status"`
	CreatedAt     time.Time       `json:"created_at,omitzero"`
	LastUpdatedAt time.Time       `json:"last_updated_at,omitzero"`
	RateLimits    json.RawMessage `json:"rate_limits,omitempty"`
	UsageLimits   json.RawMessage `json:"usage_limits,omitempty"`
	Scopes        []gateway.Scope `json:"scopes"`
	Defaults      *apiKeyDefaults `json:"defaults,omitempty"`
	ExpiresAt     time.Time       `json:"expires_at,omitzero"`
	Object        string          `json:"object"`
}

// maskedKey is what reads show in place of a key: a fixed mask and the
// last 4 hex digits of its digest, enough to tell keys apart.
func maskedKey(k *gateway.APIKey) string {
	return "gw-****" + hex.EncodeToString(k.Digest[sha256Tail:])
}

const sha256Tail = 30

func keyWire(k *gateway.APIKey) apiKeyWire {
	scopes := control.KeyScopes(k)
	o := apiKeyWire{ID: k.ID, Key: maskedKey(k), Name: k.Name, Description: k.Description,
		Type: string(control.KeyType(k)) + "-" + string(keySubType(k)), WorkspaceID: k.WorkspaceID, UserID: k.UserID,
		Status: "active", CreatedAt: k.CreatedAt, LastUpdatedAt: k.UpdatedAt, RateLimits: k.RateLimits,
		UsageLimits: k.UsageLimits, Scopes: scopes, ExpiresAt: k.ExpiresAt, Object: apiKeyObject}
	if len(k.Metadata) > 0 || k.DefaultConfig != "" {
		o.Defaults = &apiKeyDefaults{Metadata: k.Metadata, ConfigID: k.DefaultConfig}
	}
	return o
}

// rotateBody is the reference's RotateApiKeyRequest.
type rotateBody struct {
	KeyTransitionPeriodMS *int64 `json:"key_transition_period_ms"`
}

// maxConfigRefBytes bounds the config id of a key's defaults.
const maxConfigRefBytes = 64

// apiKeyNotFound is the 404 of an unknown key, and of one the caller
// does not see.
func apiKeyNotFound(kid string) *gateway.Error {
	return control.NotFound("no API key " + control.Quote(kid))
}

// lookupAPIKey returns the key kid if the caller may see it, else 404.
func lookupAPIKey(ctx context.Context, store KeyStore, id gateway.Identity, kid string) (*gateway.APIKey, error) {
	k, err := store.APIKeyByID(ctx, kid)
	if errors.Is(err, gateway.ErrNotFound) || err == nil && (k == nil || !control.Sees(id, k)) {
		return nil, apiKeyNotFound(kid)
	}
	return k, err
}

// keySubType returns k's sub-type, KeyService for the zero value.
func keySubType(k *gateway.APIKey) gateway.KeySubType {
	if k.SubType == "" {
		return gateway.KeyService
	}
	return k.SubType
}

// cloneAPIKey returns a copy of k sharing no memory with it.
func cloneAPIKey(k *gateway.APIKey) *gateway.APIKey {
	c := *k
	c.Scopes = slices.Clone(k.Scopes)
	c.Metadata = maps.Clone(k.Metadata)
	c.RateLimits = slices.Clone(k.RateLimits)
	c.UsageLimits = slices.Clone(k.UsageLimits)
	return &c
}
