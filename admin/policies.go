package admin

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/url"
	"sort"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// policyIDParam is the name of the path parameter, as the public API
// spells it.
const policyIDParam = "rateLimitsPolicyId"

// policyObject is the "object" of a rate-limits policy in responses.
const policyObject = "policy_rate_limits"

// Paging bounds of GET /policies/rate-limits.
const (
	policyPageSizeDefault = 100
	policyPageSizeMax     = 1000
)

// servePolicies serves the rate-limits control plane under
// {prefix}/policies/rate-limits:
//
//	POST   /policies/rate-limits       create → 200 {"id", "object"}
//	GET    /policies/rate-limits       list   → 200 {"object":"list","data","total"}
//	GET    /policies/rate-limits/{id}  read   → 200 the policy with "object"
//	PUT    /policies/rate-limits/{id}  update name, value, unit → 200 {}
//	DELETE /policies/rate-limits/{id}  delete → 200 {}
//
// A key needs the policies.read scope to read and policies.write to change
// (the admin role holds both; others get 403). A workspace key sees only
// the policies of its own workspace: another workspace's policy is a 404,
// as if it did not exist. An organisation key acts on the policies of
// every workspace (the control plane): it names the workspace of a new policy with
// workspace_id in the body, lists every workspace's policies or those of
// workspace_id in the query, and the audit record of a write names the
// policy's workspace. The operator's policies, of no workspace, are out of
// every key's reach. Without Options.Policies every call by
// an admin is a 404 saying that policies are not enabled. Requests to the
// control plane are never rate-limited by policies.
func (a *plane) servePolicies(w http.ResponseWriter, r *http.Request) {
	id, ok := control.Scoped(w, r, gateway.ScopePoliciesRead, gateway.ScopePoliciesWrite)
	if !ok {
		return
	}
	store := a.o.Policies
	if store == nil {
		gateway.WriteError(w, r, &gateway.Error{Status: http.StatusNotFound, Type: gateway.TypeNotFound, Code: gateway.CodeNotFound,
			Message: "rate-limits policies are not enabled on this gateway"})
		return
	}
	k := a.rateLimitsKind(store)
	var err error
	if pid := r.PathValue("id"); pid == "" {
		err = httpapi.Methods{
			http.MethodGet:  func(w http.ResponseWriter, r *http.Request) error { return a.listPolicies(w, r, k, id) },
			http.MethodPost: func(w http.ResponseWriter, r *http.Request) error { return a.createPolicy(w, r, k, id) },
		}.Serve(w, r)
	} else {
		err = k.ServeItem(w, r, &pid, httpapi.Methods{
			http.MethodGet:    func(w http.ResponseWriter, r *http.Request) error { return a.getPolicy(w, r, k, id, pid) },
			http.MethodPut:    func(w http.ResponseWriter, r *http.Request) error { return a.updatePolicy(w, r, k, id, pid) },
			http.MethodDelete: func(w http.ResponseWriter, r *http.Request) error { return a.deletePolicy(w, r, store, k, id, pid) },
		})
	}
	if err != nil {
		control.Fail(w, r, a.o.ErrorLog, "policy store", err)
	}
}

// rateLimitsKind is the rate-limits policies of store for the shared
// skeleton of the policy routes.
func (a *plane) rateLimitsKind(store PolicyStore) *control.PolicyKind[gateway.RateLimitsPolicy] {
	k := &control.PolicyKind[gateway.RateLimitsPolicy]{
		What: "rate-limits", IDParam: policyIDParam, Object: policyObject,
		Get: store.Policy, InWS: store.Policies, Put: store.PutPolicy,
		WS:       func(p *gateway.RateLimitsPolicy) string { return p.WorkspaceID },
		Created:  func(p *gateway.RateLimitsPolicy) string { return p.CreatedAt },
		Status:   func(p *gateway.RateLimitsPolicy) string { return p.Status },
		Stamp:    func(p *gateway.RateLimitsPolicy, now string) { p.LastUpdatedAt = now },
		Clone:    func(p *gateway.RateLimitsPolicy) *gateway.RateLimitsPolicy { c := *p; return &c },
		PolicyID: func(p *gateway.RateLimitsPolicy) string { return p.ID },
	}
	if a.o.Workspaces != nil {
		k.Workspaces = a.o.Workspaces.Workspaces
	}
	if l, ok := store.(allPoliciesLister); ok {
		k.All = l.AllPolicies
	}
	if cas, ok := store.(PolicyCompareAndSwapper); ok {
		k.Swap = cas.CompareAndSwapPolicy
	}
	return k
}

func (a *plane) listPolicies(w http.ResponseWriter, r *http.Request, k *control.PolicyKind[gateway.RateLimitsPolicy], id gateway.Identity) error {
	return control.ListPolicies(k, w, r, id, httpapi.Paging{Default: policyPageSizeDefault, Min: 0, Max: policyPageSizeMax},
		func(q url.Values) (func(*gateway.RateLimitsPolicy) bool, error) {
			typ, err := control.Enum(q, "type", "", gateway.PolicyRequests, gateway.PolicyTokens)
			if err != nil {
				return nil, err
			}
			unit, err := control.Enum(q, "unit", "", gateway.PolicyPerMinute, gateway.PolicyPerHour, gateway.PolicyPerDay)
			if err != nil {
				return nil, err
			}
			return func(p *gateway.RateLimitsPolicy) bool {
				return (typ == "" || p.Type == typ) && (unit == "" || p.Unit == unit)
			}, nil
		},
		func(p *gateway.RateLimitsPolicy) gateway.RateLimitsPolicy { return *p })
}

func (a *plane) getPolicy(w http.ResponseWriter, r *http.Request, k *control.PolicyKind[gateway.RateLimitsPolicy], id gateway.Identity, pid string) error {
	p, err := k.Read(r, id, pid, nil)
	if err != nil {
		return err
	}
	if p.Conditions == nil {
		p.Conditions = []gateway.PolicyCondition{}
	}
	if p.GroupBy == nil {
		p.GroupBy = []gateway.PolicyGroupBy{}
	}
	httpapi.WriteJSON(w, http.StatusOK, struct {
		policyWire
		Object string `json:"object"`
	}{policyWire(*p), policyObject})
	return nil
}

// policyCreate is the body of POST /policies/rate-limits.
type policyCreate struct {
	Name           *string                   `json:"name"`
	Conditions     []gateway.PolicyCondition `json:"conditions"`
	GroupBy        []gateway.PolicyGroupBy   `json:"group_by"`
	Type           string                    `json:"type"`
	Unit           string                    `json:"unit"`
	Value          *float64                  `json:"value"`
	WorkspaceID    string                    `json:"workspace_id"`
	OrganisationID string                    `json:"organisation_id"`
}

func (c *policyCreate) head() control.PolicyHead {
	return control.PolicyHead{Name: c.Name, Conditions: c.Conditions, GroupBy: c.GroupBy, Type: c.Type, WorkspaceID: c.WorkspaceID, OrganisationID: c.OrganisationID}
}

func (a *plane) createPolicy(w http.ResponseWriter, r *http.Request, k *control.PolicyKind[gateway.RateLimitsPolicy], id gateway.Identity) error {
	var c policyCreate
	return control.CreatePolicy(k, w, r, id, &c, c.head,
		func() error {
			if c.Value == nil {
				return control.Invalid("value", "value is required")
			}
			return nil
		},
		func(ws, now string) (*gateway.RateLimitsPolicy, error) {
			p := &gateway.RateLimitsPolicy{ID: control.NewUUID(), Conditions: c.Conditions, GroupBy: c.GroupBy, Type: c.Type, Unit: c.Unit,
				Value: *c.Value, Status: gateway.PolicyActive, WorkspaceID: ws, OrganisationID: c.OrganisationID,
				CreatedAt: now, LastUpdatedAt: now}
			if c.Name != nil {
				p.Name = *c.Name
			}
			if e := p.Validate(); e != nil {
				return nil, e
			}
			return p, nil
		})
}

// updatePolicy serves PUT: it reads the policy, changes it and writes it
// back (see control.PolicyKind.Update: with a PolicyCompareAndSwapper store, a
// compare-and-swap).
func (a *plane) updatePolicy(w http.ResponseWriter, r *http.Request, k *control.PolicyKind[gateway.RateLimitsPolicy], id gateway.Identity, pid string) error {
	data, err := control.ReadBody(r)
	if err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		return control.Invalid("", "the body must be a JSON object of name, value and unit")
	}
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	var (
		name    *string
		value   *float64
		unit    string
		nameSet bool
	)
	for _, k := range names {
		raw := fields[k]
		switch k {
		case "name":
			nameSet = true
			if string(raw) == "null" {
				continue
			}
			if err := json.Unmarshal(raw, &name); err != nil {
				return control.Invalid("name", "name must be a string of at most 255 bytes, or null")
			}
			if err := control.Label("name", *name); err != nil {
				return err
			}
		case "value":
			if err := json.Unmarshal(raw, &value); err != nil || value == nil || !(*value > 0) || math.IsInf(*value, 0) {
				return control.Invalid("value", "value must be a number greater than 0")
			}
		case "unit":
			if err := json.Unmarshal(raw, &unit); err != nil || (unit != gateway.PolicyPerMinute && unit != gateway.PolicyPerHour && unit != gateway.PolicyPerDay) {
				return control.Invalid("unit", "unit must be rpm, rph or rpd")
			}
		default:
			return control.Invalid(k, "only name, value and unit of a policy can be changed")
		}
	}
	if len(names) == 0 {
		return control.Invalid("", "the body must set at least one of name, value and unit")
	}
	err = k.Update(r, id, pid, func(p *gateway.RateLimitsPolicy) error {
		if nameSet {
			p.Name = ""
			if name != nil {
				p.Name = *name
			}
		}
		if value != nil {
			p.Value = *value
		}
		if unit != "" {
			p.Unit = unit
		}
		if e := p.Validate(); e != nil {
			return e // e.g. a requests policy lowered below 1
		}
		return nil
	})
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, struct{}{})
	return nil
}

func (a *plane) deletePolicy(w http.ResponseWriter, r *http.Request, store PolicyStore, k *control.PolicyKind[gateway.RateLimitsPolicy], id gateway.Identity, pid string) error {
	if _, err := k.Lookup(r, id, pid); err != nil {
		return err
	}
	if err := store.DeletePolicy(r.Context(), pid); err != nil {
		if errors.Is(err, gateway.ErrNotFound) {
			return k.NotFound(pid)
		}
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, struct{}{})
	return nil
}

// policyWire is RateLimitsPolicy without its MarshalJSON, for an answer
// that adds "object" to its fields.
type policyWire gateway.RateLimitsPolicy
