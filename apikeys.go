package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// APIKeyStore is an optional capability of Options.Keys, found by type
// assertion: keeping gateway API keys, as the API keys control plane
// needs. Without it every call to /api-keys is a 404 saying that API keys
// are not managed on this gateway. MemoryStore implements it.
//
// Implementations must be safe for concurrent use. APIKey (of KeyStore)
// must also find a key by its PreviousDigest until its
// PreviousValidUntil; the gateway checks that deadline again with its own
// clock. APIKeyByID, UpdateAPIKey and DeleteAPIKey return ErrNotFound for
// an unknown id. Keys returned by APIKeyByID and APIKeys are the caller's
// to change.
//
// APIKeys returns the keys whose WorkspaceID is workspaceID, or every key
// (organisation keys too) when workspaceID is empty, ordered by CreatedAt
// then ID. CreateAPIKey returns ErrConflict when k.ID or k.Digest is
// taken. UpdateAPIKey replaces the stored key old.ID with k only if the
// stored key still has old's Digest and UpdatedAt, and returns ErrConflict
// otherwise (or when k.Digest is another key's): the control plane reads,
// changes and writes back, and this keeps a racing PUT from undoing a
// rotation. Each method must be atomic with respect to the others.
type APIKeyStore interface {
	KeyStore
	APIKeyByID(ctx context.Context, id string) (*APIKey, error)
	APIKeys(ctx context.Context, workspaceID string) ([]APIKey, error)
	CreateAPIKey(ctx context.Context, k *APIKey) error
	UpdateAPIKey(ctx context.Context, old, k *APIKey) error
	DeleteAPIKey(ctx context.Context, id string) error
}

// apiKeyObject is the "object" of an API key in responses.
const apiKeyObject = "api-key"

func (g *Gateway) clock() time.Time {
	if g.now != nil {
		return g.now()
	}
	return time.Now()
}

// sees reports whether the caller may see and change key k.
func (id Identity) sees(k *APIKey) bool {
	if id.Type == KeyOrganisation {
		return true
	}
	return id.WorkspaceID != "" && k.keyType() == KeyWorkspace && k.WorkspaceID == id.WorkspaceID
}

func apiKeyNotFound(kid string) *Error {
	return &Error{Status: http.StatusNotFound, Type: TypeNotFound, Code: CodeNotFound,
		Message: "no API key " + quoteShort(kid)}
}

func otherWorkspace() *Error {
	return &Error{Status: http.StatusForbidden, Type: TypePermission, Code: CodePermissionDenied, Param: "workspace_id",
		Message: "only an organisation key may name another workspace"}
}

// lookupAPIKey returns the key kid if the caller may see it, else 404.
func lookupAPIKey(ctx context.Context, store APIKeyStore, id Identity, kid string) (*APIKey, error) {
	k, err := store.APIKeyByID(ctx, kid)
	if errors.Is(err, ErrNotFound) || err == nil && (k == nil || !id.sees(k)) {
		return nil, apiKeyNotFound(kid)
	}
	return k, err
}

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
	Scopes      []Scope         `json:"scopes"`
	RateLimits  json.RawMessage `json:"rate_limits"`
	UsageLimits json.RawMessage `json:"usage_limits"`
	Defaults    *apiKeyDefaults `json:"defaults"`
	ExpiresAt   json.RawMessage `json:"expires_at"`
}

// apiKeyUpdate is the body of PUT /api-keys/{id}; absent fields are left
// as they are.
type apiKeyUpdate struct {
	Name        *string         `json:"name"`
	Description *string         `json:"description"`
	Scopes      *[]Scope        `json:"scopes"`
	RateLimits  json.RawMessage `json:"rate_limits"`
	UsageLimits json.RawMessage `json:"usage_limits"`
	Defaults    *apiKeyDefaults `json:"defaults"`
	ExpiresAt   json.RawMessage `json:"expires_at"`
}

// Bounds of what a tenant writes on an API key (and a workspace) besides
// its name, which checkLabel bounds.
const (
	maxDescriptionBytes = 4096
	maxConfigRefBytes   = 64
)

// checkDescription checks a description a tenant writes: at most 4096
// bytes of valid UTF-8 without NUL (newlines and tabs are fine in prose).
// param names the field in the 400.
func checkDescription(param, s string) error {
	switch {
	case len(s) > maxDescriptionBytes:
		return policyInvalid(param, param+" must be at most "+strconv.Itoa(maxDescriptionBytes)+" bytes")
	case !utf8.ValidString(s):
		return policyInvalid(param, param+" must be valid UTF-8")
	case strings.IndexByte(s, 0) >= 0:
		return policyInvalid(param, param+" must not contain NUL")
	}
	return nil
}

// check checks the defaults a tenant writes on a key: metadata within
// the bounds of x-gateway-metadata (it is copied into every log record of
// the key), and config_id the id of a saved config: 1 to 64 letters,
// digits, '-', '_' and '.', or empty for none.
func (d *apiKeyDefaults) check() error {
	if d == nil {
		return nil
	}
	if err := checkMetadata("defaults.metadata", d.Metadata); err != nil {
		return err
	}
	if len(d.ConfigID) > maxConfigRefBytes {
		return policyInvalid("defaults.config_id", "defaults.config_id must be at most "+strconv.Itoa(maxConfigRefBytes)+" bytes")
	}
	for i := 0; i < len(d.ConfigID); i++ {
		if c := d.ConfigID[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return policyInvalid("defaults.config_id", "defaults.config_id must be the id of a saved config: letters, digits, '-', '_' and '.'")
		}
	}
	return nil
}

// checkKeyText checks the name and description of a key's create or update
// body (nil for absent).
func checkKeyText(name, description *string) error {
	if name != nil {
		if *name == "" {
			return policyInvalid("name", "name must not be empty")
		}
		if err := checkLabel("name", *name); err != nil {
			return err
		}
	}
	if description != nil {
		return checkDescription("description", *description)
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
			return &Error{Status: http.StatusForbidden, Type: TypePermission, Code: CodePermissionDenied, Param: f.name,
				Message: "a key may not change its own " + f.name + "; another key holding the scopes may"}
		}
	}
	return nil
}

// checkScopes checks scopes a caller grants: known, and held by the caller.
func checkScopes(id Identity, scopes []Scope) error {
	if len(scopes) == 0 {
		return policyInvalid("scopes", "scopes must hold at least one scope")
	}
	for i, s := range scopes {
		p := "scopes[" + strconv.Itoa(i) + "]"
		if !ValidScope(s) {
			return policyInvalid(p, p+": unknown scope "+quoteShort(string(s)))
		}
		if !id.Can(s) {
			return &Error{Status: http.StatusForbidden, Type: TypePermission, Code: CodePermissionDenied, Param: p,
				Message: "a key may not grant the " + string(s) + " scope, which it lacks"}
		}
	}
	return nil
}

// limitsJSON checks rate_limits (an array) or usage_limits (an object):
// nil for absent or null.
func limitsJSON(name string, raw json.RawMessage, open byte) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] != open {
		kind := "an array"
		if open == '{' {
			kind = "an object"
		}
		return nil, policyInvalid(name, name+" must be "+kind+" or null")
	}
	return bytes.Clone(raw), nil
}

// expiresAt parses expires_at: zero for absent or null; a time in the
// past is refused.
func expiresAt(raw json.RawMessage, now time.Time) (time.Time, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return time.Time{}, nil
	}
	var t time.Time
	if err := json.Unmarshal(raw, &t); err != nil {
		return t, policyInvalid("expires_at", "expires_at must be an RFC 3339 date-time or null")
	}
	if !t.After(now) {
		return t, policyInvalid("expires_at", "expires_at must be in the future")
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
	Scopes        []Scope         `json:"scopes"`
	Defaults      *apiKeyDefaults `json:"defaults,omitempty"`
	ExpiresAt     time.Time       `json:"expires_at,omitzero"`
	Object        string          `json:"object"`
}

// maskedKey is what reads show in place of a key: a fixed mask and the
// last 4 hex digits of its digest, enough to tell keys apart.
func maskedKey(k *APIKey) string {
	return "gw-****" + hex.EncodeToString(k.Digest[sha256Tail:])
}

const sha256Tail = 30

func (k *APIKey) wire() apiKeyWire {
	scopes := k.effectiveScopes()
	o := apiKeyWire{ID: k.ID, Key: maskedKey(k), Name: k.Name, Description: k.Description,
		Type: string(k.keyType()) + "-" + string(k.keySubType()), WorkspaceID: k.WorkspaceID, UserID: k.UserID,
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
