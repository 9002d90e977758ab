package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/modelgateway/gateway/internal/httpapi"
)

// policyKind is what the rate-limits and usage-limits control planes
// share: policies of type P kept by id, each of one workspace (or of
// none: the operator's), listed, read, created and changed the same way.
// Each route file fills one in; the skeleton of the routes is here once.
type policyKind[P any] struct {
	what    string // "rate-limits", "usage-limits"
	idParam string // the path parameter, as the public API spells it
	object  string // the "object" of a policy in responses

	get      func(ctx context.Context, pid string) (*P, error)
	inWS     func(ctx context.Context, ws string) ([]P, error)
	all      func(ctx context.Context) ([]P, error) // nil: the store lists no workspace's at once
	ws       func(p *P) string
	created  func(p *P) string
	status   func(p *P) string
	stamp    func(p *P, now string) // sets LastUpdatedAt
	clone    func(p *P) *P
	swap     func(ctx context.Context, old, p *P) (bool, error) // nil: the store only puts
	put      func(ctx context.Context, p *P) error
	policyID func(p *P) string
}

// notFound is the answer for an unknown policy, and for one of another
// workspace.
func (k *policyKind[P]) notFound(pid string) *Error { return policyMissing(k.what, pid) }

// policyMissing is the 404 for policy pid of kind what.
func policyMissing(what, pid string) *Error {
	return &Error{Status: http.StatusNotFound, Type: TypeNotFound, Code: CodeNotFound,
		Message: "no " + what + " policy " + pid}
}

// serveItem serves the route of one policy with m: the method is
// checked first (405 with Allow), then *pid, the path's id (a UUID, else
// a 400 naming the path parameter), which is put in lower case, as ids
// are stored, before the handler of the method (which reads *pid) runs.
func (k *policyKind[P]) serveItem(w http.ResponseWriter, r *http.Request, pid *string, m httpapi.Methods) error {
	if err := m.Check(r); err != nil {
		return err
	}
	if !uuidRE.MatchString(*pid) {
		return policyInvalid(k.idParam, "the policy id must be a UUID")
	}
	*pid = strings.ToLower(*pid)
	return m.Serve(w, r)
}

// lookup returns the policy pid of the caller's workspace, or of any
// workspace for an organisation key, whose audit record then names the
// policy's workspace. The operator's policies, of no workspace, are not
// found.
func (k *policyKind[P]) lookup(r *http.Request, id Identity, pid string) (*P, error) {
	p, err := k.get(r.Context(), pid)
	if errors.Is(err, ErrNotFound) || err == nil && (p == nil || !id.actsIn(k.ws(p))) {
		return nil, k.notFound(pid)
	}
	if err != nil {
		return nil, err
	}
	if id.Type == KeyOrganisation {
		auditActedIn(r, k.ws(p))
	}
	return p, nil
}

// listable returns the policies a list of workspace ws ("" for every
// workspace) looks through; the caller filters them. Without the store's
// own list of every workspace's, those of the workspaces
// Options.Workspaces registers.
func (k *policyKind[P]) listable(ctx context.Context, g *Gateway, ws string) ([]P, error) {
	if ws != "" {
		return k.inWS(ctx, ws)
	}
	if k.all != nil {
		return k.all(ctx)
	}
	var all []P
	err := g.eachWorkspace(ctx, func(ws string) error {
		ps, err := k.inWS(ctx, ws)
		for i := range ps {
			if k.ws(&ps[i]) == ws {
				all = append(all, ps[i])
			}
		}
		return err
	})
	sort.SliceStable(all, func(i, j int) bool { return k.created(&all[i]) < k.created(&all[j]) })
	return all, err
}

// list serves GET of the collection: the policies of the workspace the
// query names (policyListWorkspace) with the status asked for (active by
// default), which filters (the kind's own query parameters, read after
// status and before the page) keeps, in pages of paging, answered as
// {"object":"list","data","total"}.
func list[P, W any](g *Gateway, k *policyKind[P], w http.ResponseWriter, r *http.Request, id Identity, paging httpapi.Paging,
	filters func(q url.Values) (func(p *P) bool, error), wire func(p *P) W) error {
	q := r.URL.Query()
	ws, err := policyListWorkspace(id, q)
	if err != nil {
		return err
	}
	status, err := policyEnum(q, "status", PolicyActive, PolicyActive, PolicyArchived)
	if err != nil {
		return err
	}
	keep, err := filters(q)
	if err != nil {
		return err
	}
	page, err := paging.Parse(q)
	if err != nil {
		return apiError(err)
	}
	data, total := []W{}, 0
	if id.Type == KeyOrganisation || id.WorkspaceID != "" { // else no policy is within its reach
		all, err := k.listable(r.Context(), g, ws)
		if err != nil {
			return err
		}
		data, total = httpapi.Filter(all, func(p *P) bool {
			return id.actsIn(k.ws(p)) && (ws == "" || k.ws(p) == ws) && k.status(p) == status && keep(p)
		}, wire, page)
	}
	writeJSON(w, http.StatusOK, struct {
		Object string `json:"object"`
		Data   []W    `json:"data"`
		Total  int    `json:"total"`
	}{"list", data, total})
	return nil
}

// policyCreateHead is the fields every policy's create body has. The
// bodies repeat them rather than embed it: encoding/json names a field of
// an embedded struct by its path (policyCreateHead.name) in a type error,
// which would change the param of the 400.
type policyCreateHead struct {
	Name           *string
	Conditions     []PolicyCondition
	GroupBy        []PolicyGroupBy
	Type           string
	WorkspaceID    string
	OrganisationID string
}

// create serves POST of the collection: a key of no workspace is refused
// before its body is read; the body b (whose shared fields head returns)
// is decoded strictly, its shared fields checked around the kind's own (check),
// then build makes the policy of the workspace it goes to, named label
// checked, which is stored and answered as {"id","object"}.
func create[B, P any](g *Gateway, k *policyKind[P], w http.ResponseWriter, r *http.Request, id Identity, b *B, head func() policyCreateHead,
	check func() error, build func(ws, now string) (*P, error)) error {
	if id.Type != KeyOrganisation {
		if _, err := policyCreateWorkspace(id, ""); err != nil {
			return err // a workspace key of no workspace: refused before its body is read
		}
	}
	if err := g.decodeStrict(w, r, b, false); err != nil {
		return err
	}
	h := head()
	switch {
	case len(h.Conditions) == 0:
		return policyInvalid("conditions", "conditions must hold at least one condition")
	case len(h.GroupBy) == 0:
		return policyInvalid("group_by", "group_by must hold at least one key")
	}
	if err := check(); err != nil {
		return err
	}
	if h.OrganisationID != "" && !uuidRE.MatchString(h.OrganisationID) {
		return policyInvalid("organisation_id", "organisation_id must be a UUID")
	}
	ws, err := policyCreateWorkspace(id, h.WorkspaceID)
	if err != nil {
		return err
	}
	if h.Name != nil {
		if err := checkLabel("name", *h.Name); err != nil {
			return err
		}
	}
	p, err := build(ws, policyNow())
	if err != nil {
		return err
	}
	auditActedIn(r, ws) // the caller's, or the one an organisation key named
	if err := k.put(r.Context(), p); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		ID     string `json:"id"`
		Object string `json:"object"`
	}{k.policyID(p), k.object})
	return nil
}

// update reads policy pid of the caller's workspace (any workspace's for
// an organisation key), changes it with change and writes it back. With
// the kind's compare-and-swap the write happens only if nobody changed
// the policy since it was read, reading it again otherwise (at most
// maxPolicySwaps times), so that an update never resurrects a policy
// deleted meanwhile nor undoes a racing one. change returns an error to
// give up; it may be called more than once.
func (k *policyKind[P]) update(r *http.Request, id Identity, pid string, change func(p *P) error) error {
	ctx := r.Context()
	err := httpapi.Swap(ctx, maxPolicySwaps, func() (bool, error) {
		p, err := k.lookup(r, id, pid)
		if err != nil {
			return false, err
		}
		old := k.clone(p)
		if err := change(p); err != nil {
			return false, err
		}
		k.stamp(p, policyNow())
		if k.swap == nil {
			return true, k.put(ctx, p)
		}
		swapped, err := k.swap(ctx, old, p)
		if errors.Is(err, ErrNotFound) {
			return false, k.notFound(pid)
		}
		return swapped, err
	})
	if errors.Is(err, httpapi.ErrKeptChanging) {
		// Others keep changing it (or the store reads back what it
		// never compares equal): give up rather than spin.
		return &Error{Status: http.StatusConflict, Type: TypeInvalidRequest, Code: CodeConflict,
			Message: "policy " + pid + " kept changing during the update; try again"}
	}
	return err
}

// maxPolicySwaps bounds the compare-and-swap attempts of one PUT.
const maxPolicySwaps = 16
