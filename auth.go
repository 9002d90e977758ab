package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"time"
)

// Role is a preset of what a gateway API key may do, for a key that names
// no Scopes (see RoleScopes).
type Role string

// Roles of a gateway API key: a member reaches providers only
// (completions.write); an admin also holds every control-plane scope
// within its workspace.
const (
	RoleMember Role = "member"
	RoleAdmin  Role = "admin"
)

// APIKey is a stored gateway API key. The key itself is never stored: only
// its SHA-256 digest.
type APIKey struct {
	ID            string            `json:"id"`
	Digest        [sha256.Size]byte `json:"-"`
	WorkspaceID   string            `json:"workspace_id"`
	Role          Role              `json:"role"`
	Disabled      bool              `json:"disabled,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	DefaultConfig string            `json:"default_config,omitempty"`

	// Scopes are what the key may do; none means its Role's preset
	// (RoleScopes).
	Scopes []Scope `json:"scopes,omitempty"`

	// ExpiresAt, when not zero, is when the key stops working: from then
	// on it is refused like an unknown key.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// HashAPIKey returns the SHA-256 digest of a gateway API key, the form in
// which keys are stored and looked up.
func HashAPIKey(key string) [sha256.Size]byte { return sha256.Sum256([]byte(key)) }

// ParseKeyDigest parses the lower-case hex form of a key digest, as written
// in the key_sha256 field of a store file.
func ParseKeyDigest(s string) ([sha256.Size]byte, error) {
	var d [sha256.Size]byte
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != sha256.Size {
		return d, errors.New("gateway: key digest must be 64 hex digits")
	}
	copy(d[:], b)
	return d, nil
}

// Identity is who made a request: the gateway API key that authenticated it.
type Identity struct {
	KeyID         string
	WorkspaceID   string
	Role          Role
	Scopes        []Scope           // what the key may do (see Identity.Can); shared, not to be modified
	Metadata      map[string]string // default metadata of the key; request metadata wins
	DefaultConfig string            // config id used when a request names no provider
}

// IdentityFrom returns the identity the Authenticate stage stored in ctx.
func IdentityFrom(ctx context.Context) (Identity, bool) {
	st := stateFrom(ctx)
	if st == nil || st.identity.KeyID == "" {
		return Identity{}, false
	}
	return st.identity, true
}

// Authenticate returns the middleware that requires a valid
// x-gateway-api-key on every request and stores the caller's Identity in the
// request context. A missing key is a 401 missing_api_key; an unknown or
// disabled key a 401 invalid_api_key. The key is hashed with SHA-256 and the
// stored digest compared in constant time; the key itself is removed from
// the request so that no later stage can forward or log it.
//
// A nil keys refuses every request.
func Authenticate(keys KeyStore) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r, st := withState(w, r)
			if err := authenticate(r, keys, st); err != nil {
				WriteError(w, r, err)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func authenticate(r *http.Request, keys KeyStore, st *requestState) error {
	vals := headerValues(r.Header, HeaderAPIKey)
	delete(r.Header, canonicalHeaders[HeaderAPIKey])
	if len(vals) == 0 || vals[0] == "" {
		return &Error{Status: http.StatusUnauthorized, Type: TypeInvalidRequest, Code: CodeMissingAPIKey,
			Message: "missing gateway API key: send it in the " + HeaderAPIKey + " header"}
	}
	if len(vals) > 1 || keys == nil {
		return invalidKey()
	}
	d := HashAPIKey(vals[0])
	k, err := keys.APIKey(r.Context(), d)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return invalidKey()
		}
		return err
	}
	if k == nil || subtle.ConstantTimeCompare(k.Digest[:], d[:]) != 1 || k.Disabled ||
		!k.ExpiresAt.IsZero() && !time.Now().Before(k.ExpiresAt) {
		return invalidKey()
	}
	role := k.Role
	if role == "" {
		role = RoleMember
	}
	scopes := k.Scopes
	if len(scopes) == 0 {
		scopes = RoleScopes(role)
	}
	st.identity = Identity{KeyID: k.ID, WorkspaceID: k.WorkspaceID, Role: role, Scopes: scopes, Metadata: k.Metadata, DefaultConfig: k.DefaultConfig}
	st.log.KeyID = k.ID
	st.log.WorkspaceID = k.WorkspaceID
	return nil
}

// invalidKey is the 401 of an unknown, disabled or expired key. It is made
// only when needed, so that a valid key allocates nothing for it.
func invalidKey() error {
	return &Error{Status: http.StatusUnauthorized, Type: TypeInvalidRequest, Code: CodeInvalidAPIKey,
		Message: "invalid gateway API key"}
}
