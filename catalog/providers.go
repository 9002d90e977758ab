package catalog

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// serveProviders serves a workspace's providers, its virtual keys seen
// from the catalogue:
//
//	POST   /providers         create from an integration → 200 {"id","slug"}
//	GET    /providers         list   → 200 {"object":"list","total","data"}
//	GET    /providers/{slug}  read   → 200 the provider
//	PUT    /providers/{slug}  update → 200 {"id","slug"}
//	DELETE /providers/{slug}  delete → 200 {}
//
// A provider made here uses an integration granted to its workspace;
// its rate_limits and usage_limits are enforced as a grant's are. A
// virtual key made through /virtual-keys is listed too, with no
// integration_id.
func (p *plane) serveProviders(w http.ResponseWriter, r *http.Request) {
	id, ok := control.Scoped(w, r, gateway.ScopeVirtualKeysRead, gateway.ScopeVirtualKeysWrite)
	if !ok {
		return
	}
	if p.o.VirtualKeys == nil {
		gateway.WriteError(w, r, notManaged("providers"))
		return
	}
	k := p.providerKind(p.o.VirtualKeys)
	err := k.Serve(w, r, id, r.PathValue("slug"), p.createProvider,
		func(w http.ResponseWriter, r *http.Request, k *providerKind, id gateway.Identity, slug string) error {
			vk, err := k.Lookup(r, id, slug)
			if err == nil {
				httpapi.WriteJSON(w, http.StatusOK, k.Wire(vk))
			}
			return err
		}, p.updateProvider)
	if err != nil {
		p.fail(w, r, err)
	}
}

type providerKind = control.SlugKind[gateway.VirtualKey, providerWire]

func (p *plane) providerKind(store admin.VirtualKeyStore) *providerKind {
	return &providerKind{What: "provider",
		In: store.VirtualKeyIn, All: store.VirtualKeys, Create: store.CreateVirtualKey,
		Update: store.UpdateVirtualKey, Delete: store.DeleteVirtualKey,
		WS:    func(vk *gateway.VirtualKey) string { return vk.WorkspaceID },
		Clone: func(vk *gateway.VirtualKey) *gateway.VirtualKey { c := *vk; return &c },
		Wire:  providerWireOf,
	}
}

// providerBody is the body of POST /providers and PUT /providers/{slug}.
type providerBody struct {
	Name          *string         `json:"name"`
	IntegrationID *string         `json:"integration_id"`
	WorkspaceID   *string         `json:"workspace_id"`
	Slug          *string         `json:"slug"`
	Note          *string         `json:"note"`
	UsageLimits   json.RawMessage `json:"usage_limits"`
	RateLimits    json.RawMessage `json:"rate_limits"`
	ExpiresAt     json.RawMessage `json:"expires_at"`
	ResetUsage    *bool           `json:"reset_usage"`
}

func (b *providerBody) check() error {
	if len(b.ExpiresAt) > 0 && string(b.ExpiresAt) != "null" {
		return control.Invalid("expires_at", "providers do not expire on this gateway: delete the provider instead")
	}
	if b.Note != nil {
		if err := control.Description("note", *b.Note); err != nil {
			return err
		}
	}
	return nil
}

func (p *plane) createProvider(w http.ResponseWriter, r *http.Request, k *providerKind, id gateway.Identity) error {
	var b providerBody
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	if err := b.check(); err != nil {
		return err
	}
	if err := control.CheckName(b.Name, true); err != nil {
		return err
	}
	if b.IntegrationID == nil || *b.IntegrationID == "" {
		return control.Invalid("integration_id", "integration_id is required: the slug of an integration granted to the workspace (a credential of the workspace's own is a virtual key)")
	}
	if b.WorkspaceID != nil && *b.WorkspaceID == "" {
		b.WorkspaceID = nil // the reference's examples send "" for a workspace key's own
	}
	ws, slug, err := k.CreateIn(id, b.WorkspaceID, b.Slug, *b.Name)
	if err != nil {
		return err
	}
	if ws == "" {
		return control.Invalid("workspace_id", "an organisation key names the provider's workspace with workspace_id")
	}
	in, g, err := p.granted(r, *b.IntegrationID, ws)
	if err != nil {
		return err
	}
	if len(g.RateLimits) > 0 || len(g.UsageLimits) > 0 {
		// Another provider would escape the grant's limits.
		return control.Conflict("integration_id", "the grant of integration "+control.Quote(in.Slug)+" to this workspace has limits: use its provider "+control.Quote(g.Provider))
	}
	rl, err := p.rateLimits("", b.RateLimits)
	if err != nil {
		return err
	}
	ul, err := p.usageLimits("", b.UsageLimits)
	if err != nil {
		return err
	}
	control.OrgActedIn(r, id, ws)
	now := p.now()
	vk := gateway.VirtualKey{Slug: slug, WorkspaceID: ws, Integration: in.Slug, Provider: in.Provider, Name: *b.Name,
		CreatedAt: now, UpdatedAt: now, Tenant: true}
	if b.Note != nil {
		vk.Note = *b.Note
	}
	if err := k.Store(r, slug, &vk); err != nil {
		return err
	}
	if err := p.enforce(r, in, ws, slug, rl, ul); err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, struct {
		ID   string `json:"id"`
		Slug string `json:"slug"`
	}{slug, slug})
	return nil
}

// granted returns the integration slug and its grant to ws; a 400
// naming integration_id when there is none (another workspace's
// integrations are not revealed).
func (p *plane) granted(r *http.Request, slug, ws string) (*Integration, *Grant, error) {
	if p.o.Store == nil {
		return nil, nil, notManaged("integrations")
	}
	in, err := p.o.Store.Integration(r.Context(), slug)
	if err == nil && in.Grant(ws) == nil || errors.Is(err, gateway.ErrNotFound) {
		return nil, nil, control.Invalid("integration_id", "no integration "+control.Quote(slug)+" is granted to the workspace")
	} else if err != nil {
		return nil, nil, err
	}
	return in, in.Grant(ws), nil
}

func (p *plane) updateProvider(w http.ResponseWriter, r *http.Request, k *providerKind, id gateway.Identity, slug string) error {
	var b providerBody
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	switch {
	case b.IntegrationID != nil:
		return control.Invalid("integration_id", "integration_id cannot be changed; create another provider")
	case b.ResetUsage != nil:
		return control.Invalid("reset_usage", "reset usage with PUT /policies/usage-limits/{id} (reset_usage_for_value)")
	}
	if err := control.Fixed(b.Slug, b.WorkspaceID); err != nil {
		return err
	}
	if err := b.check(); err != nil {
		return err
	}
	if err := control.CheckName(b.Name, false); err != nil {
		return err
	}
	limits := b.RateLimits != nil || b.UsageLimits != nil
	var rl, ul json.RawMessage
	var err error
	if limits {
		if rl, err = p.rateLimits("", b.RateLimits); err != nil {
			return err
		}
		if ul, err = p.usageLimits("", b.UsageLimits); err != nil {
			return err
		}
	}
	var vk *gateway.VirtualKey
	err = k.Change(r, id, slug, func(old *gateway.VirtualKey) (*gateway.VirtualKey, []string, error) {
		if limits && old.Integration == "" {
			return nil, nil, control.Invalid("rate_limits", "only a provider made from an integration has limits of its own")
		}
		c := *old
		if b.Name != nil {
			c.Name = *b.Name
		}
		if b.Note != nil {
			c.Note = *b.Note
		}
		c.UpdatedAt = p.now()
		vk = &c
		return &c, nil, nil
	}, func(*gateway.VirtualKey) {})
	if err != nil {
		return err
	}
	if limits {
		in, g, err := p.granted(r, vk.Integration, vk.WorkspaceID)
		if err != nil {
			return err
		}
		if g.Provider == vk.Slug {
			return control.Invalid("rate_limits", "the limits of a grant's provider are the grant's: PUT /integrations/{slug}/workspaces")
		}
		if err := p.enforce(r, in, vk.WorkspaceID, vk.Slug, rl, ul); err != nil {
			return err
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, struct {
		ID   string `json:"id"`
		Slug string `json:"slug"`
	}{slug, slug})
	return nil
}

// providerWire is a provider in answers (the reference's Providers).
type providerWire struct {
	Name          string    `json:"name"`
	IntegrationID string    `json:"integration_id"`
	Note          *string   `json:"note"`
	Status        string    `json:"status"`
	CreatedAt     time.Time `json:"created_at"`
	Slug          string    `json:"slug"`
	Provider      string    `json:"ai_provider_id"`
	WorkspaceID   string    `json:"workspace_id,omitempty"`
	Object        string    `json:"object"`
}

func providerWireOf(vk *gateway.VirtualKey) providerWire {
	o := providerWire{Name: vk.Name, IntegrationID: vk.Integration, Status: "active", CreatedAt: vk.CreatedAt,
		Slug: vk.Slug, Provider: vk.Provider, WorkspaceID: vk.WorkspaceID, Object: "provider"}
	if vk.Note != "" {
		o.Note = &vk.Note
	}
	return o
}
