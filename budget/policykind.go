// Shared with admin's rate-limits routes: to be unified with the control-plane kit.

package budget

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/httpapi"
	"github.com/modelgateway/gateway/observe"
)

// policyKind is what the policy control planes share: policies of type P
// kept by id, each of one workspace (or of none: the operator's), listed,
// read, created and changed the same way. The route file fills one in;
// the skeleton of the routes is here once.
type policyKind[P any] struct {
	what    string // "usage-limits"
	idParam string // the path parameter, as the public API spells it
	object  string // the "object" of a policy in responses

	get      func(ctx context.Context, pid string) (*P, error)
	inWS     func(ctx context.Context, ws string) ([]P, error)
	all      func(ctx context.Context) ([]P, error)                 // nil: the store lists no workspace's at once
	wss      func(ctx context.Context) ([]gateway.Workspace, error) // the registered workspaces; nil: none
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
func (k *policyKind[P]) notFound(pid string) *gateway.Error {
	return &gateway.Error{Status: http.StatusNotFound, Type: gateway.TypeNotFound, Code: gateway.CodeNotFound,
		Message: "no " + k.what + " policy " + pid}
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
		return invalid(k.idParam, "the policy id must be a UUID")
	}
	*pid = strings.ToLower(*pid)
	return m.Serve(w, r)
}

// lookup returns the policy pid of the caller's workspace, or of any
// workspace for an organisation key, whose audit record then names the
// policy's workspace. The operator's policies, of no workspace, are not
// found.
func (k *policyKind[P]) lookup(r *http.Request, id gateway.Identity, pid string) (*P, error) {
	p, err := k.get(r.Context(), pid)
	if errors.Is(err, gateway.ErrNotFound) || err == nil && (p == nil || !actsIn(id, k.ws(p))) {
		return nil, k.notFound(pid)
	}
	if err != nil {
		return nil, err
	}
	if id.Type == gateway.KeyOrganisation {
		observe.ActedIn(r, k.ws(p))
	}
	return p, nil
}

// listable returns the policies a list of workspace ws ("" for every
// workspace) looks through; the caller filters them. Without the store's
// own list of every workspace's, those of the registered workspaces.
func (k *policyKind[P]) listable(ctx context.Context, ws string) ([]P, error) {
	if ws != "" {
		return k.inWS(ctx, ws)
	}
	if k.all != nil {
		return k.all(ctx)
	}
	if k.wss == nil {
		return nil, nil
	}
	wss, err := k.wss(ctx)
	if err != nil {
		return nil, err
	}
	var all []P
	for _, w := range wss {
		ps, err := k.inWS(ctx, w.ID)
		if err != nil {
			return nil, err
		}
		for i := range ps {
			if k.ws(&ps[i]) == w.ID {
				all = append(all, ps[i])
			}
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return k.created(&all[i]) < k.created(&all[j]) })
	return all, nil
}

// list serves GET of the collection: the policies of the workspace the
// query names (listWorkspace) with the status asked for (active by
// default), which filters (the kind's own query parameters, read after
// status and before the page) keeps, in pages of paging, answered as
// {"object":"list","data","total"}.
func list[P, W any](k *policyKind[P], w http.ResponseWriter, r *http.Request, id gateway.Identity, paging httpapi.Paging,
	filters func(q url.Values) (func(p *P) bool, error), wire func(p *P) W) error {
	q := r.URL.Query()
	ws, err := listWorkspace(id, q)
	if err != nil {
		return err
	}
	status, err := enum(q, "status", gateway.PolicyActive, gateway.PolicyActive, gateway.PolicyArchived)
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
	if id.Type == gateway.KeyOrganisation || id.WorkspaceID != "" { // else no policy is within its reach
		all, err := k.listable(r.Context(), ws)
		if err != nil {
			return err
		}
		data, total = httpapi.Filter(all, func(p *P) bool {
			return actsIn(id, k.ws(p)) && (ws == "" || k.ws(p) == ws) && k.status(p) == status && keep(p)
		}, wire, page)
	}
	writeJSON(w, http.StatusOK, struct {
		Object string `json:"object"`
		Data   []W    `json:"data"`
		Total  int    `json:"total"`
	}{"list", data, total})
	return nil
}

// createHead is the fields every policy's create body has. The bodies
// repeat them rather than embed it: encoding/json names a field of an
// embedded struct by its path (createHead.name) in a type error, which
// would change the param of the 400.
type createHead struct {
	Name           *string
	Conditions     []gateway.PolicyCondition
	GroupBy        []gateway.PolicyGroupBy
	Type           string
	WorkspaceID    string
	OrganisationID string
}

// create serves POST of the collection: a key of no workspace is refused
// before its body is read; the body b (whose shared fields head returns)
// is decoded strictly from a body of at most limit bytes, its shared
// fields checked around the kind's own (check), then build makes the
// policy of the workspace it goes to, named label checked, which is
// stored and answered as {"id","object"}.
func create[B, P any](k *policyKind[P], w http.ResponseWriter, r *http.Request, id gateway.Identity, limit int64, b *B,
	head func() createHead, check func() error, build func(ws, now string) (*P, error)) error {
	if id.Type != gateway.KeyOrganisation {
		if _, err := createWorkspace(id, ""); err != nil {
			return err // a workspace key of no workspace: refused before its body is read
		}
	}
	data, err := readBody(w, r, limit)
	if err != nil {
		return err
	}
	if err := apiError(httpapi.DecodeStrict(data, b)); err != nil {
		return err
	}
	h := head()
	switch {
	case len(h.Conditions) == 0:
		return invalid("conditions", "conditions must hold at least one condition")
	case len(h.GroupBy) == 0:
		return invalid("group_by", "group_by must hold at least one key")
	}
	if err := check(); err != nil {
		return err
	}
	if h.OrganisationID != "" && !uuidRE.MatchString(h.OrganisationID) {
		return invalid("organisation_id", "organisation_id must be a UUID")
	}
	ws, err := createWorkspace(id, h.WorkspaceID)
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
	observe.ActedIn(r, ws) // the caller's, or the one an organisation key named
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
func (k *policyKind[P]) update(r *http.Request, id gateway.Identity, pid string, change func(p *P) error) error {
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
		if errors.Is(err, gateway.ErrNotFound) {
			return false, k.notFound(pid)
		}
		return swapped, err
	})
	if errors.Is(err, httpapi.ErrKeptChanging) {
		// Others keep changing it (or the store reads back what it
		// never compares equal): give up rather than spin.
		return &gateway.Error{Status: http.StatusConflict, Type: gateway.TypeInvalidRequest, Code: gateway.CodeConflict,
			Message: "policy " + pid + " kept changing during the update; try again"}
	}
	return err
}

// maxPolicySwaps bounds the compare-and-swap attempts of one PUT.
const maxPolicySwaps = 16

// actsIn reports whether a policy of workspace ws is within the reach of
// the key id: any workspace's for an organisation key, its own for a
// workspace key, never the operator's (ws empty).
func actsIn(id gateway.Identity, ws string) bool {
	return ws != "" && (id.Type == gateway.KeyOrganisation || ws == id.WorkspaceID)
}

// listWorkspace returns the workspace whose policies a list shows: the
// workspace_id of the query, or the key's own; "" for every workspace
// (an organisation key naming none; a workspace key of no workspace,
// which the caller's filter leaves with nothing). A workspace key naming
// another workspace is a 403.
func listWorkspace(id gateway.Identity, q url.Values) (string, error) {
	ws, err := httpapi.WorkspaceParam(q)
	if err != nil {
		return "", apiError(err)
	}
	if id.Type == gateway.KeyOrganisation {
		return ws, nil
	}
	if ws != "" && ws != id.WorkspaceID {
		return "", &gateway.Error{Status: http.StatusForbidden, Type: gateway.TypePermission, Code: gateway.CodePermissionDenied,
			Param: "workspace_id", Message: "a key may list policies only in its own workspace"}
	}
	return id.WorkspaceID, nil
}

// createWorkspace returns the workspace of a policy created by id with
// workspace_id named in the body: named, required of an organisation key
// (400 naming workspace_id), or the key's own (403 for another one).
func createWorkspace(id gateway.Identity, named string) (string, error) {
	switch {
	case id.Type == gateway.KeyOrganisation && named == "":
		return "", invalid("workspace_id", "workspace_id is required: an organisation key names the workspace of the policy")
	case id.Type == gateway.KeyOrganisation:
		if err := checkLabel("workspace_id", named); err != nil {
			return "", err
		}
		return named, nil
	case id.WorkspaceID == "":
		// Its policy would have no workspace: the operator's kind, which
		// applies to every workspace.
		return "", &gateway.Error{Status: http.StatusForbidden, Type: gateway.TypePermission, Code: gateway.CodePermissionDenied,
			Message: "a key without a workspace cannot create policies"}
	case named != "" && named != id.WorkspaceID:
		return "", &gateway.Error{Status: http.StatusForbidden, Type: gateway.TypePermission, Code: gateway.CodePermissionDenied,
			Param: "workspace_id", Message: "a key may create policies only in its own workspace"}
	}
	return id.WorkspaceID, nil
}

// scoped returns the caller of r when it holds the scope r needs: read
// for a GET, write for anything else. Otherwise it answers the 403
// naming the missing scope and reports false.
func scoped(w http.ResponseWriter, r *http.Request, read, write gateway.Scope) (gateway.Identity, bool) {
	id, _ := gateway.IdentityFrom(r.Context())
	need := write
	if r.Method == http.MethodGet {
		need = read
	}
	if !id.Can(need) {
		gateway.WriteError(w, r, &gateway.Error{Status: http.StatusForbidden, Type: gateway.TypePermission,
			Code: gateway.CodePermissionDenied, Message: "this gateway API key lacks the " + string(need) + " scope"})
		return id, false
	}
	return id, true
}

// answerError answers err, logging it first to log when it is the
// store's own failure rather than a refusal of the request: a
// *httpapi.MethodError is the 405 with its Allow header, a
// *httpapi.FieldError the 400 naming its field.
func answerError(w http.ResponseWriter, r *http.Request, log *slog.Logger, what string, err error) {
	err = apiError(err)
	var me *httpapi.MethodError
	if errors.As(err, &me) {
		w.Header().Set("Allow", me.Allow)
		gateway.WriteError(w, r, &gateway.Error{Status: http.StatusMethodNotAllowed, Type: gateway.TypeInvalidRequest,
			Code: gateway.CodeMethodNotAllowed, Message: r.Method + " is not allowed on " + r.URL.Path + "; allowed: " + me.Allow})
		return
	}
	if ge := (*gateway.Error)(nil); !errors.As(err, &ge) && !errors.As(err, new(*http.MaxBytesError)) {
		log.ErrorContext(r.Context(), "gateway: "+what, "err", err)
	}
	gateway.WriteError(w, r, err)
}

// apiError turns a *httpapi.FieldError into the 400 invalid_parameter
// naming its field; other errors are returned as they are.
func apiError(err error) error {
	var fe *httpapi.FieldError
	if errors.As(err, &fe) {
		return invalid(fe.Param, fe.Message)
	}
	return err
}

// enum reads query parameter name, which must be one of values when
// present.
func enum(q url.Values, name, def string, values ...string) (string, error) {
	v, err := httpapi.Enum(q, name, def, values...)
	return v, apiError(err)
}

// invalid returns the 400 for a malformed parameter.
func invalid(param, msg string) *gateway.Error {
	return &gateway.Error{Status: http.StatusBadRequest, Type: gateway.TypeInvalidRequest, Code: "invalid_parameter",
		Param: param, Message: msg}
}

// internal is the 500 of a failure the caller is told nothing about,
// as gateway.WriteError answers an error that is not a *gateway.Error.
func internal(err error) *gateway.Error {
	return &gateway.Error{Status: http.StatusInternalServerError, Type: gateway.TypeGateway, Code: gateway.CodeInternal,
		Message: "internal gateway error", Err: err}
}

// readBody reads a control-plane body of at most limit bytes: a larger
// one is a *http.MaxBytesError (413).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil {
		return nil, invalid("", "a JSON body is required")
	}
	if r.ContentLength > limit {
		return nil, &http.MaxBytesError{Limit: limit}
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return nil, err
		}
		return nil, invalid("", "the body could not be read")
	}
	return data, nil
}

// writeJSON answers w with status and the JSON encoding of v, ended by a
// newline, with its Content-Type and Content-Length.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		body, _ = json.Marshal(internal(err))
		status = http.StatusInternalServerError
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// checkLabel checks a name (or another short label) a tenant writes: at
// most 255 bytes of valid UTF-8 without control characters. param names
// the field in the 400.
func checkLabel(param, s string) error {
	if len(s) > maxPolicyName {
		return invalid(param, param+" must be at most "+strconv.Itoa(maxPolicyName)+" bytes")
	}
	if !utf8.ValidString(s) {
		return invalid(param, param+" must be valid UTF-8")
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return invalid(param, param+" must not contain control characters")
		}
	}
	return nil
}

// maxPolicyName bounds a policy's name, in bytes.
const maxPolicyName = 255

// uuidRE matches a UUID, in any case.
var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// policyNow returns the time in the fixed-width RFC 3339 form stored in
// created_at and last_updated_at, so that the strings sort by time.
func policyNow() string {
	return time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// quoteShort quotes s for an error message, cut to a sane length.
func quoteShort(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strconv.Quote(s)
}

// keyValid reports whether k is a condition or group key: api_key,
// workspace_id, organisation_id or metadata.<name>.
func keyValid(k string) bool {
	switch {
	case k == "api_key", k == "workspace_id", k == "organisation_id":
		return true
	case strings.HasPrefix(k, "metadata.") && len(k) > len("metadata."):
		return true
	}
	return false
}

// conditionValue returns the value of a condition or group key for a
// request by its caller's identity and metadata
// (gateway.RequestOptions.Metadata).
func conditionValue(id gateway.Identity, md map[string]string, key string) (string, bool) {
	switch key {
	case "api_key":
		return id.KeyID, true
	case "workspace_id":
		return id.WorkspaceID, true
	case "organisation_id":
		v, ok := md[gateway.MetadataOrganisation]
		return v, ok
	}
	if name, ok := strings.CutPrefix(key, "metadata."); ok {
		v, ok := md[name]
		return v, ok
	}
	return "", false
}
