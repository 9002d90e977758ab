package admin

import (
	"context"

	"github.com/modelgateway/gateway"
)

// KeyStore keeps gateway API keys, as the /api-keys routes need: the
// write side of the gateway's KeyStore, which authenticates them. A
// store that implements both (memstore.Store, sqlstore.Store) is passed
// as gateway.Options.Keys and as Options.Keys.
//
// Implementations must be safe for concurrent use, and each method
// atomic with respect to the others. The gateway's KeyStore.APIKey must
// also find a key by its PreviousDigest until its PreviousValidUntil.
// APIKeyByID, UpdateAPIKey and DeleteAPIKey return gateway.ErrNotFound
// for an unknown id. Keys returned by APIKeyByID and APIKeys are the
// caller's to change.
//
// APIKeys returns the keys whose WorkspaceID is workspaceID, or every key
// (organisation keys too) when workspaceID is empty, ordered by CreatedAt
// then ID. CreateAPIKey returns gateway.ErrConflict when k.ID or k.Digest
// is taken. UpdateAPIKey replaces the stored key old.ID with k only if
// the stored key still has old's Digest and UpdatedAt, and returns
// gateway.ErrConflict otherwise (or when k.Digest is another key's): the
// routes read, change and write back, and this keeps a racing PUT from
// undoing a rotation.
type KeyStore interface {
	APIKeyByID(ctx context.Context, id string) (*gateway.APIKey, error)
	APIKeys(ctx context.Context, workspaceID string) ([]gateway.APIKey, error)
	CreateAPIKey(ctx context.Context, k *gateway.APIKey) error
	UpdateAPIKey(ctx context.Context, old, k *gateway.APIKey) error
	DeleteAPIKey(ctx context.Context, id string) error
}

// VirtualKeyStore keeps virtual keys per workspace, as the /virtual-keys
// routes need: the write side of the gateway's VirtualKeyStore.
//
// A virtual key is stored under its WorkspaceID and Slug: a slug is
// unique within a workspace, and the same slug may live in several
// workspaces (and once with no workspace). The data plane finds the slug
// a caller names in the caller's workspace with VirtualKeyIn first, then
// with the gateway's VirtualKeyStore.VirtualKey, which should prefer the
// key of no workspace.
//
// Implementations must be safe for concurrent use, and each method
// atomic with respect to the others. VirtualKeyIn, UpdateVirtualKey and
// DeleteVirtualKey return gateway.ErrNotFound for an unknown workspace
// and slug. A key returned by VirtualKeyIn may be shared and must not be
// modified; VirtualKeys returns copies. VirtualKeys returns the keys
// whose WorkspaceID is workspaceID, or every key when workspaceID is
// empty, ordered by CreatedAt, then WorkspaceID and Slug.
// CreateVirtualKey returns gateway.ErrConflict when the workspace already
// holds the slug. UpdateVirtualKey replaces the stored key of old's
// workspace and slug with vk (of the same workspace and slug) only if the
// stored key still has old's UpdatedAt, and returns gateway.ErrConflict
// otherwise.
type VirtualKeyStore interface {
	VirtualKeyIn(ctx context.Context, workspaceID, slug string) (*gateway.VirtualKey, error)
	VirtualKeys(ctx context.Context, workspaceID string) ([]gateway.VirtualKey, error)
	CreateVirtualKey(ctx context.Context, vk *gateway.VirtualKey) error
	UpdateVirtualKey(ctx context.Context, old, vk *gateway.VirtualKey) error
	DeleteVirtualKey(ctx context.Context, workspaceID, slug string) error
}

// ConfigStore keeps saved configs per workspace, with their versions, as
// the /configs routes need: the write side of the gateway's ConfigStore.
//
// A config is stored under its WorkspaceID and ID (configs made through
// the routes have their slug as ID): an id is unique within a workspace,
// and the same id may live in several workspaces (and once with no
// workspace). The data plane finds the id an x-gateway-config header
// names in the caller's workspace with ConfigIn first, then with the
// gateway's ConfigStore.Config, which should prefer the config of no
// workspace.
//
// Implementations must be safe for concurrent use, and each method
// atomic with respect to the others. ConfigIn, ConfigVersions,
// UpdateConfig and DeleteConfig return gateway.ErrNotFound for an unknown
// workspace and id. A config returned by ConfigIn is the current version;
// it may be shared and must not be modified. Configs and ConfigVersions
// return copies. Configs returns the current version of the configs whose
// WorkspaceID is workspaceID, or of every config when workspaceID is
// empty, ordered by CreatedAt, then WorkspaceID and ID. ConfigVersions
// returns every version of a config, newest first. CreateConfig stores c
// as the first version and returns gateway.ErrConflict when the workspace
// already holds c.ID. UpdateConfig adds c (of the same workspace and id,
// whose Version is one more) as the newest version only if the current
// one still has old's Version and UpdatedAt, and returns
// gateway.ErrConflict otherwise. DeleteConfig removes a config with every
// version.
type ConfigStore interface {
	ConfigIn(ctx context.Context, workspaceID, id string) (*gateway.SavedConfig, error)
	Configs(ctx context.Context, workspaceID string) ([]gateway.SavedConfig, error)
	ConfigVersions(ctx context.Context, workspaceID, id string) ([]gateway.SavedConfig, error)
	CreateConfig(ctx context.Context, c *gateway.SavedConfig) error
	UpdateConfig(ctx context.Context, old, c *gateway.SavedConfig) error
	DeleteConfig(ctx context.Context, workspaceID, id string) error
}

// WorkspaceStore keeps the workspaces of /admin/workspaces. Its
// Workspace and Workspaces are what budget.Workspaces reads, so that one
// store serves both.
//
// Implementations must be safe for concurrent use, and each method
// atomic with respect to the others. Workspace, UpdateWorkspace and
// DeleteWorkspace return gateway.ErrNotFound for an unknown id;
// CreateWorkspace returns gateway.ErrConflict when w.ID is taken.
// UpdateWorkspace replaces the stored workspace old.ID with w only if the
// stored one still has old's UpdatedAt, and returns gateway.ErrConflict
// otherwise: the routes read, change and write back, and this keeps two
// racing PUTs from losing each other's fields. Workspaces returns every
// workspace ordered by CreatedAt then ID. Workspaces returned are the
// caller's to change.
type WorkspaceStore interface {
	Workspace(ctx context.Context, id string) (*gateway.Workspace, error)
	Workspaces(ctx context.Context) ([]gateway.Workspace, error)
	CreateWorkspace(ctx context.Context, w *gateway.Workspace) error
	UpdateWorkspace(ctx context.Context, old, w *gateway.Workspace) error
	DeleteWorkspace(ctx context.Context, id string) error
}

// PolicyStore keeps rate-limits policies, as the /policies/rate-limits
// routes need: the write side of the gateway's PolicyStore, which the
// data plane enforces.
//
// Implementations must be safe for concurrent use; Policy and
// DeletePolicy return gateway.ErrNotFound for an unknown id. Policies
// returns every policy of a workspace and every policy of no workspace,
// archived ones included, ordered by creation time. Ids are UUIDs, which
// the routes always pass in lower case, so a store may compare them
// exactly.
//
// A PUT reads a policy, changes it and writes it back. With PutPolicy
// alone that is not atomic: a PUT racing a DELETE of the same policy may
// write it back after it was deleted, and of two racing PUTs the later
// write wins whole. A store that also implements PolicyCompareAndSwapper
// (as memstore.Store does) closes that window.
type PolicyStore interface {
	gateway.PolicyStore
	Policy(ctx context.Context, id string) (*gateway.RateLimitsPolicy, error)
	PutPolicy(ctx context.Context, p *gateway.RateLimitsPolicy) error
	DeletePolicy(ctx context.Context, id string) error
}

// PolicyCompareAndSwapper is an optional capability of a PolicyStore,
// found by type assertion: replacing a policy only if it is still the one
// read. A PUT uses it when the store has it, so that a PUT never brings
// back a policy deleted meanwhile, nor undoes another PUT.
//
// CompareAndSwapPolicy replaces the stored policy old.ID with p (whose ID
// is the same) if the stored policy still equals old in every field, and
// reports whether it did. It returns gateway.ErrNotFound if no policy
// old.ID is stored. It must be atomic with respect to every other method
// of the store. A PUT gives up with 409 after 16 failed swaps.
//
// A store that embeds a memory store and overrides PutPolicy (to write
// through to a database, say) must override CompareAndSwapPolicy too:
// the promoted method would otherwise take the PUT's write, and the
// store's own PutPolicy would never see it.
type PolicyCompareAndSwapper interface {
	CompareAndSwapPolicy(ctx context.Context, old, p *gateway.RateLimitsPolicy) (bool, error)
}

// allPoliciesLister is an optional capability of a PolicyStore, found by
// type assertion: AllPolicies returns the policies of every workspace
// (and of none), for an organisation key's list. memstore.Store and
// sqlstore.Store implement it. Without it, such a list shows the policies
// of the workspaces Options.Workspaces registers.
type allPoliciesLister interface {
	AllPolicies(ctx context.Context) ([]gateway.RateLimitsPolicy, error)
}
