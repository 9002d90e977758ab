package gateway

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelgateway/gateway/internal/httpapi"
)

// usageIDParam is the name of the path parameter, as the public API
// spells it.
const usageIDParam = "policyUsageLimitsId"

// usageObject is the "object" of a usage-limits policy in responses.
const usageObject = "policy_usage_limits"

// serveUsageLimits serves the usage-limits control plane under
// {prefix}/policies/usage-limits:
//
//	POST   /policies/usage-limits                         create → 200 {"id", "object"}
//	GET    /policies/usage-limits                         list   → 200 {"object":"list","data","total"}
//	GET    /policies/usage-limits/{id}                    read (include_usage) → the policy with "object"
//	PUT    /policies/usage-limits/{id}                    update, reset_usage_for_value → 200 {}
//	DELETE /policies/usage-limits/{id}                    archive → 200 {}
//	GET    /policies/usage-limits/{id}/entities           entities with their usage
//	PUT    /policies/usage-limits/{id}/entities/{e}/reset reset an entity's usage → 200 {}
//
// Scopes are those of the rate-limits routes: policies.read to read,
// policies.write to change. A workspace key sees only the policies of its
// own workspace: another workspace's policy is a 404. An organisation key
// acts on every workspace's, as on the rate-limits routes: workspace_id in
// the body of a create (required), in the query of a list (every
// workspace without it), and the audit record names the policy's
// workspace. Without
// Options.UsageLimits every call by an admin is a 404 saying that
// usage-limits policies are not enabled.
func (g *Gateway) serveUsageLimits(w http.ResponseWriter, r *http.Request) {
	id, ok := scopedIdentity(w, r, ScopePoliciesRead, ScopePoliciesWrite)
	if !ok {
		return
	}
	store := g.opts.UsageLimits
	if store == nil {
		WriteError(w, r, &Error{Status: http.StatusNotFound, Type: TypeNotFound, Code: CodeNotFound,
			Message: "usage-limits policies are not enabled on this gateway"})
		return
	}
	k := usageLimitsKind(store)
	pid := r.PathValue("id")
	var err error
	switch {
	case pid == "":
		err = httpapi.Methods{
			http.MethodGet:  func(w http.ResponseWriter, r *http.Request) error { return g.listUsageLimits(w, r, k, id) },
			http.MethodPost: func(w http.ResponseWriter, r *http.Request) error { return g.createUsageLimits(w, r, k, id) },
		}.Serve(w, r)
	case strings.HasSuffix(r.URL.Path, "/entities"):
		err = k.serveItem(w, r, &pid, httpapi.Methods{
			http.MethodGet: func(w http.ResponseWriter, r *http.Request) error { return g.listUsageEntities(w, r, store, id, pid) },
		})
	case r.PathValue("entityId") != "":
		err = k.serveItem(w, r, &pid, httpapi.Methods{
			http.MethodPut: func(w http.ResponseWriter, r *http.Request) error {
				return g.resetUsageEntity(w, r, store, id, pid, r.PathValue("entityId"))
			},
		})
	default:
		err = k.serveItem(w, r, &pid, httpapi.Methods{
			http.MethodGet:    func(w http.ResponseWriter, r *http.Request) error { return g.getUsageLimits(w, r, store, id, pid) },
			http.MethodPut:    func(w http.ResponseWriter, r *http.Request) error { return g.updateUsageLimits(w, r, store, id, pid) },
			http.MethodDelete: func(w http.ResponseWriter, r *http.Request) error { return g.archiveUsageLimits(w, r, store, id, pid) },
		})
	}
	if err != nil {
		g.controlPlaneError(w, r, "usage-limits policy store", err)
	}
}

// usageLimitsKind is the usage-limits policies of store for the shared
// skeleton of the policy routes.
func usageLimitsKind(store UsageLimitsStore) *policyKind[UsageLimitsPolicy] {
	k := &policyKind[UsageLimitsPolicy]{
		what: "usage-limits", idParam: usageIDParam, object: usageObject,
		get: store.UsageLimitsPolicy, inWS: store.UsageLimitsPolicies, put: store.PutUsageLimitsPolicy,
		swap:     store.CompareAndSwapUsageLimitsPolicy,
		ws:       func(p *UsageLimitsPolicy) string { return p.WorkspaceID },
		created:  func(p *UsageLimitsPolicy) string { return p.CreatedAt },
		status:   func(p *UsageLimitsPolicy) string { return p.Status },
		stamp:    func(p *UsageLimitsPolicy, now string) { p.LastUpdatedAt = now },
		clone:    cloneUsageLimits,
		policyID: func(p *UsageLimitsPolicy) string { return p.ID },
	}
	if l, ok := store.(allUsageLimitsLister); ok {
		k.all = l.AllUsageLimitsPolicies
	}
	return k
}

// usageNotFound is the answer for an unknown policy, and for one of
// another workspace.
func usageNotFound(pid string) *Error {
	return policyMissing("usage-limits", pid)
}

// lookupUsageLimits returns the policy pid of the caller's workspace, or
// of any workspace for an organisation key (see policyKind.lookup).
func lookupUsageLimits(r *http.Request, store UsageLimitsStore, id Identity, pid string) (*UsageLimitsPolicy, error) {
	return usageLimitsKind(store).lookup(r, id, pid)
}

// allUsageLimitsLister is an optional capability of a UsageLimitsStore,
// found by type assertion: AllUsageLimitsPolicies returns the policies of
// every workspace, for an organisation key's list; callers must not
// modify them. MemoryStore and sqlstore.Store implement it. Without it,
// such a list shows the policies of the workspaces Options.Workspaces
// registers.
type allUsageLimitsLister interface {
	AllUsageLimitsPolicies(ctx context.Context) ([]UsageLimitsPolicy, error)
}

func (g *Gateway) listUsageLimits(w http.ResponseWriter, r *http.Request, k *policyKind[UsageLimitsPolicy], id Identity) error {
	now := g.clock()
	return list(g, k, w, r, id, httpapi.DefaultPaging,
		func(q url.Values) (func(*UsageLimitsPolicy) bool, error) {
			typ, err := policyEnum(q, "type", "", UsageCost, UsageTokens)
			if err != nil {
				return nil, err
			}
			return func(p *UsageLimitsPolicy) bool { return typ == "" || p.Type == typ }, nil
		},
		func(p *UsageLimitsPolicy) usageLimitsWire { return p.wire(now) })
}

func (g *Gateway) getUsageLimits(w http.ResponseWriter, r *http.Request, store UsageLimitsStore, id Identity, pid string) error {
	q := r.URL.Query()
	status, err := policyEnum(q, "status", PolicyActive, PolicyActive, PolicyArchived)
	if err != nil {
		return err
	}
	usage, err := policyEnum(q, "include_usage", "false", "true", "false")
	if err != nil {
		return err
	}
	p, err := lookupUsageLimits(r, store, id, pid)
	if err != nil {
		return err
	}
	if p.Status != status {
		return usageNotFound(pid)
	}
	now := g.clock()
	wire := p.wire(now)
	wire.Object = usageObject
	if usage == "true" {
		es, err := g.usageEntities(r.Context(), p)
		if err != nil {
			return err
		}
		wire.ValueKeyUsageMap = make(map[string]ValueKeyUsage, len(es))
		for _, e := range es {
			wire.ValueKeyUsageMap[e.ValueKey] = e.ValueKeyUsage
		}
	}
	writeJSON(w, http.StatusOK, wire)
	return nil
}

// usageCreate is the body of POST /policies/usage-limits.
type usageCreate struct {
	Name              *string           `json:"name"`
	Conditions        []PolicyCondition `json:"conditions"`
	GroupBy           []PolicyGroupBy   `json:"group_by"`
	Type              string            `json:"type"`
	CreditLimit       *float64          `json:"credit_limit"`
	AlertThreshold    *float64          `json:"alert_threshold"`
	PeriodicReset     *string           `json:"periodic_reset"`
	PeriodicResetDays *int              `json:"periodic_reset_days"`
	WorkspaceID       string            `json:"workspace_id"`
	OrganisationID    string            `json:"organisation_id"`
}

func (c *usageCreate) head() policyCreateHead {
	return policyCreateHead{c.Name, c.Conditions, c.GroupBy, c.Type, c.WorkspaceID, c.OrganisationID}
}

func (g *Gateway) createUsageLimits(w http.ResponseWriter, r *http.Request, k *policyKind[UsageLimitsPolicy], id Identity) error {
	var c usageCreate
	return create(g, k, w, r, id, &c, c.head,
		func() error {
			switch {
			case c.Type == "":
				return policyInvalid("type", "type is required: cost or tokens")
			case c.CreditLimit == nil:
				return policyInvalid("credit_limit", "credit_limit is required")
			case c.PeriodicResetDays != nil && *c.PeriodicResetDays < 1:
				return policyInvalid("periodic_reset_days", "periodic_reset_days must be an integer from 1 to 365, or null")
			}
			return nil
		},
		func(ws, now string) (*UsageLimitsPolicy, error) {
			p := &UsageLimitsPolicy{ID: newUUID(), Conditions: c.Conditions, GroupBy: c.GroupBy, Type: c.Type,
				CreditLimit: *c.CreditLimit, AlertThreshold: c.AlertThreshold, Status: PolicyActive, WorkspaceID: ws,
				OrganisationID: c.OrganisationID, CreatedAt: now, LastUpdatedAt: now}
			if c.Name != nil {
				p.Name = *c.Name
			}
			if c.PeriodicReset != nil {
				p.PeriodicReset = *c.PeriodicReset
				if p.PeriodicReset == "" {
					return nil, policyInvalid("periodic_reset", "periodic_reset must be weekly, monthly or null")
				}
			}
			if c.PeriodicResetDays != nil {
				p.PeriodicResetDays = *c.PeriodicResetDays
			}
			if e := p.check(); e != nil {
				return nil, e
			}
			return p, nil
		})
}

// swapUsageLimits changes policy pid of the caller's workspace (any
// workspace's for an organisation key) with change, with a
// compare-and-swap (see policyKind.update).
func swapUsageLimits(r *http.Request, store UsageLimitsStore, id Identity, pid string, change func(p *UsageLimitsPolicy) error) error {
	return usageLimitsKind(store).update(r, id, pid, change)
}

// archiveUsageLimits serves DELETE: the policy is archived (no longer
// enforced, listed with status=archived), as the reference says.
func (g *Gateway) archiveUsageLimits(w http.ResponseWriter, r *http.Request, store UsageLimitsStore, id Identity, pid string) error {
	err := swapUsageLimits(r, store, id, pid, func(p *UsageLimitsPolicy) error {
		if p.Status == PolicyArchived {
			return usageNotFound(pid)
		}
		p.Status = PolicyArchived
		return nil
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct{}{})
	return nil
}
