package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// ErrNotFound is returned by stores for a record that does not exist.
var ErrNotFound = errors.New("gateway: not found")

// ErrConflict is returned by stores for a record whose id (or, for an API
// key, digest) is already taken, and for a conditional update whose record
// changed meanwhile. It is answered 409 with code conflict.
var ErrConflict = errors.New("gateway: conflict")

// KeyStore finds gateway API keys by the SHA-256 digest of the key.
// Implementations must be safe for concurrent use and return ErrNotFound
// (possibly wrapped) for an unknown digest.
type KeyStore interface {
	APIKey(ctx context.Context, digest [sha256.Size]byte) (*APIKey, error)
}

// VirtualKeyStore finds stored provider credentials by slug.
// Implementations must be safe for concurrent use and return ErrNotFound
// for an unknown slug.
type VirtualKeyStore interface {
	VirtualKey(ctx context.Context, slug string) (*VirtualKey, error)
}

// ConfigStore finds saved routing configs by id. Implementations must be
// safe for concurrent use and return ErrNotFound for an unknown id.
type ConfigStore interface {
	Config(ctx context.Context, id string) (*SavedConfig, error)
}

// PolicyStore holds rate-limits policies. Implementations must be safe for
// concurrent use; Policy and DeletePolicy return ErrNotFound for an unknown
// id. Policies returns every policy of a workspace and every policy of no
// workspace (an empty WorkspaceID: the operator's, which apply to all
// workspaces), archived ones included, ordered by creation time.
//
// Ids are UUIDs, which the gateway always passes in lower case (it lowers
// the ids of requests and of store files), so a store may compare them
// exactly.
//
// The control plane's PUT reads a policy, changes it and writes it back.
// With PutPolicy alone that is not atomic: a PUT racing a DELETE of the
// same policy may write it back after it was deleted, and of two racing
// PUTs the later write wins whole. A store that also implements
// PolicyCompareAndSwapper (as MemoryStore does) closes that window.
type PolicyStore interface {
	Policies(ctx context.Context, workspaceID string) ([]RateLimitsPolicy, error)
	Policy(ctx context.Context, id string) (*RateLimitsPolicy, error)
	PutPolicy(ctx context.Context, p *RateLimitsPolicy) error
	DeletePolicy(ctx context.Context, id string) error
}

// PolicyCompareAndSwapper is an optional capability of a PolicyStore, found
// by type assertion: replacing a policy only if it is still the one read.
// The control plane's PUT uses it when the store has it, so that a PUT
// never brings back a policy deleted meanwhile, nor undoes another PUT.
//
// CompareAndSwapPolicy replaces the stored policy old.ID with p (whose ID
// is the same) if the stored policy still equals old in every field, and
// reports whether it did. It returns ErrNotFound if no policy old.ID is
// stored. It must be atomic with respect to every other method of the
// store. A PUT gives up with 409 after 16 failed swaps.
//
// A store that embeds *MemoryStore and overrides PutPolicy (to write
// through to a database, say) must override CompareAndSwapPolicy too:
// the promoted method would otherwise take the PUT's write, and the
// store's own PutPolicy would never see it.
type PolicyCompareAndSwapper interface {
	CompareAndSwapPolicy(ctx context.Context, old, p *RateLimitsPolicy) (bool, error)
}

// WorkspaceStore keeps the workspaces of /admin/workspaces (Options.Workspaces).
// MemoryStore implements it.
//
// Implementations must be safe for concurrent use, and each method atomic
// with respect to the others. Workspace, UpdateWorkspace and
// DeleteWorkspace return ErrNotFound for an unknown id; CreateWorkspace
// returns ErrConflict when w.ID is taken. UpdateWorkspace replaces the
// stored workspace old.ID with w only if the stored one still has old's
// UpdatedAt, and returns ErrConflict otherwise: the control plane reads,
// changes and writes back, and this keeps two racing PUTs from losing
// each other's fields. Workspaces returns every workspace ordered by
// CreatedAt then ID. Workspaces returned are the caller's to change.
type WorkspaceStore interface {
	Workspace(ctx context.Context, id string) (*Workspace, error)
	Workspaces(ctx context.Context) ([]Workspace, error)
	CreateWorkspace(ctx context.Context, w *Workspace) error
	UpdateWorkspace(ctx context.Context, old, w *Workspace) error
	DeleteWorkspace(ctx context.Context, id string) error
}

// AuditStore keeps the audit log of the control plane (Options.Audit):
// one AuditRecord per control-plane write. MemoryStore implements it.
//
// Implementations must be safe for concurrent use. AddAuditRecord stores a
// copy of rec. AuditRecords returns the records q matches (see
// AuditQuery.Match), newest first, skipping q.Offset of them and returning
// at most q.Limit (every one when q.Limit is zero), and total, the number
// of every match.
type AuditStore interface {
	AddAuditRecord(ctx context.Context, rec *AuditRecord) error
	AuditRecords(ctx context.Context, q AuditQuery) (recs []AuditRecord, total int, err error)
}

// VirtualKey is a stored provider credential, addressed by its slug. Its
// APIKey (and the secrets of its HostSettings) only ever go to BaseURL, or to
// the provider's own host when BaseURL is empty.
//
// A slug is unique within a workspace; an empty WorkspaceID makes the key
// usable by every workspace. Name, Note, CreatedAt and UpdatedAt are kept
// by the control plane (their zero values change nothing on the data
// plane) and are not part of a StoreFile.
//
// AllowedRoutes, when not empty, narrows what the key may be used for:
// each entry is a method (or "*", any method) and a path prefix below the
// gateway prefix, e.g. "POST /chat/completions", "GET /models" or
// "* /files", matched on whole path segments. A request through the key
// (named in x-gateway-virtual-key or by a config target) to any other
// route is refused with 403 route_not_allowed before any upstream call.
// Empty, every route is allowed.
type VirtualKey struct {
	Slug          string   `json:"slug"`
	Provider      string   `json:"provider"`
	APIKey        string   `json:"api_key,omitempty"`
	BaseURL       string   `json:"base_url,omitempty"`
	WorkspaceID   string   `json:"workspace_id,omitempty"`
	AllowedRoutes []string `json:"allowed_routes,omitempty"`
	HostSettings

	Name      string    `json:"-"`
	Note      string    `json:"-"`
	CreatedAt time.Time `json:"-"`
	UpdatedAt time.Time `json:"-"`

	// Tenant reports that the key's hosts (BaseURL, and the host settings
	// that name a resource) were written by a tenant through the control
	// plane (POST or PUT /virtual-keys), which sets it: BaseURL is then
	// guarded like an x-gateway-custom-host (names resolved and every
	// address checked at dial) unless Options.CustomHostAllow lists it.
	// The zero value is the operator's key (a StoreFile entry, or one a
	// host's own Go code stores), whose BaseURL is trusted as written.
	Tenant bool `json:"-"`
}

// SavedConfig is a routing config stored under an id. An empty WorkspaceID
// makes it usable by every workspace. An id is unique within a workspace;
// configs made through the control plane have their slug as id.
//
// Name, Version, VersionID, CreatedAt and UpdatedAt are kept by the
// control plane (their zero values change nothing on the data plane) and
// are not part of a StoreFile. Version counts from 1 and grows by one with
// every update; a stored version (see ConfigAdmin) has the Version,
// VersionID, Name, Config and UpdatedAt it was written with.
type SavedConfig struct {
	ID          string          `json:"id"`
	WorkspaceID string          `json:"workspace_id,omitempty"`
	Config      json.RawMessage `json:"config"`

	Name      string    `json:"-"`
	Version   int       `json:"-"`
	VersionID string    `json:"-"`
	CreatedAt time.Time `json:"-"`
	UpdatedAt time.Time `json:"-"`

	// Tenant reports that the config's custom hosts were written by a
	// tenant through the control plane (POST or PUT /configs), which sets
	// it: each custom_host is then guarded like an x-gateway-custom-host
	// (names resolved and every address checked at dial) unless
	// Options.CustomHostAllow lists it. The zero value is the operator's
	// config (a StoreFile entry, or one a host's own Go code stores),
	// whose hosts are trusted as written.
	Tenant bool `json:"-"`
}

// MemoryStore is an in-memory KeyStore, APIKeyStore, VirtualKeyStore,
// VirtualKeyAdmin, ConfigStore, ConfigAdmin, PolicyStore, PolicyCompareAndSwapper, WorkspaceStore and
// AuditStore (which keeps the newest 10,000 records). Its zero value is empty and
// ready to use; it is safe for concurrent use. Policy ids are compared
// without regard to case.
type MemoryStore struct {
	mu       sync.RWMutex // guards the maps below
	keys     map[[sha256.Size]byte]*APIKey
	prevKeys map[[sha256.Size]byte]*APIKey        // by PreviousDigest, while rotated (see memstore_keys.go)
	vkeys    map[string]map[string]*VirtualKey    // by slug, then workspace id (see memstore_vks.go)
	configs  map[string]map[string]*configHistory // by id, then workspace id (see memstore_configs.go)
	policies map[string]*RateLimitsPolicy
	budgets  map[string]*UsageLimitsPolicy // usage-limits policies, by lower-case id (see memstore_usagelimits.go)

	workspaces map[string]*Workspace // see memstore_workspaces.go
	audit      []AuditRecord         // oldest first, at most memoryAuditMax (see memstore_audit.go)

	logMu sync.RWMutex  // guards logs, apart from the lookups of the request path
	logs  []*RequestLog // oldest added first, at most memoryLogsMax (see memstore_logs.go)
	// exports are the log exports, by id (see memstore_logexports.go); logMu guards them too.
	exports map[string]*memoryExport

	feedbackMu sync.RWMutex // guards feedback
	feedback   []*Feedback  // oldest added first, at most memoryFeedbackMax (see memstore_feedback.go)
}

var (
	_ KeyStore        = (*MemoryStore)(nil)
	_ VirtualKeyStore = (*MemoryStore)(nil)
	_ ConfigStore     = (*MemoryStore)(nil)
	_ PolicyStore     = (*MemoryStore)(nil)

	_ PolicyCompareAndSwapper = (*MemoryStore)(nil)
	_ APIKeyStore             = (*MemoryStore)(nil)
	_ VirtualKeyAdmin         = (*MemoryStore)(nil)
	_ ConfigAdmin             = (*MemoryStore)(nil)
	_ WorkspaceStore          = (*MemoryStore)(nil)
	_ AuditStore              = (*MemoryStore)(nil)
	_ LogStore                = (*MemoryStore)(nil)
)

// AddAPIKey stores k under k.Digest.
func (s *MemoryStore) AddAPIKey(k APIKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = make(map[[sha256.Size]byte]*APIKey)
	}
	s.keys[k.Digest] = &k
}

// AddVirtualKey stores vk under its workspace and slug, replacing the
// virtual key stored there.
func (s *MemoryStore) AddVirtualKey(vk VirtualKey) {
	vk.AllowedRoutes = slices.Clone(vk.AllowedRoutes)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.putVirtualKeyLocked(&vk)
}

// AddConfig stores c under its workspace and id, replacing the config
// stored there and its versions: c becomes the only version (Version 1
// when c.Version is 0).
func (s *MemoryStore) AddConfig(c SavedConfig) {
	if c.Version == 0 {
		c.Version = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.putConfigLocked(&configHistory{versions: []*SavedConfig{&c}})
}

// APIKey implements KeyStore. A rotated key is also found by its
// previous digest until its PreviousValidUntil. The key returned is
// shared and must not be modified.
func (s *MemoryStore) APIKey(_ context.Context, digest [sha256.Size]byte) (*APIKey, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if k, ok := s.keys[digest]; ok {
		return k, nil
	}
	if k, ok := s.prevKeys[digest]; ok && time.Now().Before(k.PreviousValidUntil) {
		return k, nil
	}
	return nil, ErrNotFound
}

// Policies implements PolicyStore: the policies of workspaceID and those
// of no workspace.
func (s *MemoryStore) Policies(_ context.Context, workspaceID string) ([]RateLimitsPolicy, error) {
	s.mu.RLock()
	var out []RateLimitsPolicy
	for _, p := range s.policies {
		if p.WorkspaceID == workspaceID || p.WorkspaceID == "" {
			out = append(out, *p)
		}
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreatedAt != out[j].CreatedAt {
			return out[i].CreatedAt < out[j].CreatedAt
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// AllPolicies implements AllPoliciesLister: every policy, ordered by
// creation time.
func (s *MemoryStore) AllPolicies(_ context.Context) ([]RateLimitsPolicy, error) {
	s.mu.RLock()
	out := make([]RateLimitsPolicy, 0, len(s.policies))
	for _, p := range s.policies {
		out = append(out, *p)
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreatedAt != out[j].CreatedAt {
			return out[i].CreatedAt < out[j].CreatedAt
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Policy implements PolicyStore.
func (s *MemoryStore) Policy(_ context.Context, id string) (*RateLimitsPolicy, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if p, ok := s.policies[strings.ToLower(id)]; ok {
		c := *p
		return &c, nil
	}
	return nil, ErrNotFound
}

// PutPolicy implements PolicyStore: it creates or replaces a copy of p,
// its id in lower case.
func (s *MemoryStore) PutPolicy(_ context.Context, p *RateLimitsPolicy) error {
	c := clonePolicy(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.policies == nil {
		s.policies = make(map[string]*RateLimitsPolicy)
	}
	s.policies[c.ID] = c
	return nil
}

// CompareAndSwapPolicy implements PolicyCompareAndSwapper.
func (s *MemoryStore) CompareAndSwapPolicy(_ context.Context, old, p *RateLimitsPolicy) (bool, error) {
	id := strings.ToLower(old.ID)
	if strings.ToLower(p.ID) != id {
		return false, errors.New("gateway: CompareAndSwapPolicy of a policy with another id")
	}
	c := clonePolicy(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.policies[id]
	if !ok {
		return false, ErrNotFound
	}
	if !policyEqual(cur, old) {
		return false, nil
	}
	s.policies[id] = c
	return true, nil
}

// DeletePolicy implements PolicyStore.
func (s *MemoryStore) DeletePolicy(_ context.Context, id string) error {
	id = strings.ToLower(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.policies[id]; !ok {
		return ErrNotFound
	}
	delete(s.policies, id)
	return nil
}

// clonePolicy returns a copy of p sharing no memory with it, its id in
// lower case.
func clonePolicy(p *RateLimitsPolicy) *RateLimitsPolicy {
	c := *p
	c.ID = strings.ToLower(c.ID)
	c.Conditions = slices.Clone(c.Conditions)
	c.GroupBy = slices.Clone(c.GroupBy)
	return &c
}

// policyEqual reports whether a and b are the same in every field but the
// case of their ids.
func policyEqual(a, b *RateLimitsPolicy) bool {
	return strings.EqualFold(a.ID, b.ID) && a.Name == b.Name &&
		slices.Equal(a.Conditions, b.Conditions) && slices.Equal(a.GroupBy, b.GroupBy) &&
		a.Type == b.Type && a.Unit == b.Unit && a.Value == b.Value && a.Status == b.Status &&
		a.WorkspaceID == b.WorkspaceID && a.OrganisationID == b.OrganisationID &&
		a.CreatedAt == b.CreatedAt && a.LastUpdatedAt == b.LastUpdatedAt
}

// StoreFile is the JSON document a MemoryStore loads: the config file of
// examples/server.
type StoreFile struct {
	APIKeys            []APIKeyEntry      `json:"api_keys"`
	VirtualKeys        []VirtualKey       `json:"virtual_keys"`
	Configs            []SavedConfig      `json:"configs"`
	RateLimitsPolicies []RateLimitsPolicy `json:"rate_limits_policies"`
	CustomHosts        struct {
		Allow []string `json:"allow"`
	} `json:"custom_hosts"`
}

// APIKeyEntry is a gateway API key as written in a StoreFile: the key
// itself, or the lower-case hex of its SHA-256 digest. An entry without
// WorkspaceID is an organisation key (DESIGN §14): with the admin role it
// holds every scope over every workspace, so it can create workspaces
// (POST /admin/workspaces) and read the organisation-wide audit log; an
// entry with WorkspaceID is a key of that workspace.
type APIKeyEntry struct {
	ID            string            `json:"id"`
	Key           string            `json:"key,omitempty"`
	KeySHA256     string            `json:"key_sha256,omitempty"`
	WorkspaceID   string            `json:"workspace_id"`
	Role          Role              `json:"role,omitempty"`
	Disabled      bool              `json:"disabled,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	DefaultConfig string            `json:"default_config,omitempty"`
	Scopes        []Scope           `json:"scopes,omitempty"`
	ExpiresAt     time.Time         `json:"expires_at,omitzero"`
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// DecodeStoreFile reads a StoreFile from r. Every ${VAR} in the document is
// replaced by the environment variable VAR (JSON-escaped; empty when unset)
// before decoding. Unknown fields are an error naming the field.
//
// A rate_limits_policies entry without workspace_id belongs to the
// operator: it applies to every workspace (its conditions, e.g. on
// workspace_id, narrow it), and no workspace admin can list, change or
// delete it through the control plane. Policy ids are UUIDs, kept in lower
// case.
func DecodeStoreFile(r io.Reader) (*StoreFile, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	data = envRef.ReplaceAllFunc(data, func(m []byte) []byte {
		v := os.Getenv(string(m[2 : len(m)-1]))
		q, _ := json.Marshal(v)
		return q[1 : len(q)-1]
	})
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f StoreFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("gateway: store file: %w", err)
	}
	if dec.More() {
		return nil, errors.New("gateway: store file: trailing data after the JSON object")
	}
	return &f, nil
}

// Load adds every record of f to s, after checking them all: an error
// leaves s unchanged.
func (s *MemoryStore) Load(f *StoreFile) error {
	keys := make([]APIKey, 0, len(f.APIKeys))
	// Where each id, key, slug and policy id was first seen, for the
	// errors naming a repeat.
	keyIDs := make(map[string]int, len(f.APIKeys))
	digests := make(map[[sha256.Size]byte]int, len(f.APIKeys))
	slugs := make(map[string]int, len(f.VirtualKeys))
	configIDs := make(map[string]int, len(f.Configs))
	policyIDs := make(map[string]int, len(f.RateLimitsPolicies))
	for i, e := range f.APIKeys {
		k := APIKey{ID: e.ID, WorkspaceID: e.WorkspaceID, Role: e.Role, Disabled: e.Disabled, Metadata: e.Metadata,
			DefaultConfig: e.DefaultConfig, Scopes: e.Scopes, ExpiresAt: e.ExpiresAt}
		if e.WorkspaceID == "" {
			k.Type = KeyOrganisation // the operator's key over every workspace
		}
		for j, s := range e.Scopes {
			if !ValidScope(s) {
				return fmt.Errorf("gateway: store file: api_keys[%d].scopes[%d]: unknown scope %q", i, j, s)
			}
		}
		switch {
		case e.ID == "":
			return fmt.Errorf("gateway: store file: api_keys[%d].id is required", i)
		case (e.Key == "") == (e.KeySHA256 == ""):
			return fmt.Errorf("gateway: store file: api_keys[%d]: exactly one of key and key_sha256 is required", i)
		case e.Key != "":
			k.Digest = HashAPIKey(e.Key)
		default:
			d, err := ParseKeyDigest(e.KeySHA256)
			if err != nil {
				return fmt.Errorf("gateway: store file: api_keys[%d].key_sha256: %w", i, unprefixed{err})
			}
			k.Digest = d
		}
		switch k.Role {
		case "":
			k.Role = RoleMember
		case RoleMember, RoleAdmin:
		default:
			return fmt.Errorf("gateway: store file: api_keys[%d].role must be admin or member", i)
		}
		if j, ok := keyIDs[k.ID]; ok {
			return fmt.Errorf("gateway: store file: api_keys[%d].id repeats api_keys[%d].id", i, j)
		}
		if j, ok := digests[k.Digest]; ok {
			return fmt.Errorf("gateway: store file: api_keys[%d] has the same key as api_keys[%d]", i, j)
		}
		keyIDs[k.ID], digests[k.Digest] = i, i
		keys = append(keys, k)
	}
	for i, vk := range f.VirtualKeys {
		if vk.Slug == "" || vk.Provider == "" {
			return fmt.Errorf("gateway: store file: virtual_keys[%d]: slug and provider are required", i)
		}
		if j, ok := slugs[vk.Slug]; ok {
			return fmt.Errorf("gateway: store file: virtual_keys[%d].slug repeats virtual_keys[%d].slug", i, j)
		}
		slugs[vk.Slug] = i
		if vk.BaseURL != "" {
			if u, err := url.Parse(vk.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("gateway: store file: virtual_keys[%d].base_url must be an absolute http or https URL", i)
			}
		}
		if len(vk.AllowedRoutes) > maxAllowedRoutes {
			return fmt.Errorf("gateway: store file: virtual_keys[%d].allowed_routes may hold at most %d entries", i, maxAllowedRoutes)
		}
		for j, r := range vk.AllowedRoutes {
			if msg := allowedRouteProblem(r); msg != "" {
				return fmt.Errorf("gateway: store file: virtual_keys[%d].allowed_routes[%d] %s", i, j, msg)
			}
		}
	}
	for i, c := range f.Configs {
		if c.ID == "" {
			return fmt.Errorf("gateway: store file: configs[%d].id is required", i)
		}
		if j, ok := configIDs[c.ID]; ok {
			return fmt.Errorf("gateway: store file: configs[%d].id repeats configs[%d].id", i, j)
		}
		configIDs[c.ID] = i
		if _, err := ParseConfig(c.Config); err != nil {
			return fmt.Errorf("gateway: store file: configs[%d].config: %w", i, unprefixed{err})
		}
	}
	policies := make([]RateLimitsPolicy, 0, len(f.RateLimitsPolicies))
	for i, p := range f.RateLimitsPolicies {
		if p.Status == "" {
			p.Status = PolicyActive
		}
		if err := p.Validate(); err != nil {
			return fmt.Errorf("gateway: store file: rate_limits_policies[%d]: %w", i, unprefixed{err})
		}
		p.ID = strings.ToLower(p.ID)
		if j, ok := policyIDs[p.ID]; ok {
			return fmt.Errorf("gateway: store file: rate_limits_policies[%d].id repeats rate_limits_policies[%d].id", i, j)
		}
		policyIDs[p.ID] = i
		policies = append(policies, p)
	}
	for _, k := range keys {
		s.AddAPIKey(k)
	}
	for _, vk := range f.VirtualKeys {
		s.AddVirtualKey(vk)
	}
	for _, c := range f.Configs {
		s.AddConfig(c)
	}
	for i := range policies {
		s.PutPolicy(context.Background(), &policies[i])
	}
	return nil
}

// unprefixed is err without its own "gateway: " prefix, for messages that
// wrap it after one of their own.
type unprefixed struct{ err error }

func (u unprefixed) Error() string { return strings.TrimPrefix(u.err.Error(), "gateway: ") }
func (u unprefixed) Unwrap() error { return u.err }
