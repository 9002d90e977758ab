package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
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

// KeyType is whether a gateway API key belongs to the organisation or to
// one workspace.
type KeyType string

// Key types. The zero KeyType means KeyWorkspace.
const (
	// KeyOrganisation is a key of no workspace that may act on every
	// workspace (naming it with workspace_id on the control plane).
	KeyOrganisation KeyType = "organisation"
	// KeyWorkspace is a key that acts only within its WorkspaceID.
	KeyWorkspace KeyType = "workspace"
)

// KeySubType is whether a gateway API key is a service's or a user's.
type KeySubType string

// Key sub-types. The zero KeySubType means KeyService.
const (
	KeyService KeySubType = "service"
	KeyUser    KeySubType = "user" // the key carries a UserID
)

// APIKey is a stored gateway API key. The key itself is never stored: only
// its SHA-256 digest. The zero values of the fields added for the API keys
// control plane (Type, SubType, names, times, limits, rotation) describe a
// workspace service key, which is what every key was before it.
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

	// Type and SubType classify the key; zero means a workspace service
	// key. An organisation key has no WorkspaceID. UserID names the user
	// of a user key.
	Type    KeyType    `json:"type,omitempty"`
	SubType KeySubType `json:"sub_type,omitempty"`
	UserID  string     `json:"user_id,omitempty"`

	// Name and Description are free text for people.
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`

	// CreatedAt and UpdatedAt are set by the control plane; zero for keys
	// added otherwise.
	CreatedAt time.Time `json:"created_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`

	// RateLimits is the JSON array of rate limits given at creation or
	// update, stored and read back exactly as given, or nil for none. Each
	// entry is an object of type (requests or tokens), unit (rpm, rph or
	// rpd) and value, allowed the values of a RateLimitsPolicy's fields,
	// at most one entry per type and unit; the control plane refuses
	// anything else with a 400 naming the field (rate_limits[0].unit).
	//
	// Each entry is enforced on the data plane as a rate-limits policy
	// whose condition is this key and whose group is the key itself:
	// counted by Options.Limiter (whether or not Options.Policies is set),
	// checked before the stored policies, refused with the same 429 and
	// headers, charged tokens and refunded alike. Its bucket is named by
	// the key's workspace and ID and the entry's type and unit, so that
	// replicas sharing a Limiter share it, and changing the value or order
	// of the entries keeps what it holds. A record whose RateLimits change
	// is in force from its first request (the parsed entries are cached,
	// by ID, while the JSON stays the same); a key without RateLimits
	// costs nothing. RateLimits that are not valid (written past the
	// control plane) refuse the key's data-plane requests with a 500: the
	// gateway fails closed. Control-plane requests are not charged.
	RateLimits json.RawMessage `json:"rate_limits,omitempty"`

	// UsageLimits is the JSON object given at creation or update, in the
	// reference's shape (type, credit_limit, alert_threshold,
	// periodic_reset or periodic_reset_days), stored and read back as it
	// is, and enforced as a budget of the key alone (see budget_keys.go):
	// once the key's usage reaches credit_limit its data-plane requests
	// get 412 budget_exhausted.
	UsageLimits json.RawMessage `json:"usage_limits,omitempty"`

	// PreviousDigest is the digest the key had before its last rotation;
	// the previous key keeps working until PreviousValidUntil (zero: not
	// at all).
	PreviousDigest     [sha256.Size]byte `json:"-"`
	PreviousValidUntil time.Time         `json:"-"`
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
	Type          KeyType // the key's type; empty means KeyWorkspace
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
// request context. A missing key is a 401 missing_api_key; an unknown,
// disabled or expired key a 401 invalid_api_key, and so is a rotated key's
// previous value once its PreviousValidUntil has passed. The key is hashed
// with SHA-256 and the stored digest compared in constant time; the key
// itself is removed from the request so that no later stage can forward or
// log it.
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
	now := time.Now
	if st.gw != nil && st.gw.now != nil {
		now = st.gw.now
	}
	d := HashAPIKey(vals[0])
	k, err := keys.APIKey(r.Context(), d)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return invalidKey()
		}
		return err
	}
	if k == nil || k.Disabled {
		return invalidKey()
	}
	t := now()
	current := subtle.ConstantTimeCompare(k.Digest[:], d[:]) == 1
	previous := subtle.ConstantTimeCompare(k.PreviousDigest[:], d[:]) == 1 && t.Before(k.PreviousValidUntil)
	if !current && !previous || !k.ExpiresAt.IsZero() && !t.Before(k.ExpiresAt) {
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
	st.identity = Identity{KeyID: k.ID, WorkspaceID: k.WorkspaceID, Type: k.Type, Role: role, Scopes: scopes, Metadata: k.Metadata, DefaultConfig: k.DefaultConfig}
	st.key = k
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

// AuthFailures counts the requests a Gateway refused because they failed
// authentication, by what the caller was told. Such requests are not
// request logs (neither the LogSink's nor those of LogSinks, so neither the
// analytics'): an anonymous flood must not fill the store nor crowd real
// records out of the log queues (docs/architecture.md, Trust). These counts are how they
// are seen; the prometheus sub-module exports them.
type AuthFailures struct {
	// Missing counts the 401 missing_api_key: no gateway API key sent.
	Missing int64
	// Invalid counts the 401 invalid_api_key: an unknown, disabled or
	// expired key, a rotated key's previous value past its grace, or
	// more than one key.
	Invalid int64
	// Error counts the requests whose key could not be checked because
	// the key store failed (answered 500).
	Error int64
}

// AuthFailures returns how many requests g refused for failing
// authentication since it was made.
func (g *Gateway) AuthFailures() AuthFailures {
	return AuthFailures{Missing: g.authFailures.missing.Load(), Invalid: g.authFailures.invalid.Load(),
		Error: g.authFailures.failed.Load()}
}

// authFailureCounts are a Gateway's AuthFailures as they are counted.
type authFailureCounts struct {
	missing, invalid, failed atomic.Int64
}

// count counts a refusal of the authentication stage with err.
func (c *authFailureCounts) count(err error) {
	var code string
	if ge := (*Error)(nil); errors.As(err, &ge) {
		code = ge.Code
	}
	switch code {
	case CodeMissingAPIKey:
		c.missing.Add(1)
	case CodeInvalidAPIKey:
		c.invalid.Add(1)
	default:
		c.failed.Add(1)
	}
}
