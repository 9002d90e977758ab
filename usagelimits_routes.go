package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"
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
	pid := r.PathValue("id")
	entities := strings.HasSuffix(r.URL.Path, "/entities")
	reset := r.PathValue("entityId") != ""
	var err error
	switch {
	case pid == "":
		switch r.Method {
		case http.MethodGet:
			err = g.listUsageLimits(w, r, store, id)
		case http.MethodPost:
			err = g.createUsageLimits(w, r, store, id)
		default:
			methodNotAllowed(w, r, "GET, POST")
			return
		}
	default:
		allow, ok := "GET, PUT, DELETE", r.Method == http.MethodGet || r.Method == http.MethodPut || r.Method == http.MethodDelete
		switch {
		case entities:
			allow, ok = "GET", r.Method == http.MethodGet
		case reset:
			allow, ok = "PUT", r.Method == http.MethodPut
		}
		if !ok {
			methodNotAllowed(w, r, allow)
			return
		}
		if !uuidRE.MatchString(pid) {
			WriteError(w, r, policyInvalid(usageIDParam, "the policy id must be a UUID"))
			return
		}
		pid = strings.ToLower(pid)
		switch {
		case entities:
			err = g.listUsageEntities(w, r, store, id, pid)
		case reset:
			err = g.resetUsageEntity(w, r, store, id, pid, r.PathValue("entityId"))
		case r.Method == http.MethodGet:
			err = g.getUsageLimits(w, r, store, id, pid)
		case r.Method == http.MethodPut:
			err = g.updateUsageLimits(w, r, store, id, pid)
		default:
			err = g.archiveUsageLimits(w, r, store, id, pid)
		}
	}
	if err != nil {
		g.controlPlaneError(w, r, "usage-limits policy store", err)
	}
}

// usageNotFound is the answer for an unknown policy, and for one of
// another workspace.
func usageNotFound(pid string) *Error {
	return &Error{Status: http.StatusNotFound, Type: TypeNotFound, Code: CodeNotFound,
		Message: "no usage-limits policy " + pid}
}

// lookupUsageLimits returns the policy pid of the caller's workspace, or
// of any workspace for an organisation key, whose audit record then names
// the policy's workspace.
func lookupUsageLimits(r *http.Request, store UsageLimitsStore, id Identity, pid string) (*UsageLimitsPolicy, error) {
	p, err := store.UsageLimitsPolicy(r.Context(), pid)
	if errors.Is(err, ErrNotFound) || err == nil && (p == nil || !id.actsIn(p.WorkspaceID)) {
		return nil, usageNotFound(pid)
	}
	if err != nil {
		return nil, err
	}
	if id.Type == KeyOrganisation {
		auditActedIn(r, p.WorkspaceID)
	}
	return p, nil
}

// AllUsageLimitsLister is an optional capability of a UsageLimitsStore,
// found by type assertion: AllUsageLimitsPolicies returns the policies of
// every workspace, for an organisation key's list; callers must not
// modify them. MemoryStore and sqlstore.Store implement it. Without it,
// such a list shows the policies of the workspaces Options.Workspaces
// registers.
type AllUsageLimitsLister interface {
	AllUsageLimitsPolicies(ctx context.Context) ([]UsageLimitsPolicy, error)
}

// listableUsageLimits returns the policies a list of workspace ws ("" for
// every workspace) looks through; the caller filters them.
func (g *Gateway) listableUsageLimits(ctx context.Context, store UsageLimitsStore, ws string) ([]UsageLimitsPolicy, error) {
	if ws != "" {
		return store.UsageLimitsPolicies(ctx, ws)
	}
	if l, ok := store.(AllUsageLimitsLister); ok {
		return l.AllUsageLimitsPolicies(ctx)
	}
	var all []UsageLimitsPolicy
	err := g.eachWorkspace(ctx, func(ws string) error {
		ps, err := store.UsageLimitsPolicies(ctx, ws)
		all = append(all, ps...)
		return err
	})
	sort.SliceStable(all, func(i, j int) bool { return all[i].CreatedAt < all[j].CreatedAt })
	return all, err
}

func (g *Gateway) listUsageLimits(w http.ResponseWriter, r *http.Request, store UsageLimitsStore, id Identity) error {
	q := r.URL.Query()
	ws, err := policyListWorkspace(id, q)
	if err != nil {
		return err
	}
	status, err := policyEnum(q, "status", PolicyActive, PolicyActive, PolicyArchived)
	if err != nil {
		return err
	}
	typ, err := policyEnum(q, "type", "", UsageCost, UsageTokens)
	if err != nil {
		return err
	}
	size, page, err := pageParams(q)
	if err != nil {
		return err
	}
	data := []usageLimitsWire{}
	total := 0
	if id.Type == KeyOrganisation || id.WorkspaceID != "" {
		all, err := g.listableUsageLimits(r.Context(), store, ws)
		if err != nil {
			return err
		}
		now := g.clock()
		for i := range all {
			p := &all[i]
			if !id.actsIn(p.WorkspaceID) || ws != "" && p.WorkspaceID != ws || p.Status != status || typ != "" && p.Type != typ {
				continue
			}
			if total >= page*size && len(data) < size {
				data = append(data, p.wire(now))
			}
			total++
		}
	}
	writeJSON(w, http.StatusOK, struct {
		Object string            `json:"object"`
		Data   []usageLimitsWire `json:"data"`
		Total  int               `json:"total"`
	}{"list", data, total})
	return nil
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

func (g *Gateway) createUsageLimits(w http.ResponseWriter, r *http.Request, store UsageLimitsStore, id Identity) error {
	if id.Type != KeyOrganisation {
		if _, err := policyCreateWorkspace(id, ""); err != nil {
			return err // a workspace key of no workspace: refused before its body is read
		}
	}
	data, err := g.readPolicyBody(w, r)
	if err != nil {
		return err
	}
	var c usageCreate
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return policyBodyError(err)
	}
	if dec.More() {
		return policyInvalid("", "the body must be a single JSON object")
	}
	switch {
	case len(c.Conditions) == 0:
		return policyInvalid("conditions", "conditions must hold at least one condition")
	case len(c.GroupBy) == 0:
		return policyInvalid("group_by", "group_by must hold at least one key")
	case c.Type == "":
		return policyInvalid("type", "type is required: cost or tokens")
	case c.CreditLimit == nil:
		return policyInvalid("credit_limit", "credit_limit is required")
	case c.PeriodicResetDays != nil && *c.PeriodicResetDays < 1:
		return policyInvalid("periodic_reset_days", "periodic_reset_days must be an integer from 1 to 365, or null")
	case c.OrganisationID != "" && !uuidRE.MatchString(c.OrganisationID):
		return policyInvalid("organisation_id", "organisation_id must be a UUID")
	}
	ws, err := policyCreateWorkspace(id, c.WorkspaceID)
	if err != nil {
		return err
	}
	now := policyNow()
	p := UsageLimitsPolicy{ID: newUUID(), Conditions: c.Conditions, GroupBy: c.GroupBy, Type: c.Type,
		CreditLimit: *c.CreditLimit, AlertThreshold: c.AlertThreshold, Status: PolicyActive, WorkspaceID: ws,
		OrganisationID: c.OrganisationID, CreatedAt: now, LastUpdatedAt: now}
	if c.Name != nil {
		if err := checkLabel("name", *c.Name); err != nil {
			return err
		}
		p.Name = *c.Name
	}
	if c.PeriodicReset != nil {
		p.PeriodicReset = *c.PeriodicReset
		if p.PeriodicReset == "" {
			return policyInvalid("periodic_reset", "periodic_reset must be weekly, monthly or null")
		}
	}
	if c.PeriodicResetDays != nil {
		p.PeriodicResetDays = *c.PeriodicResetDays
	}
	if e := p.check(); e != nil {
		return e
	}
	auditActedIn(r, p.WorkspaceID) // the caller's, or the one an organisation key named
	if err := store.PutUsageLimitsPolicy(r.Context(), &p); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		ID     string `json:"id"`
		Object string `json:"object"`
	}{p.ID, usageObject})
	return nil
}

// swapUsageLimits reads policy pid of the caller's workspace (any
// workspace's for an organisation key), changes it
// with change and writes it back only if nobody changed it since it was
// read, reading it again otherwise (at most maxPolicySwaps times).
// change returns an error to give up; it may be called more than once.
func swapUsageLimits(r *http.Request, store UsageLimitsStore, id Identity, pid string, change func(p *UsageLimitsPolicy) error) error {
	ctx := r.Context()
	for try := 0; ; try++ {
		if try == maxPolicySwaps {
			return &Error{Status: http.StatusConflict, Type: TypeInvalidRequest, Code: CodeConflict,
				Message: "policy " + pid + " kept changing during the update; try again"}
		}
		p, err := lookupUsageLimits(r, store, id, pid)
		if err != nil {
			return err
		}
		old := cloneUsageLimits(p)
		if err := change(p); err != nil {
			return err
		}
		p.LastUpdatedAt = policyNow()
		swapped, err := store.CompareAndSwapUsageLimitsPolicy(ctx, old, p)
		if errors.Is(err, ErrNotFound) {
			return usageNotFound(pid)
		}
		if err != nil || swapped {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
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
