package gateway

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"slices"
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

// PolicyStore gives the data plane the rate-limits policies it enforces
// (Options.Policies). Implementations must be safe for concurrent use.
// Policies returns every policy of a workspace and every policy of no
// workspace (an empty WorkspaceID: the operator's, which apply to all
// workspaces), archived ones included, ordered by creation time. The
// admin package writes them (admin.PolicyStore).
type PolicyStore interface {
	Policies(ctx context.Context, workspaceID string) ([]RateLimitsPolicy, error)
}

// WorkspaceLookup reads the registered workspaces (Options.Workspaces),
// whose usage_limits are budgets of the whole workspace. Implementations
// must be safe for concurrent use. Workspace returns ErrNotFound for an
// unknown id; Workspaces returns every workspace ordered by CreatedAt
// then ID. Workspaces returned are the caller's to change. The admin
// package writes them (admin.WorkspaceStore).
type WorkspaceLookup interface {
	Workspace(ctx context.Context, id string) (*Workspace, error)
	Workspaces(ctx context.Context) ([]Workspace, error)
}

// virtualKeyIn and configIn are the optional capabilities of
// Options.VirtualKeys and Options.Configs that keep records per
// workspace (see admin.VirtualKeyStore and admin.ConfigStore): the data
// plane finds the slug or id a caller names in the caller's workspace
// first, then through VirtualKey or Config, which should prefer the
// record of no workspace. A record of another workspace found that way
// answers as an unknown one, so that no caller learns it exists.
type (
	virtualKeyIn interface {
		VirtualKeyIn(ctx context.Context, workspaceID, slug string) (*VirtualKey, error)
	}
	configIn interface {
		ConfigIn(ctx context.Context, workspaceID, id string) (*SavedConfig, error)
	}
)

// findVirtualKey is the data plane's lookup of slug for a caller of
// workspace ws.
func findVirtualKey(ctx context.Context, st VirtualKeyStore, ws, slug string) (*VirtualKey, error) {
	if a, ok := st.(virtualKeyIn); ok && ws != "" {
		vk, err := a.VirtualKeyIn(ctx, ws, slug)
		if !errors.Is(err, ErrNotFound) {
			return vk, err
		}
	}
	return st.VirtualKey(ctx, slug)
}

// findConfig is the data plane's lookup of id for a caller of workspace
// ws.
func findConfig(ctx context.Context, st ConfigStore, ws, id string) (*SavedConfig, error) {
	if a, ok := st.(configIn); ok && ws != "" {
		c, err := a.ConfigIn(ctx, ws, id)
		if !errors.Is(err, ErrNotFound) {
			return c, err
		}
	}
	return st.Config(ctx, id)
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
// plane) and are not part of an admin.File.
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
	// The zero value is the operator's key (an admin.File entry, or one a
	// host's own Go code stores), whose BaseURL is trusted as written.
	Tenant bool `json:"-"`
}

// SavedConfig is a routing config stored under an id. An empty WorkspaceID
// makes it usable by every workspace. An id is unique within a workspace;
// configs made through the control plane have their slug as id.
//
// Name, Version, VersionID, CreatedAt and UpdatedAt are kept by the
// control plane (their zero values change nothing on the data plane) and
// are not part of an admin.File. Version counts from 1 and grows by one with
// every update; a stored version (see admin.ConfigStore) has the Version,
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
	// config (an admin.File entry, or one a host's own Go code stores),
	// whose hosts are trusted as written.
	Tenant bool `json:"-"`
}

// MemoryStore is an in-memory KeyStore, VirtualKeyStore, ConfigStore,
// PolicyStore, WorkspaceLookup and AuditStore (which keeps the newest
// 10,000 records), and implements the admin package's stores of them by
// their write methods. Its zero value is empty and
// ready to use; it is safe for concurrent use. Policy ids are compared
// without regard to case.
type MemoryStore struct {
	mu       sync.RWMutex // guards the maps below
	keys     map[[sha256.Size]byte]*APIKey
	prevKeys map[[sha256.Size]byte]*APIKey        // by PreviousDigest, while rotated (see memstore_keys.go)
	vkeys    map[string]map[string]*VirtualKey    // by slug, then workspace id (see memstore_vks.go)
	configs  map[string]map[string]*configHistory // by id, then workspace id (see memstore_configs.go)
	policies map[string]*RateLimitsPolicy

	workspaces map[string]*Workspace // see memstore_workspaces.go
	audit      []AuditRecord         // oldest first, at most memoryAuditMax (see memstore_audit.go)
}

var (
	_ KeyStore        = (*MemoryStore)(nil)
	_ VirtualKeyStore = (*MemoryStore)(nil)
	_ ConfigStore     = (*MemoryStore)(nil)
	_ PolicyStore     = (*MemoryStore)(nil)

	_ virtualKeyIn    = (*MemoryStore)(nil)
	_ configIn        = (*MemoryStore)(nil)
	_ WorkspaceLookup = (*MemoryStore)(nil)
	_ AuditStore      = (*MemoryStore)(nil)
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
	slices.SortFunc(out, policyOrder)
	return out, nil
}

// AllPolicies implements allPoliciesLister: every policy, ordered by
// creation time.
func (s *MemoryStore) AllPolicies(_ context.Context) ([]RateLimitsPolicy, error) {
	s.mu.RLock()
	out := make([]RateLimitsPolicy, 0, len(s.policies))
	for _, p := range s.policies {
		out = append(out, *p)
	}
	s.mu.RUnlock()
	slices.SortFunc(out, policyOrder)
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

// CompareAndSwapPolicy implements admin.PolicyCompareAndSwapper.
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

// policyOrder orders policies as the stores list them: by creation time
// (RFC 3339 in UTC, which sorts as text), then id.
func policyOrder(a, b RateLimitsPolicy) int {
	return cmp.Or(strings.Compare(a.CreatedAt, b.CreatedAt), strings.Compare(a.ID, b.ID))
}
