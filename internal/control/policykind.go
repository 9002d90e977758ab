package control

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// PolicyKind is what the routes of policies kept by id share (rate-limits
// and, later, usage-limits policies): policies of type P, each of one
// workspace (or of none: the operator's), listed, read, created and
// changed the same way. Each product fills one in; the skeleton of the
// routes is here once.
type PolicyKind[P any] struct {
	What    string // "rate-limits", "usage-limits"
	IDParam string // the path parameter, as the public API spells it
	Object  string // the "object" of a policy in answers

	Get      func(ctx context.Context, pid string) (*P, error)
	InWS     func(ctx context.Context, ws string) ([]P, error)
	All      func(ctx context.Context) ([]P, error) // nil: the store lists no workspace's at once
	WS       func(p *P) string
	Created  func(p *P) string
	Status   func(p *P) string
	Stamp    func(p *P, now string) // sets the time of the last update
	Clone    func(p *P) *P
	Swap     func(ctx context.Context, old, p *P) (bool, error) // nil: the store only puts
	Put      func(ctx context.Context, p *P) error
	PolicyID func(p *P) string

	// Workspaces lists the workspaces whose policies an organisation
	// key's list of every workspace shows when All is nil (none when
	// nil).
	Workspaces func(ctx context.Context) ([]gateway.Workspace, error)
}

// NotFound is the answer for an unknown policy, and for one of another
// workspace.
func (k *PolicyKind[P]) NotFound(pid string) *gateway.Error {
	return NotFound("no " + k.What + " policy " + pid)
}

// ServeItem serves the route of one policy with m: the method is checked
// first (405 with Allow), then *pid, the path's id (a UUID, else a 400
// naming the path parameter), which is put in lower case, as ids are
// stored, before the handler of the method (which reads *pid) runs.
func (k *PolicyKind[P]) ServeItem(w http.ResponseWriter, r *http.Request, pid *string, m httpapi.Methods) error {
	if err := m.Check(r); err != nil {
		return err
	}
	if !ValidUUID(*pid) {
		return Invalid(k.IDParam, "the policy id must be a UUID")
	}
	*pid = strings.ToLower(*pid)
	return m.Serve(w, r)
}

// Lookup returns the policy pid of the caller's workspace, or of any
// workspace for an organisation key, whose audit record then names the
// policy's workspace. The operator's policies, of no workspace, are not
// found.
func (k *PolicyKind[P]) Lookup(r *http.Request, id gateway.Identity, pid string) (*P, error) {
	p, err := k.Get(r.Context(), pid)
	if errors.Is(err, gateway.ErrNotFound) || err == nil && (p == nil || !ActsIn(id, k.WS(p))) {
		return nil, k.NotFound(pid)
	}
	if err != nil {
		return nil, err
	}
	if id.Type == gateway.KeyOrganisation {
		ActedIn(r, k.WS(p))
	}
	return p, nil
}

// Read serves the lookup of GET of one policy: the status query
// parameter filters as in the list (active by default, so that an
// archived policy is found only with status=archived), then query (the
// kind's own parameters; nil for none) is checked, then the policy pid
// is looked up (Lookup) and must have that status.
func (k *PolicyKind[P]) Read(r *http.Request, id gateway.Identity, pid string, query func(q url.Values) error) (*P, error) {
	q := r.URL.Query()
	status, err := Enum(q, "status", gateway.PolicyActive, gateway.PolicyActive, gateway.PolicyArchived)
	if err != nil {
		return nil, err
	}
	if query != nil {
		if err := query(q); err != nil {
			return nil, err
		}
	}
	p, err := k.Lookup(r, id, pid)
	if err != nil {
		return nil, err
	}
	if k.Status(p) != status {
		return nil, k.NotFound(pid)
	}
	return p, nil
}

// listable returns the policies a list of workspace ws ("" for every
// workspace) looks through; the caller filters them.
func (k *PolicyKind[P]) listable(ctx context.Context, ws string) ([]P, error) {
	if ws != "" {
		return k.InWS(ctx, ws)
	}
	if k.All != nil {
		return k.All(ctx)
	}
	if k.Workspaces == nil {
		return nil, nil
	}
	wss, err := k.Workspaces(ctx)
	if err != nil {
		return nil, err
	}
	var all []P
	for _, w := range wss {
		ps, err := k.InWS(ctx, w.ID)
		for i := range ps {
			if k.WS(&ps[i]) == w.ID {
				all = append(all, ps[i])
			}
		}
		if err != nil {
			return nil, err
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return k.Created(&all[i]) < k.Created(&all[j]) })
	return all, nil
}

// ListPolicies serves GET of the collection: the policies of the
// workspace the query names (PolicyListWorkspace) with the status asked
// for (active by default), which filters (the kind's own query
// parameters, read after status and before the page) keeps, in pages of
// paging, answered as {"object":"list","data","total"}.
func ListPolicies[P, W any](k *PolicyKind[P], w http.ResponseWriter, r *http.Request, id gateway.Identity, paging httpapi.Paging,
	filters func(q url.Values) (func(p *P) bool, error), wire func(p *P) W) error {
	q := r.URL.Query()
	ws, err := PolicyListWorkspace(id, q)
	if err != nil {
		return err
	}
	status, err := Enum(q, "status", gateway.PolicyActive, gateway.PolicyActive, gateway.PolicyArchived)
	if err != nil {
		return err
	}
	keep, err := filters(q)
	if err != nil {
		return err
	}
	page, err := paging.Parse(q)
	if err != nil {
		return Translate(err)
	}
	data, total := []W{}, 0
	if id.Type == gateway.KeyOrganisation || id.WorkspaceID != "" { // else no policy is within its reach
		all, err := k.listable(r.Context(), ws)
		if err != nil {
			return err
		}
		data, total = httpapi.Filter(all, func(p *P) bool {
			return ActsIn(id, k.WS(p)) && (ws == "" || k.WS(p) == ws) && k.Status(p) == status && keep(p)
		}, wire, page)
	}
	httpapi.WriteJSON(w, http.StatusOK, struct {
		Object string `json:"object"`
		Data   []W    `json:"data"`
		Total  int    `json:"total"`
	}{"list", data, total})
	return nil
}

// PolicyHead is the fields every policy's create body has. The bodies
// repeat them rather than embed it: encoding/json names a field of an
// embedded struct by its path (PolicyHead.name) in a type error, which
// would change the param of the 400.
type PolicyHead struct {
	Name           *string
	Conditions     []gateway.PolicyCondition
	GroupBy        []gateway.PolicyGroupBy
	Type           string
	WorkspaceID    string
	OrganisationID string
}

// CreatePolicy serves POST of the collection: a key of no workspace is
// refused before its body is read; the body b (whose shared fields head
// returns) is decoded strictly, its shared fields checked around the
// kind's own (check), then build makes the policy of the workspace it
// goes to, named label checked, which is stored and answered as
// {"id","object"}.
func CreatePolicy[B, P any](k *PolicyKind[P], w http.ResponseWriter, r *http.Request, id gateway.Identity, b *B, head func() PolicyHead,
	check func() error, build func(ws, now string) (*P, error)) error {
	if id.Type != gateway.KeyOrganisation {
		if _, err := PolicyCreateWorkspace(id, ""); err != nil {
			return err // a workspace key of no workspace: refused before its body is read
		}
	}
	if err := Decode(r, b, false); err != nil {
		return err
	}
	h := head()
	switch {
	case len(h.Conditions) == 0:
		return Invalid("conditions", "conditions must hold at least one condition")
	case len(h.GroupBy) == 0:
		return Invalid("group_by", "group_by must hold at least one key")
	}
	if err := check(); err != nil {
		return err
	}
	if h.OrganisationID != "" && !ValidUUID(h.OrganisationID) {
		return Invalid("organisation_id", "organisation_id must be a UUID")
	}
	ws, err := PolicyCreateWorkspace(id, h.WorkspaceID)
	if err != nil {
		return err
	}
	if h.Name != nil {
		if err := Label("name", *h.Name); err != nil {
			return err
		}
	}
	p, err := build(ws, PolicyNow())
	if err != nil {
		return err
	}
	ActedIn(r, ws) // the caller's, or the one an organisation key named
	if err := k.Put(r.Context(), p); err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, struct {
		ID     string `json:"id"`
		Object string `json:"object"`
	}{k.PolicyID(p), k.Object})
	return nil
}

// Update reads policy pid of the caller's workspace (any workspace's for
// an organisation key), changes it with change and writes it back. With
// the kind's compare-and-swap the write happens only if nobody changed
// the policy since it was read, reading it again otherwise (at most
// Swaps times), so that an update never resurrects a policy deleted
// meanwhile nor undoes a racing one. change returns an error to give up;
// it may be called more than once.
func (k *PolicyKind[P]) Update(r *http.Request, id gateway.Identity, pid string, change func(p *P) error) error {
	ctx := r.Context()
	err := httpapi.Swap(ctx, Swaps, func() (bool, error) {
		p, err := k.Lookup(r, id, pid)
		if err != nil {
			return false, err
		}
		old := k.Clone(p)
		if err := change(p); err != nil {
			return false, err
		}
		k.Stamp(p, PolicyNow())
		if k.Swap == nil {
			return true, k.Put(ctx, p)
		}
		swapped, err := k.Swap(ctx, old, p)
		if errors.Is(err, gateway.ErrNotFound) {
			return false, k.NotFound(pid)
		}
		return swapped, err
	})
	if errors.Is(err, httpapi.ErrKeptChanging) {
		// Others keep changing it (or the store reads back what it
		// never compares equal): give up rather than spin.
		return Conflict("", "policy "+pid+" kept changing during the update; try again")
	}
	return err
}

// PolicyListWorkspace returns the workspace whose policies a list shows:
// the workspace_id of the query, or the key's own; "" for every workspace
// (an organisation key naming none; a workspace key of no workspace, which
// the caller's filter leaves with nothing). A workspace key naming another
// workspace is a 403.
func PolicyListWorkspace(id gateway.Identity, q url.Values) (string, error) {
	ws, err := WorkspaceParam(q)
	if err != nil {
		return "", err
	}
	if id.Type == gateway.KeyOrganisation {
		return ws, nil
	}
	if ws != "" && ws != id.WorkspaceID {
		return "", Forbidden("workspace_id", "a key may list policies only in its own workspace")
	}
	return id.WorkspaceID, nil
}

// PolicyCreateWorkspace returns the workspace of a policy created by id
// with workspace_id named in the body: named, required of an organisation
// key (400 naming workspace_id), or the key's own (403 for another one).
func PolicyCreateWorkspace(id gateway.Identity, named string) (string, error) {
	switch {
	case id.Type == gateway.KeyOrganisation && named == "":
		return "", Invalid("workspace_id", "workspace_id is required: an organisation key names the workspace of the policy")
	case id.Type == gateway.KeyOrganisation:
		if err := Label("workspace_id", named); err != nil {
			return "", err
		}
		return named, nil
	case id.WorkspaceID == "":
		// Its policy would have no workspace: the operator's kind, which
		// applies to every workspace.
		return "", Forbidden("", "a key without a workspace cannot create policies")
	case named != "" && named != id.WorkspaceID:
		return "", Forbidden("workspace_id", "a key may create policies only in its own workspace")
	}
	return id.WorkspaceID, nil
}

// PolicyNow returns the time in the fixed-width RFC 3339 form policies
// store in created_at and last_updated_at, so that the strings sort by
// time.
func PolicyNow() string {
	return time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")
}
