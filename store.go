package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
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

	// Integration names the organisation's integration whose credential
	// the key uses (a provider of the catalog package). The store fills in
	// the key's Provider, APIKey, BaseURL, HostSettings, Models and
	// Prices from it when the integration is granted to the key's
	// workspace, and finds no key otherwise. Empty: a key of its own.
	Integration string `json:"-"`

	// Models, when not nil, are the only models a request naming the key
	// as "@{slug}/{model}" may ask for; another is refused with 400
	// model_not_allowed. Nil, every model is allowed.
	Models []string `json:"-"`

	// Prices prices the models of the key (custom models, keyed by the
	// model alone) before Options.Prices does, in the request log's cost.
	Prices PriceTable `json:"-"`

	// NamedOnly reports that the key may be used only by a request that
	// names it (x-gateway-virtual-key, or "@{slug}/{model}"), never by a
	// config's target: the limits conditioned on it (virtual_key) then
	// count every request that uses it.
	NamedOnly bool `json:"-"`
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
