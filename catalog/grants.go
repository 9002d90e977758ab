package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/budget"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// grantBody is one entry of PUT /integrations/{slug}/workspaces (the
// reference's WorkspaceUpdateRequest).
type grantBody struct {
	ID                    *string         `json:"id"`
	Enabled               *bool           `json:"enabled"`
	UsageLimits           json.RawMessage `json:"usage_limits"`
	RateLimits            json.RawMessage `json:"rate_limits"`
	ResetUsage            *bool           `json:"reset_usage"`
	CreateDefaultProvider *bool           `json:"create_default_provider"`
	DefaultProviderSlug   *string         `json:"default_provider_slug"`
}

// serveGrants serves the workspaces an integration is granted to:
//
//	GET /integrations/{slug}/workspaces → 200 {"total","workspaces"}
//	PUT /integrations/{slug}/workspaces → 200 {} (grant, change or revoke)
//
// A grant makes the workspace's provider of the integration, a virtual
// key (default_provider_slug, else the integration's slug), unless
// create_default_provider is false; its rate_limits and usage_limits
// become a rate-limits policy and a usage-limits policy on the requests
// of the workspace that name that provider. Revoking a grant deletes the
// providers of the workspace made from the integration and ends its
// policies.
func (p *plane) serveGrants(w http.ResponseWriter, r *http.Request) {
	p.serveBelow(w, r, func(id gateway.Identity, in *Integration) any {
		out := []grantWire{}
		for _, g := range in.Workspaces {
			if id.Type == gateway.KeyOrganisation || g.WorkspaceID == id.WorkspaceID {
				out = append(out, grantWire{ID: g.WorkspaceID, Enabled: true, Provider: g.Provider,
					UsageLimits: g.UsageLimits, RateLimits: g.RateLimits})
			}
		}
		return struct {
			Total      int         `json:"total"`
			Workspaces []grantWire `json:"workspaces"`
		}{len(out), out}
	}, httpapi.Methods{http.MethodPut: p.putGrants})
}

// grantWire is a grant in answers (the reference's IntegrationWorkspace,
// with the slug of the provider it made).
type grantWire struct {
	ID          string          `json:"id"`
	Enabled     bool            `json:"enabled"`
	Provider    string          `json:"provider_slug,omitempty"`
	UsageLimits json.RawMessage `json:"usage_limits"`
	RateLimits  json.RawMessage `json:"rate_limits"`
}

func (p *plane) putGrants(w http.ResponseWriter, r *http.Request) error {
	slug := r.PathValue("slug")
	var b struct {
		Workspaces            *[]grantBody    `json:"workspaces"`
		GlobalAccess          json.RawMessage `json:"global_workspace_access"`
		Override              *bool           `json:"override_existing_workspace_access"`
		CreateDefaultProvider *bool           `json:"create_default_provider"`
		DefaultProviderSlug   *string         `json:"default_provider_slug"`
	}
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	if len(b.GlobalAccess) > 0 && string(b.GlobalAccess) != "null" {
		var ga struct {
			Enabled bool `json:"enabled"`
		}
		if json.Unmarshal(b.GlobalAccess, &ga) != nil || ga.Enabled {
			return control.Invalid("global_workspace_access", "global workspace access is not supported: grant each workspace")
		}
	}
	if b.Workspaces == nil {
		return control.Invalid("workspaces", "workspaces is required")
	}
	in, err := p.o.Store.Integration(r.Context(), slug)
	if errors.Is(err, gateway.ErrNotFound) {
		return integrationNotFound(slug)
	} else if err != nil {
		return err
	}
	// Check everything first: a bad entry changes nothing.
	grants := map[string]*Grant{}
	var order []string
	for i, e := range *b.Workspaces {
		at := "workspaces[" + strconv.Itoa(i) + "]."
		switch {
		case e.ID == nil || *e.ID == "":
			return control.Invalid(at+"id", at+"id is required")
		case e.Enabled == nil:
			return control.Invalid(at+"enabled", at+"enabled is required")
		case grants[*e.ID] != nil || slices.Contains(order, *e.ID):
			return control.Invalid(at+"id", "workspace "+control.Quote(*e.ID)+" is named twice")
		}
		order = append(order, *e.ID)
		if !*e.Enabled {
			continue
		}
		if p.o.Workspaces != nil {
			if _, err := p.o.Workspaces.Workspace(r.Context(), *e.ID); errors.Is(err, gateway.ErrNotFound) {
				return control.Invalid(at+"id", "no workspace "+control.Quote(*e.ID))
			} else if err != nil {
				return err
			}
		}
		g := &Grant{WorkspaceID: *e.ID, Provider: in.Slug}
		if old := in.Grant(*e.ID); old != nil {
			g.Provider = old.Provider
		}
		switch {
		case e.DefaultProviderSlug != nil:
			g.Provider = *e.DefaultProviderSlug
		case b.DefaultProviderSlug != nil && in.Grant(*e.ID) == nil:
			g.Provider = *b.DefaultProviderSlug
		}
		if !control.ValidSlug(g.Provider) {
			return control.Invalid(at+"default_provider_slug", "a provider slug must be 1 to 64 characters of a-z, 0-9 and '-'")
		}
		if g.RateLimits, err = p.rateLimits(at, e.RateLimits); err != nil {
			return err
		}
		if g.UsageLimits, err = p.usageLimits(at, e.UsageLimits); err != nil {
			return err
		}
		grants[*e.ID] = g
	}
	create := func(e grantBody) bool {
		switch {
		case e.CreateDefaultProvider != nil:
			return *e.CreateDefaultProvider
		case b.CreateDefaultProvider != nil:
			return *b.CreateDefaultProvider
		}
		return true
	}
	// The providers first, so that a taken slug changes no grant.
	for i, e := range *b.Workspaces {
		if g := grants[*e.ID]; g != nil && create(e) {
			if err := p.ensureProvider(r, in, g, "workspaces["+strconv.Itoa(i)+"].default_provider_slug"); err != nil {
				return err
			}
		}
	}
	var revoked []Grant
	err = p.change(r, slug, func(in *Integration) (*Integration, error) {
		revoked = revoked[:0]
		keep := in.Workspaces[:0]
		for _, g := range in.Workspaces {
			_, named := grants[g.WorkspaceID]
			switch {
			case named:
			case slices.Contains(order, g.WorkspaceID), b.Override != nil && *b.Override:
				revoked = append(revoked, g)
			default:
				keep = append(keep, g)
			}
		}
		in.Workspaces = keep
		for _, ws := range order {
			if g := grants[ws]; g != nil {
				in.Workspaces = append(in.Workspaces, *g)
			}
		}
		in.UpdatedAt = p.now()
		return in, nil
	}, func() {})
	if err != nil {
		return err
	}
	for _, ws := range order {
		if g := grants[ws]; g != nil {
			if err := p.enforce(r, in, ws, g.Provider, g.RateLimits, g.UsageLimits); err != nil {
				return err
			}
		}
	}
	for _, g := range revoked {
		if err := p.revoke(r, in, g); err != nil {
			return err
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, struct{}{})
	return nil
}

// ensureProvider makes the provider of grant g, unless the workspace
// already has it; a slug the workspace holds for anything else is a 409
// naming param.
func (p *plane) ensureProvider(r *http.Request, in *Integration, g *Grant, param string) error {
	if p.o.VirtualKeys == nil {
		return nil
	}
	now := p.now()
	vk := &gateway.VirtualKey{Slug: g.Provider, WorkspaceID: g.WorkspaceID, Integration: in.Slug, Provider: in.Provider,
		Name: in.Name, CreatedAt: now, UpdatedAt: now, Tenant: true}
	err := p.o.VirtualKeys.CreateVirtualKey(r.Context(), vk)
	if errors.Is(err, gateway.ErrConflict) {
		old, err := p.o.VirtualKeys.VirtualKeyIn(r.Context(), g.WorkspaceID, g.Provider)
		if err == nil && old.Integration == in.Slug {
			return nil
		}
		return control.Conflict(param, "workspace "+control.Quote(g.WorkspaceID)+" already has a provider "+control.Quote(g.Provider))
	}
	return err
}

// revoke ends grant g: the workspace's providers made from in go, and so
// do the grant's policies.
func (p *plane) revoke(r *http.Request, in *Integration, g Grant) error {
	if p.o.VirtualKeys != nil {
		vks, err := p.o.VirtualKeys.VirtualKeys(r.Context(), g.WorkspaceID)
		if err != nil {
			return err
		}
		for _, vk := range vks {
			if vk.Integration == in.Slug && vk.WorkspaceID == g.WorkspaceID {
				if err := p.o.VirtualKeys.DeleteVirtualKey(r.Context(), g.WorkspaceID, vk.Slug); err != nil && !errors.Is(err, gateway.ErrNotFound) {
					return err
				}
				if err := p.enforce(r, in, g.WorkspaceID, vk.Slug, nil, nil); err != nil {
					return err
				}
			}
		}
	}
	return p.enforce(r, in, g.WorkspaceID, g.Provider, nil, nil)
}

// rateLimits checks the rate_limits of an entry at (at most one; null or
// absent for none).
func (p *plane) rateLimits(at string, raw json.RawMessage) (json.RawMessage, error) {
	rl, err := gateway.RateLimitsJSON(raw)
	if err != nil {
		return nil, prefixed(at, err)
	}
	if rl != nil && p.o.Policies == nil {
		return nil, control.Invalid(at+"rate_limits", "rate-limits policies are not enabled on this gateway")
	}
	return rl, nil
}

// usageLimits checks the usage_limits of an entry at: an array, or an
// object as a provider's is.
func (p *plane) usageLimits(at string, raw json.RawMessage) (json.RawMessage, error) {
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		raw = append(append([]byte{'['}, t...), ']')
	}
	ul, err := gateway.UsageLimitsJSON(raw, true)
	if err != nil {
		return nil, prefixed(at, err)
	}
	if ul != nil && p.o.Budgets == nil {
		return nil, control.Invalid(at+"usage_limits", "usage limits are not enabled on this gateway")
	}
	return ul, nil
}

// prefixed names the field of err below at.
func prefixed(at string, err error) error {
	var ge *gateway.Error
	if !errors.As(err, &ge) {
		return err
	}
	e := *ge
	if e.Param != "" {
		e.Param = at + e.Param
	}
	return &e
}

// policyID is the id of the index-th policy of kind enforcing the limits
// of provider (of ws, from in): derived, so that a change replaces it.
func policyID(in *Integration, ws, provider, kind string, index int) string {
	h := sha256.Sum256([]byte(in.ID + "\x00" + ws + "\x00" + provider + "\x00" + kind + "\x00" + strconv.Itoa(index)))
	h[6] = h[6]&0x0f | 0x50
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// maxLimits bounds the entries of rate_limits and usage_limits whose
// policies enforce, and end, a grant's or provider's limits.
const maxLimits = 8

// enforce makes the policies of the limits of provider of workspace ws
// what rl and ul say: a rate-limits policy per entry of rl, of no
// workspace (so that the workspace's own keys cannot lift it), on the
// requests of ws that name provider; a usage-limits policy of ws per
// entry of ul on the same requests; the policies of entries no longer
// there are deleted (rate limits) or archived (usage limits, which are
// never deleted).
func (p *plane) enforce(r *http.Request, in *Integration, ws, provider string, rl, ul json.RawMessage) error {
	ctx := r.Context()
	now := p.now().Format(time.RFC3339)
	cond := []gateway.PolicyCondition{{Key: "workspace_id", Value: ws}, {Key: "virtual_key", Value: provider}}
	var rates []struct {
		Type  string  `json:"type"`
		Unit  string  `json:"unit"`
		Value float64 `json:"value"`
	}
	if rl != nil {
		if err := json.Unmarshal(rl, &rates); err != nil {
			return err
		}
	}
	if len(rates) > maxLimits {
		return control.Invalid("rate_limits", "at most 8 rate limits")
	}
	if p.o.Policies != nil {
		for i := range maxLimits {
			pid := policyID(in, ws, provider, "rate", i)
			if i >= len(rates) {
				if _, err := p.o.Policies.Policy(ctx, pid); errors.Is(err, gateway.ErrNotFound) {
					continue // the common case: a write of no store
				}
				if err := p.o.Policies.DeletePolicy(ctx, pid); err != nil && !errors.Is(err, gateway.ErrNotFound) {
					return err
				}
				continue
			}
			e := rates[i]
			pol := &gateway.RateLimitsPolicy{ID: pid, Name: "integration " + in.Slug + " in " + ws, Conditions: cond,
				Type: e.Type, Unit: e.Unit, Value: e.Value, Status: gateway.PolicyActive, CreatedAt: now, LastUpdatedAt: now}
			if err := p.o.Policies.PutPolicy(ctx, pol); err != nil {
				return err
			}
		}
	}
	var usages []struct {
		CreditLimit       float64  `json:"credit_limit"`
		Type              string   `json:"type"`
		AlertThreshold    *float64 `json:"alert_threshold"`
		PeriodicReset     string   `json:"periodic_reset"`
		PeriodicResetDays int      `json:"periodic_reset_days"`
	}
	if ul != nil {
		if err := json.Unmarshal(ul, &usages); err != nil {
			return err
		}
	}
	if len(usages) > maxLimits {
		return control.Invalid("usage_limits", "at most 8 usage limits")
	}
	if p.o.Budgets == nil {
		return nil
	}
	for i := range maxLimits {
		pid := policyID(in, ws, provider, "usage", i)
		old, err := p.o.Budgets.UsageLimitsPolicy(ctx, pid)
		if err != nil && !errors.Is(err, gateway.ErrNotFound) {
			return err
		}
		if i >= len(usages) {
			if old != nil && old.Status == gateway.PolicyActive {
				c := *old
				c.Status, c.LastUpdatedAt = gateway.PolicyArchived, now
				if err := p.o.Budgets.PutUsageLimitsPolicy(ctx, &c); err != nil {
					return err
				}
			}
			continue
		}
		e := usages[i]
		pol := &budget.Policy{ID: pid, Name: "integration " + in.Slug + " in " + ws, Conditions: cond[1:],
			Type: e.Type, CreditLimit: e.CreditLimit, AlertThreshold: e.AlertThreshold, PeriodicReset: e.PeriodicReset,
			PeriodicResetDays: e.PeriodicResetDays, Status: gateway.PolicyActive, WorkspaceID: ws, CreatedAt: now, LastUpdatedAt: now}
		if pol.Type == "" {
			pol.Type = budget.Cost
		}
		if old != nil {
			pol.CreatedAt, pol.LastResetAt = old.CreatedAt, old.LastResetAt
		}
		if err := p.o.Budgets.PutUsageLimitsPolicy(ctx, pol); err != nil {
			return err
		}
	}
	return nil
}
