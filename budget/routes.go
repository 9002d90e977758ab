package budget

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
	"github.com/modelgateway/gateway/observe"
)

// usageIDParam is the name of the path parameter, as the public API
// spells it.
const usageIDParam = "policyUsageLimitsId"

// usageObject is the "object" of a usage-limits policy in responses.
const usageObject = "policy_usage_limits"

// Mount serves the usage-limits control plane of b on g (gateway.Handle),
// its writes audited by a (resource usage_limits_policies; nil: not
// audited), under {prefix}/policies/usage-limits:
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
// workspace. Without Options.Store every call by an admin is a 404 saying
// that usage-limits policies are not enabled. Mount panics when g already
// serves these routes.
func (b *Stage) Mount(g *gateway.Gateway, a *observe.Auditor) {
	h := a.Wrap("usage_limits_policies", http.HandlerFunc(b.serve))
	for _, p := range []string{"", "/{id}", "/{id}/entities", "/{id}/entities/{entityId}/reset"} {
		g.Handle("/policies/usage-limits"+p, h)
	}
	g.Handle("/policies/usage-limits/", http.HandlerFunc(control.NoRoute)) // the namespace is never passed through
}

// serve serves every usage-limits route (see Mount).
func (b *Stage) serve(w http.ResponseWriter, r *http.Request) {
	id, ok := control.Scoped(w, r, gateway.ScopePoliciesRead, gateway.ScopePoliciesWrite)
	if !ok {
		return
	}
	if b.policies == nil {
		gateway.WriteError(w, r, &gateway.Error{Status: http.StatusNotFound, Type: gateway.TypeNotFound, Code: gateway.CodeNotFound,
			Message: "usage-limits policies are not enabled on this gateway"})
		return
	}
	k := b.kind()
	pid := r.PathValue("id")
	var err error
	switch {
	case pid == "":
		err = httpapi.Methods{
			http.MethodGet:  func(w http.ResponseWriter, r *http.Request) error { return b.list(w, r, k, id) },
			http.MethodPost: func(w http.ResponseWriter, r *http.Request) error { return b.create(w, r, k, id) },
		}.Serve(w, r)
	case strings.HasSuffix(r.URL.Path, "/entities"):
		err = k.ServeItem(w, r, &pid, httpapi.Methods{
			http.MethodGet: func(w http.ResponseWriter, r *http.Request) error { return b.listEntities(w, r, k, id, pid) },
		})
	case r.PathValue("entityId") != "":
		err = k.ServeItem(w, r, &pid, httpapi.Methods{
			http.MethodPut: func(w http.ResponseWriter, r *http.Request) error {
				return b.resetEntity(w, r, k, id, pid, r.PathValue("entityId"))
			},
		})
	default:
		err = k.ServeItem(w, r, &pid, httpapi.Methods{
			http.MethodGet:    func(w http.ResponseWriter, r *http.Request) error { return b.get(w, r, k, id, pid) },
			http.MethodPut:    func(w http.ResponseWriter, r *http.Request) error { return b.update(w, r, k, id, pid) },
			http.MethodDelete: func(w http.ResponseWriter, r *http.Request) error { return b.archive(w, r, k, id, pid) },
		})
	}
	if err != nil {
		control.Fail(w, r, b.errLog, "usage-limits policy store", err)
	}
}

// kind is the usage-limits policies of b's Store for the shared skeleton
// of the policy routes.
func (b *Stage) kind() *control.PolicyKind[Policy] {
	store := b.policies
	k := &control.PolicyKind[Policy]{
		What: "usage-limits", IDParam: usageIDParam, Object: usageObject,
		Get: store.UsageLimitsPolicy, InWS: store.UsageLimitsPolicies, Put: store.PutUsageLimitsPolicy,
		Swap:     store.CompareAndSwapUsageLimitsPolicy,
		WS:       func(p *Policy) string { return p.WorkspaceID },
		Created:  func(p *Policy) string { return p.CreatedAt },
		Status:   func(p *Policy) string { return p.Status },
		Stamp:    func(p *Policy, now string) { p.LastUpdatedAt = now },
		Clone:    (*Policy).Clone,
		PolicyID: func(p *Policy) string { return p.ID },
	}
	if l, ok := store.(allLister); ok {
		k.All = l.AllUsageLimitsPolicies
	}
	if b.workspaces != nil {
		k.Workspaces = b.workspaces.Workspaces
	}
	return k
}

// allLister is an optional capability of a Store,
// found by type assertion: AllUsageLimitsPolicies returns the policies of
// every workspace, for an organisation key's list; callers must not
// modify them. memstore.Store and sqlstore.Store implement it. Without it,
// such a list shows the policies of the workspaces Options.Workspaces
// registers.
type allLister interface {
	AllUsageLimitsPolicies(ctx context.Context) ([]Policy, error)
}

func (b *Stage) list(w http.ResponseWriter, r *http.Request, k *control.PolicyKind[Policy], id gateway.Identity) error {
	now := b.now()
	return control.ListPolicies(k, w, r, id, httpapi.DefaultPaging,
		func(q url.Values) (func(*Policy) bool, error) {
			typ, err := control.Enum(q, "type", "", Cost, Tokens)
			if err != nil {
				return nil, err
			}
			return func(p *Policy) bool { return typ == "" || p.Type == typ }, nil
		},
		func(p *Policy) policyWire { return p.wire(now) })
}

func (b *Stage) get(w http.ResponseWriter, r *http.Request, k *control.PolicyKind[Policy], id gateway.Identity, pid string) error {
	var usage string
	p, err := k.Read(r, id, pid, func(q url.Values) (err error) {
		usage, err = control.Enum(q, "include_usage", "false", "true", "false")
		return err
	})
	if err != nil {
		return err
	}
	wire := p.wire(b.now())
	wire.Object = usageObject
	if usage == "true" {
		es, err := b.entities(r.Context(), p)
		if err != nil {
			return err
		}
		wire.ValueKeyUsageMap = make(map[string]EntityUsage, len(es))
		for _, e := range es {
			wire.ValueKeyUsageMap[e.ValueKey] = e.EntityUsage
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, wire)
	return nil
}

// createBody is the body of POST /policies/usage-limits.
type createBody struct {
	Name              *string                   `json:"name"`
	Conditions        []gateway.PolicyCondition `json:"conditions"`
	GroupBy           []gateway.PolicyGroupBy   `json:"group_by"`
	Type              string                    `json:"type"`
	CreditLimit       *float64                  `json:"credit_limit"`
	AlertThreshold    *float64                  `json:"alert_threshold"`
	PeriodicReset     *string                   `json:"periodic_reset"`
	PeriodicResetDays *int                      `json:"periodic_reset_days"`
	WorkspaceID       string                    `json:"workspace_id"`
	OrganisationID    string                    `json:"organisation_id"`
}

func (c *createBody) head() control.PolicyHead {
	return control.PolicyHead{Name: c.Name, Conditions: c.Conditions, GroupBy: c.GroupBy, Type: c.Type, WorkspaceID: c.WorkspaceID, OrganisationID: c.OrganisationID}
}

func (b *Stage) create(w http.ResponseWriter, r *http.Request, k *control.PolicyKind[Policy], id gateway.Identity) error {
	var c createBody
	return control.CreatePolicy(k, w, r, id, &c, c.head,
		func() error {
			switch {
			case c.Type == "":
				return control.Invalid("type", "type is required: cost or tokens")
			case c.CreditLimit == nil:
				return control.Invalid("credit_limit", "credit_limit is required")
			case c.PeriodicResetDays != nil && *c.PeriodicResetDays < 1:
				return control.Invalid("periodic_reset_days", "periodic_reset_days must be an integer from 1 to 365, or null")
			}
			return nil
		},
		func(ws, now string) (*Policy, error) {
			p := &Policy{ID: control.NewUUID(), Conditions: c.Conditions, GroupBy: c.GroupBy, Type: c.Type,
				CreditLimit: *c.CreditLimit, AlertThreshold: c.AlertThreshold, Status: gateway.PolicyActive, WorkspaceID: ws,
				OrganisationID: c.OrganisationID, CreatedAt: now, LastUpdatedAt: now}
			if c.Name != nil {
				p.Name = *c.Name
			}
			if c.PeriodicReset != nil {
				p.PeriodicReset = *c.PeriodicReset
				if p.PeriodicReset == "" {
					return nil, control.Invalid("periodic_reset", "periodic_reset must be weekly, monthly or null")
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

// archive serves DELETE: the policy is archived (no longer
// enforced, listed with status=archived), as the reference says.
func (b *Stage) archive(w http.ResponseWriter, r *http.Request, k *control.PolicyKind[Policy], id gateway.Identity, pid string) error {
	err := k.Update(r, id, pid, func(p *Policy) error {
		if p.Status == gateway.PolicyArchived {
			return k.NotFound(pid)
		}
		p.Status = gateway.PolicyArchived
		return nil
	})
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, struct{}{})
	return nil
}
