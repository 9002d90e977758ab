package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
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
// every workspace (DESIGN §9): it names the workspace of a new policy with
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
	pid := r.PathValue("id")
	var err error
	if pid == "" {
		switch r.Method {
		case http.MethodGet:
			err = g.listPolicies(w, r, store, id)
		case http.MethodPost:
			err = g.createPolicy(w, r, store, id)
		default:
			methodNotAllowed(w, r, "GET, POST")
			return
		}
	} else {
		switch r.Method {
		case http.MethodGet, http.MethodPut, http.MethodDelete:
		default:
			methodNotAllowed(w, r, "GET, PUT, DELETE")
			return
		}
		if !uuidRE.MatchString(pid) {
			WriteError(w, r, policyInvalid(policyIDParam, "the policy id must be a UUID"))
			return
		}
		pid = strings.ToLower(pid) // ids are stored in lower case
		switch r.Method {
		case http.MethodGet:
			err = g.getPolicy(w, r, store, id, pid)
		case http.MethodPut:
			err = g.updatePolicy(w, r, store, id, pid)
		default:
			err = g.deletePolicy(w, r, store, id, pid)
		}
	}
	if err != nil {
		g.controlPlaneError(w, r, "policy store", err)
	}
}

// policyNotFound is the answer for an unknown policy, and for one of
// another workspace.
func policyNotFound(pid string) *Error {
	return &Error{Status: http.StatusNotFound, Type: TypeNotFound, Code: CodeNotFound,
		Message: "no rate-limits policy " + pid}
}

// lookupPolicy returns the policy pid of the caller's workspace, or of
// any workspace for an organisation key, whose audit record then names
// the policy's workspace. The operator's policies, of no workspace, are
// not found.
func lookupPolicy(r *http.Request, store PolicyStore, id Identity, pid string) (*RateLimitsPolicy, error) {
	p, err := store.Policy(r.Context(), pid)
	if errors.Is(err, ErrNotFound) || err == nil && (p == nil || !id.actsIn(p.WorkspaceID)) {
		return nil, policyNotFound(pid)
	}
	if err != nil {
		return nil, err
	}
	if id.Type == KeyOrganisation {
		auditActedIn(r, p.WorkspaceID)
	}
	return p, nil
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

// AllPoliciesLister is an optional capability of a PolicyStore, found by
// type assertion: AllPolicies returns the policies of every workspace
// (and of none), for an organisation key's list. MemoryStore and
// sqlstore.Store implement it. Without it, such a list shows the policies
// of the workspaces Options.Workspaces registers.
type AllPoliciesLister interface {
	AllPolicies(ctx context.Context) ([]RateLimitsPolicy, error)
}

// listablePolicies returns the policies a list of workspace ws ("" for
// every workspace) looks through; the caller filters them.
func (g *Gateway) listablePolicies(ctx context.Context, store PolicyStore, ws string) ([]RateLimitsPolicy, error) {
	if ws != "" {
		return store.Policies(ctx, ws)
	}
	if l, ok := store.(AllPoliciesLister); ok {
		return l.AllPolicies(ctx)
	}
	var all []RateLimitsPolicy
	err := g.eachWorkspace(ctx, func(ws string) error {
		ps, err := store.Policies(ctx, ws)
		for _, p := range ps {
			if p.WorkspaceID == ws {
				all = append(all, p)
			}
		}
		return err
	})
	sort.SliceStable(all, func(i, j int) bool { return all[i].CreatedAt < all[j].CreatedAt })
	return all, err
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

func (g *Gateway) listPolicies(w http.ResponseWriter, r *http.Request, store PolicyStore, id Identity) error {
	q := r.URL.Query()
	ws, err := policyListWorkspace(id, q)
	if err != nil {
		return err
	}
	status, err := policyEnum(q, "status", PolicyActive, PolicyActive, PolicyArchived)
	if err != nil {
		return err
	}
	typ, err := policyEnum(q, "type", "", PolicyRequests, PolicyTokens)
	if err != nil {
		return err
	}
	unit, err := policyEnum(q, "unit", "", PolicyPerMinute, PolicyPerHour, PolicyPerDay)
	if err != nil {
		return err
	}
	size, err := policyInt(q, "page_size", policyPageSizeDefault, policyPageSizeMax)
	if err != nil {
		return err
	}
	page, err := policyInt(q, "current_page", 0, math.MaxInt32)
	if err != nil {
		return err
	}
	all, err := g.listablePolicies(r.Context(), store, ws)
	if err != nil {
		return err
	}
	data := make([]RateLimitsPolicy, 0, min(len(all), size))
	total := 0
	for _, p := range all {
		if !id.actsIn(p.WorkspaceID) || ws != "" && p.WorkspaceID != ws || p.Status != status || typ != "" && p.Type != typ || unit != "" && p.Unit != unit {
			continue
		}
		if total >= page*size && len(data) < size {
			data = append(data, p)
		}
		total++
	}
	writeJSON(w, http.StatusOK, struct {
		Object string             `json:"object"`
		Data   []RateLimitsPolicy `json:"data"`
		Total  int                `json:"total"`
	}{"list", data, total})
	return nil
}

// policyEnum reads query parameter name, which must be one of values when
// present.
func policyEnum(q map[string][]string, name, def string, values ...string) (string, error) {
	vs, ok := q[name]
	if !ok {
		return def, nil
	}
	for _, v := range values {
		if len(vs) == 1 && vs[0] == v {
			return v, nil
		}
	}
	return "", policyInvalid(name, name+" must be one of "+strings.Join(values, ", "))
}

// policyInt reads query parameter name, an integer from 0 to hi.
func policyInt(q map[string][]string, name string, def, hi int) (int, error) {
	vs, ok := q[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(vs[0])
	if len(vs) != 1 || err != nil || n < 0 || n > hi {
		return 0, policyInvalid(name, name+" must be an integer from 0 to "+strconv.Itoa(hi))
	}
	return n, nil
}

func (g *Gateway) getPolicy(w http.ResponseWriter, r *http.Request, store PolicyStore, id Identity, pid string) error {
	// status filters as in the list, active by default: an archived policy
	// is found only with status=archived.
	status, err := policyEnum(r.URL.Query(), "status", PolicyActive, PolicyActive, PolicyArchived)
	if err != nil {
		return err
	}
	p, err := lookupPolicy(r, store, id, pid)
	if err != nil {
		return err
	}
	if p.Status != status {
		return policyNotFound(pid)
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

func (g *Gateway) createPolicy(w http.ResponseWriter, r *http.Request, store PolicyStore, id Identity) error {
	if id.Type != KeyOrganisation {
		if _, err := policyCreateWorkspace(id, ""); err != nil {
			return err // a workspace key of no workspace: refused before its body is read
		}
	}
	data, err := g.readPolicyBody(w, r)
	if err != nil {
		return err
	}
	var c policyCreate
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
	case c.Value == nil:
		return policyInvalid("value", "value is required")
	case c.OrganisationID != "" && !uuidRE.MatchString(c.OrganisationID):
		return policyInvalid("organisation_id", "organisation_id must be a UUID")
	}
	ws, err := policyCreateWorkspace(id, c.WorkspaceID)
	if err != nil {
		return err
	}
	now := policyNow()
	p := RateLimitsPolicy{
		ID:             newUUID(),
		Conditions:     c.Conditions,
		GroupBy:        c.GroupBy,
		Type:           c.Type,
		Unit:           c.Unit,
		Value:          *c.Value,
		Status:         PolicyActive,
		WorkspaceID:    ws,
		OrganisationID: c.OrganisationID,
		CreatedAt:      now,
		LastUpdatedAt:  now,
	}
	if c.Name != nil {
		if err := checkLabel("name", *c.Name); err != nil {
			return err
		}
		p.Name = *c.Name
	}
	if e := p.check(); e != nil {
		return e
	}
	auditActedIn(r, p.WorkspaceID) // the caller's, or the one an organisation key named
	if err := store.PutPolicy(r.Context(), &p); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		ID     string `json:"id"`
		Object string `json:"object"`
	}{p.ID, policyObject})
	return nil
}

// updatePolicy serves PUT: it reads the policy, changes it and writes it
// back. With a PolicyCompareAndSwapper store the write happens only if the
// policy is still as read, otherwise it is read again, so that a PUT never
// resurrects a policy deleted meanwhile nor undoes a racing PUT.
func (g *Gateway) updatePolicy(w http.ResponseWriter, r *http.Request, store PolicyStore, id Identity, pid string) error {
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
	ctx := r.Context()
	cas, _ := store.(PolicyCompareAndSwapper)
	for try := 0; ; try++ {
		if try == maxPolicySwaps {
			// Others keep changing it (or the store reads back what it
			// never compares equal): give up rather than spin.
			return &Error{Status: http.StatusConflict, Type: TypeInvalidRequest, Code: CodeConflict,
				Message: "policy " + pid + " kept changing during the update; try again"}
		}
		p, err := lookupPolicy(r, store, id, pid)
		if err != nil {
			return err
		}
		old := *p
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
		p.LastUpdatedAt = policyNow()
		if cas == nil {
			if err := store.PutPolicy(ctx, p); err != nil {
				return err
			}
			break
		}
		// Written only if nobody changed or deleted it since it was
		// read; otherwise read it again (another writer made progress).
		swapped, err := cas.CompareAndSwapPolicy(ctx, &old, p)
		if errors.Is(err, ErrNotFound) {
			return policyNotFound(pid)
		}
		if err != nil {
			return err
		}
		if swapped {
			break
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, struct{}{})
	return nil
}

// maxPolicySwaps bounds the compare-and-swap attempts of one PUT.
const maxPolicySwaps = 16

func (g *Gateway) deletePolicy(w http.ResponseWriter, r *http.Request, store PolicyStore, id Identity, pid string) error {
	if _, err := lookupPolicy(r, store, id, pid); err != nil {
		return err
	}
	if err := store.DeletePolicy(r.Context(), pid); err != nil {
		if errors.Is(err, ErrNotFound) {
			return policyNotFound(pid)
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

// policyBodyError turns a JSON decoding error of a create body into a 400
// naming the field.
func policyBodyError(err error) *Error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			return policyInvalid("", "the body must be a JSON object")
		}
		return policyInvalid(field, field+" must be a JSON "+te.Type.Kind().String())
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		f, _ = strconv.Unquote(f)
		return policyInvalid(f, "unknown field "+quoteShort(f))
	}
	return policyInvalid("", "the body is not valid JSON")
}

// policyNow returns the time in the fixed-width RFC 3339 form stored in
// created_at and last_updated_at, so that the strings sort by time.
func policyNow() string {
	return time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")
}
