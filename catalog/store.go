package catalog

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/modelgateway/gateway"
)

// Integration is an organisation's provider credential: a provider kind
// and the key (and host settings) to reach it, the models it offers and
// the workspaces it is granted to. Its Slug is unique in the
// organisation.
type Integration struct {
	ID          string
	Slug        string
	Name        string
	Description string
	Provider    string // the provider kind: openai, anthropic, azure-openai, …
	APIKey      string // a secret: stored sealed, answered masked
	BaseURL     string // a custom host, written by a tenant: guarded at dial
	gateway.HostSettings

	// AllowAllModels offers every model of the provider; otherwise only
	// the Models enabled.
	AllowAllModels bool
	Models         []Model
	Workspaces     []Grant

	CreatedAt time.Time
	UpdatedAt time.Time
}

// Model is a model an integration offers (or, disabled, withholds).
// Custom models may carry a Price, which prices their requests in the
// request log and budgets.
type Model struct {
	Slug      string              `json:"slug"`
	Name      string              `json:"name,omitempty"`
	Enabled   bool                `json:"enabled"`
	Custom    bool                `json:"is_custom,omitempty"`
	Finetune  bool                `json:"is_finetune,omitempty"`
	BaseModel string              `json:"base_model_slug,omitempty"`
	Price     *gateway.ModelPrice `json:"price,omitempty"`
}

// Grant gives a workspace the use of an integration through a provider
// of the workspace, Provider (a virtual key slug), with limits of its
// own: RateLimits and UsageLimits are JSON arrays as an API key's are
// (gateway.RateLimitsJSON, gateway.UsageLimitsJSON), or nil.
type Grant struct {
	WorkspaceID string          `json:"workspace_id"`
	Provider    string          `json:"provider"`
	RateLimits  json.RawMessage `json:"rate_limits,omitempty"`
	UsageLimits json.RawMessage `json:"usage_limits,omitempty"`
}

// Store keeps integrations. Implementations must be safe for concurrent
// use. Integration returns gateway.ErrNotFound for an unknown slug;
// Integrations returns every integration, oldest first. Create returns
// gateway.ErrConflict for a taken slug; Update replaces the stored
// integration old.Slug with in only if the stored one still has old's
// UpdatedAt (else gateway.ErrConflict); Delete returns
// gateway.ErrNotFound for an unknown slug. A write is in force on the
// data plane at once: the virtual keys whose Integration names in are
// found with its credential (Join) from then on. memstore.Store and
// sqlstore.Store implement it.
type Store interface {
	Integration(ctx context.Context, slug string) (*Integration, error)
	Integrations(ctx context.Context) ([]Integration, error)
	CreateIntegration(ctx context.Context, in *Integration) error
	UpdateIntegration(ctx context.Context, old, in *Integration) error
	DeleteIntegration(ctx context.Context, slug string) error
}

// Clone returns a copy of in sharing no memory with it.
func (in *Integration) Clone() *Integration {
	c := *in
	c.Models = slices.Clone(in.Models)
	for i, m := range c.Models {
		if m.Price != nil {
			p := *m.Price
			c.Models[i].Price = &p
		}
	}
	c.Workspaces = slices.Clone(in.Workspaces)
	for i, g := range c.Workspaces {
		c.Workspaces[i].RateLimits = slices.Clone(g.RateLimits)
		c.Workspaces[i].UsageLimits = slices.Clone(g.UsageLimits)
	}
	return &c
}

// Grant returns the grant of in to workspace ws, or nil.
func (in *Integration) Grant(ws string) *Grant {
	for i := range in.Workspaces {
		if in.Workspaces[i].WorkspaceID == ws {
			return &in.Workspaces[i]
		}
	}
	return nil
}

// Join returns vk, a virtual key whose Integration is in, as the data
// plane uses it: with in's provider kind, credential, host, offered
// models and custom prices, tenant-written and usable only by name; and
// false when in is not granted to vk's workspace. A store calls it when
// either record changes and keeps the result, so that a lookup costs no
// more than a virtual key's.
func (in *Integration) Join(vk *gateway.VirtualKey) (*gateway.VirtualKey, bool) {
	if vk.WorkspaceID == "" || in.Grant(vk.WorkspaceID) == nil {
		return nil, false
	}
	c := *vk
	c.AllowedRoutes = slices.Clone(vk.AllowedRoutes)
	c.Provider, c.APIKey, c.BaseURL, c.HostSettings = in.Provider, in.APIKey, in.BaseURL, in.HostSettings
	c.Tenant, c.NamedOnly = true, true
	c.Models = in.Offered()
	c.Prices = in.Prices()
	return &c, true
}

// Offered returns the models in offers: nil for every model
// (AllowAllModels), else the slugs of its enabled models (empty, not
// nil, when none is).
func (in *Integration) Offered() []string {
	if in.AllowAllModels {
		return nil
	}
	out := []string{}
	for _, m := range in.Models {
		if m.Enabled {
			out = append(out, m.Slug)
		}
	}
	return out
}

// Prices returns the prices of in's enabled models that carry one, keyed
// by model; nil when none does.
func (in *Integration) Prices() gateway.PriceTable {
	var t gateway.PriceTable
	for _, m := range in.Models {
		if m.Enabled && m.Price != nil {
			if t == nil {
				t = gateway.PriceTable{}
			}
			t[m.Slug] = *m.Price
		}
	}
	return t
}
