package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/url"
	"sort"
	"time"

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
func (g *Gateway) servePolicies(w http.ResponseWriter, r *http.Request) {
	id, ok := scopedIdentity(w, r, ScopePoliciesRead, ScopePoliciesWrite)
	if !ok {
		return
	}
	store := g.opts.Policies
	if store == nil {
		WriteError(w, r, &Error{Status: http.StatusNotFound, Type: TypeNotFound, Code: CodeNotFound,
			Message: "rate-limits policies are not enabled on this gateway"})
		return
	}
	k := rateLimitsKind(store)
	var err error
	if pid := r.PathValue("id"); pid == "" {
		err = httpapi.Methods{
			http.MethodGet:  func(w http.ResponseWriter, r *http.Request) error { return g.listPolicies(w, r, k, id) },
			http.MethodPost: func(w http.ResponseWriter, r *http.Request) error { return g.createPolicy(w, r, k, id) },
		}.Serve(w, r)
	} else {
		err = k.serveItem(w, r, &pid, httpapi.Methods{
			http.MethodGet:    func(w http.ResponseWriter, r *http.Request) error { return g.getPolicy(w, r, k, id, pid) },
			http.MethodPut:    func(w http.ResponseWriter, r *http.Request) error { return g.updatePolicy(w, r, k, id, pid) },
			http.MethodDelete: func(w http.ResponseWriter, r *http.Request) error { return g.deletePolicy(w, r, store, k, id, pid) },
		})
	}
	if err != nil {
		g.controlPlaneError(w, r, "policy store", err)
	}
}

// rateLimitsKind is the rate-limits policies of store for the shared
// skeleton of the policy routes.
func rateLimitsKind(store PolicyStore) *policyKind[RateLimitsPolicy] {
	k := &policyKind[RateLimitsPolicy]{
		what: "rate-limits", idParam: policyIDParam, object: policyObject,
		get: store.Policy, inWS: store.Policies, put: store.PutPolicy,
		ws:       func(p *RateLimitsPolicy) string { return p.WorkspaceID },
		created:  func(p *RateLimitsPolicy) string { return p.CreatedAt },
		status:   func(p *RateLimitsPolicy) string { return p.Status },
		stamp:    func(p *RateLimitsPolicy, now string) { p.LastUpdatedAt = now },
		clone:    func(p *RateLimitsPolicy) *RateLimitsPolicy { c := *p; return &c },
		policyID: func(p *RateLimitsPolicy) string { return p.ID },
	}
	if l, ok := store.(allPoliciesLister); ok {
		k.all = l.AllPolicies
	}
	if cas, ok := store.(PolicyCompareAndSwapper); ok {
		k.swap = cas.CompareAndSwapPolicy
	}
	return k
}

// actsIn reports whether a policy of workspace ws is within the reach of
// the key id: any workspace's for an organisation key, its own for a
// workspace key, never the operator's (ws empty).
func (id Identity) actsIn(ws string) bool {
	return ws != "" && (id.Type == KeyOrganisation || ws == id.WorkspaceID)
}

// policyListWorkspace returns the workspace whose policies a list shows:
// the workspace_id of the query, or the key's own; "" for every workspace
// (an organisation key naming none; a workspace key of no workspace, which
// the caller's filter leaves with nothing). A workspace key naming another
// workspace is a 403.
func policyListWorkspace(id Identity, q url.Values) (string, error) {
	ws, err := workspaceParam(q)
	if err != nil {
		return "", err
	}
	if id.Type == KeyOrganisation {
		return ws, nil
	}
	if ws != "" && ws != id.WorkspaceID {
		return "", &Error{Status: http.StatusForbidden, Type: TypePermission, Code: CodePermissionDenied, Param: "workspace_id",
			Message: "a key may list policies only in its own workspace"}
	}
	return id.WorkspaceID, nil
}

// policyCreateWorkspace returns the workspace of a policy created by id
// with workspace_id named in the body: named, required of an organisation
// key (400 naming workspace_id), or the key's own (403 for another one).
func policyCreateWorkspace(id Identity, named string) (string, error) {
	switch {
	case id.Type == KeyOrganisation && named == "":
		return "", policyInvalid("workspace_id", "workspace_id is required: an organisation key names the workspace of the policy")
	case id.Type == KeyOrganisation:
		if err := checkLabel("workspace_id", named); err != nil {
			return "", err
		}
		return named, nil
	case id.WorkspaceID == "":
		// Its policy would have no workspace: the operator's kind, which
		// applies to every workspace.
		return "", &Error{Status: http.StatusForbidden, Type: TypePermission, Code: CodePermissionDenied,
			Message: "a key without a workspace cannot create policies"}
	case named != "" && named != id.WorkspaceID:
		return "", &Error{Status: http.StatusForbidden, Type: TypePermission, Code: CodePermissionDenied, Param: "workspace_id",
			Message: "a key may create policies only in its own workspace"}
	}
	return id.WorkspaceID, nil
}

// allPoliciesLister is an optional capability of a PolicyStore, found by
// type assertion: AllPolicies returns the policies of every workspace
// (and of none), for an organisation key's list. MemoryStore and
// sqlstore.Store implement it. Without it, such a list shows the policies
// of the workspaces Options.Workspaces registers.
type allPoliciesLister interface {
	AllPolicies(ctx context.Context) ([]RateLimitsPolicy, error)
}

// eachWorkspace calls f with the id of every workspace Options.Workspaces
// registers (none without it).
func (g *Gateway) eachWorkspace(ctx context.Context, f func(ws string) error) error {
	if g.opts.Workspaces == nil {
		return nil
	}
	wss, err := g.opts.Workspaces.Workspaces(ctx)
	if err != nil {
		return err
	}
	for _, w := range wss {
		if err := f(w.ID); err != nil {
			return err
		}
	}
	return nil
}

func (g *Gateway) listPolicies(w http.ResponseWriter, r *http.Request, k *policyKind[RateLimitsPolicy], id Identity) error {
	return list(g, k, w, r, id, httpapi.Paging{Default: policyPageSizeDefault, Min: 0, Max: policyPageSizeMax},
		func(q url.Values) (func(*RateLimitsPolicy) bool, error) {
			typ, err := policyEnum(q, "type", "", PolicyRequests, PolicyTokens)
			if err != nil {
				return nil, err
			}
			unit, err := policyEnum(q, "unit", "", PolicyPerMinute, PolicyPerHour, PolicyPerDay)
			if err != nil {
				return nil, err
			}
			return func(p *RateLimitsPolicy) bool { return (typ == "" || p.Type == typ) && (unit == "" || p.Unit == unit) }, nil
		},
		func(p *RateLimitsPolicy) RateLimitsPolicy { return *p })
}

// policyEnum reads query parameter name, which must be one of values when
// present.
func policyEnum(q url.Values, name, def string, values ...string) (string, error) {
	v, err := httpapi.Enum(q, name, def, values...)
	return v, apiError(err)
}

func (g *Gateway) getPolicy(w http.ResponseWriter, r *http.Request, k *policyKind[RateLimitsPolicy], id Identity, pid string) error {
	// status filters as in the list, active by default: an archived policy
	// is found only with status=archived.
	status, err := policyEnum(r.URL.Query(), "status", PolicyActive, PolicyActive, PolicyArchived)
	if err != nil {
		return err
	}
	p, err := k.lookup(r, id, pid)
	if err != nil {
		return err
	}
	if p.Status != status {
		return k.notFound(pid)
	}
	writeJSON(w, http.StatusOK, struct {
		policyWire
		Object string `json:"object"`
	}{p.wire(), policyObject})
	return nil
}

// policyCreate is the body of POST /policies/rate-limits.
type policyCreate struct {
	Name           *string           `json:"name"`
	Conditions     []PolicyCondition `json:"conditions"`
	GroupBy        []PolicyGroupBy   `json:"group_by"`
	Type           string            `json:"type"`
	Unit           string            `json:"unit"`
	Value          *float64          `json:"value"`
	WorkspaceID    string            `json:"workspace_id"`
	OrganisationID string            `json:"organisation_id"`
}

func (c *policyCreate) head() policyCreateHead {
	return policyCreateHead{c.Name, c.Conditions, c.GroupBy, c.Type, c.WorkspaceID, c.OrganisationID}
}

func (g *Gateway) createPolicy(w http.ResponseWriter, r *http.Request, k *policyKind[RateLimitsPolicy], id Identity) error {
	var c policyCreate
	return create(g, k, w, r, id, &c, c.head,
		func() error {
			if c.Value == nil {
				return policyInvalid("value", "value is required")
			}
			return nil
		},
		func(ws, now string) (*RateLimitsPolicy, error) {
			p := &RateLimitsPolicy{ID: newUUID(), Conditions: c.Conditions, GroupBy: c.GroupBy, Type: c.Type, Unit: c.Unit,
				Value: *c.Value, Status: PolicyActive, WorkspaceID: ws, OrganisationID: c.OrganisationID,
				CreatedAt: now, LastUpdatedAt: now}
			if c.Name != nil {
				p.Name = *c.Name
			}
			if e := p.check(); e != nil {
				return nil, e
			}
			return p, nil
		})
}

// updatePolicy serves PUT: it reads the policy, changes it and writes it
// back (see policyKind.update: with a PolicyCompareAndSwapper store, a
// compare-and-swap).
func (g *Gateway) updatePolicy(w http.ResponseWriter, r *http.Request, k *policyKind[RateLimitsPolicy], id Identity, pid string) error {
	data, err := g.readPolicyBody(w, r)
	if err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		return policyInvalid("", "the body must be a JSON object of name, value and unit")
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
				return policyInvalid("name", "name must be a string of at most 255 bytes, or null")
			}
			if err := checkLabel("name", *name); err != nil {
				return err
			}
		case "value":
			if err := json.Unmarshal(raw, &value); err != nil || value == nil || !(*value > 0) || math.IsInf(*value, 0) {
				return policyInvalid("value", "value must be a number greater than 0")
			}
		case "unit":
			if err := json.Unmarshal(raw, &unit); err != nil || policyPeriod(unit) == 0 {
				return policyInvalid("unit", "unit must be rpm, rph or rpd")
			}
		default:
			return policyInvalid(k, "only name, value and unit of a policy can be changed")
		}
	}
	if len(names) == 0 {
		return policyInvalid("", "the body must set at least one of name, value and unit")
	}
	err = k.update(r, id, pid, func(p *RateLimitsPolicy) error {
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
		if e := p.check(); e != nil {
			return e // e.g. a requests policy lowered below 1
		}
		return nil
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct{}{})
	return nil
}

func (g *Gateway) deletePolicy(w http.ResponseWriter, r *http.Request, store PolicyStore, k *policyKind[RateLimitsPolicy], id Identity, pid string) error {
	if _, err := k.lookup(r, id, pid); err != nil {
		return err
	}
	if err := store.DeletePolicy(r.Context(), pid); err != nil {
		if errors.Is(err, ErrNotFound) {
			return k.notFound(pid)
		}
		return err
	}
	writeJSON(w, http.StatusOK, struct{}{})
	return nil
}

// readPolicyBody reads a control-plane body of at most MaxBodyBytes.
func (g *Gateway) readPolicyBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, policyInvalid("", "a JSON body is required")
	}
	data, err := readBody(w, r, g.opts.MaxBodyBytes)
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return nil, err
		}
		return nil, policyInvalid("", "the body could not be read")
	}
	return data, nil
}

// policyNow returns the time in the fixed-width RFC 3339 form stored in
// created_at and last_updated_at, so that the strings sort by time.
func policyNow() string {
	return time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")
}
