package guardrail

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// maxBody bounds a /guardrails request body.
const maxBody = 1 << 20

// Mount registers the /guardrails routes on g (create, list, get, update,
// delete, per the reference API; scopes guardrails.read and
// guardrails.write; workspace-scoped like configs) and makes h's registry
// call tenants' URLs through g's guarded client. A route answers 404
// when Store is not an AdminStore. Call it once, before g serves.
func (h *Hooks) Mount(g *gateway.Gateway) {
	if h.Registry == nil {
		h.Registry = NewRegistry(Env{HTTPClient: g.GuardedClient()})
	}
	h.init()
	h.checkHost = g.CheckHost
	var audit func(http.Handler) http.Handler = func(x http.Handler) http.Handler { return x }
	if h.Auditor != nil {
		audit = func(x http.Handler) http.Handler { return h.Auditor.Wrap("guardrails", x) }
	}
	g.Handle("/guardrails", audit(h.route(httpapi.Methods{http.MethodGet: h.list, http.MethodPost: h.create})))
	g.Handle("/guardrails/{id}", audit(h.route(httpapi.Methods{http.MethodGet: h.get, http.MethodPut: h.update, http.MethodDelete: h.remove})))
}

// route serves m behind the scope check, translating its errors.
func (h *Hooks) route(m httpapi.Methods) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := m.Check(r); err != nil {
			writeError(w, r, err)
			return
		}
		id, _ := gateway.IdentityFrom(r.Context())
		need := gateway.ScopeGuardrailsWrite
		if r.Method == http.MethodGet {
			need = gateway.ScopeGuardrailsRead
		}
		if !id.Can(need) {
			writeError(w, r, &gateway.Error{Status: http.StatusForbidden, Type: gateway.TypePermission, Code: gateway.CodePermissionDenied,
				Message: "this gateway API key lacks the " + string(need) + " scope"})
			return
		}
		if _, ok := h.Store.(AdminStore); !ok {
			writeError(w, r, notFound(r.URL.Path))
			return
		}
		if err := m.Serve(w, r); err != nil {
			writeError(w, r, err)
		}
	})
}

func (h *Hooks) admin() AdminStore { return h.Store.(AdminStore) }

// writeError answers err: a *httpapi.FieldError is the 400
// invalid_parameter naming its field, a *httpapi.MethodError the 405 with
// its Allow header, an *Error of the registry the 400 of its code.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	var fe *httpapi.FieldError
	var me *httpapi.MethodError
	var ge *Error
	switch {
	case errors.As(err, &fe):
		err = badRequest(CodeInvalidParameter, fe.Param, fe.Message)
	case errors.As(err, &ge):
		err = badRequest(ge.Code, ge.Param, ge.Message)
	case errors.As(err, &me):
		w.Header().Set("Allow", me.Allow)
		err = &gateway.Error{Status: http.StatusMethodNotAllowed, Type: gateway.TypeInvalidRequest, Code: gateway.CodeMethodNotAllowed,
			Message: me.Error()}
	}
	gateway.WriteError(w, r, err)
}

func badRequest(code, param, msg string) *gateway.Error {
	return &gateway.Error{Status: http.StatusBadRequest, Type: gateway.TypeInvalidRequest, Code: code, Param: param, Message: msg}
}

func notFound(what string) *gateway.Error {
	return &gateway.Error{Status: http.StatusNotFound, Type: gateway.TypeNotFound, Code: gateway.CodeNotFound, Message: "no guardrail " + quote(what)}
}

// acting returns the workspace a request acts on: an organisation key
// acts on the workspace it names (none: the organisation's guardrails), a
// workspace key on its own, and naming another is a 403.
func acting(id gateway.Identity, named string) (string, error) {
	if id.Type == gateway.KeyOrganisation {
		return named, nil
	}
	if named != "" && named != id.WorkspaceID {
		return "", &gateway.Error{Status: http.StatusForbidden, Type: gateway.TypePermission, Code: gateway.CodePermissionDenied,
			Param: "workspace_id", Message: "only an organisation key may name another workspace"}
	}
	return id.WorkspaceID, nil
}

// wire is a guardrail as the routes answer it (GuardrailDetails).
type wire struct {
	ID            string            `json:"id"`
	Name          string            `json:"name"`
	Slug          string            `json:"slug"`
	WorkspaceID   *string           `json:"workspace_id"`
	Status        string            `json:"status"`
	CreatedAt     time.Time         `json:"created_at"`
	LastUpdatedAt time.Time         `json:"last_updated_at"`
	OwnerID       string            `json:"owner_id"`
	UpdatedBy     *string           `json:"updated_by"`
	VersionID     string            `json:"version_id"`
	Checks        []CheckDefinition `json:"checks,omitempty"`
	Actions       *Actions          `json:"actions,omitempty"`
	StreamMode    string            `json:"stream_mode,omitempty"`
	OnError       string            `json:"on_error,omitempty"`
}

func toWire(rec *Record, details bool) wire {
	w := wire{ID: rec.ID, Name: rec.Name, Slug: rec.Slug, Status: "active", CreatedAt: rec.CreatedAt, LastUpdatedAt: rec.UpdatedAt,
		OwnerID: rec.OwnerID, VersionID: rec.VersionID}
	if rec.WorkspaceID != "" {
		w.WorkspaceID = &rec.WorkspaceID
	}
	if rec.UpdatedBy != "" {
		w.UpdatedBy = &rec.UpdatedBy
	}
	if details {
		w.Checks, w.Actions, w.StreamMode, w.OnError = rec.Checks, &rec.Actions, rec.StreamMode, rec.OnError
	}
	return w
}

func writeJSON(w http.ResponseWriter, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(b, '\n'))
	return nil
}

// decode reads r's body into b, strictly.
func decode(w http.ResponseWriter, r *http.Request, b *body) error {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		return err
	}
	return httpapi.DecodeStrict(data, b)
}

// check compiles rec's checks and checks the tenant URLs they call
// (webhookURL, jwksUri) as the gateway checks a tenant's host.
func (h *Hooks) check(rec *Record) error {
	if _, err := h.Registry.Compile(rec.Definition()); err != nil {
		return err
	}
	for i, c := range rec.Checks {
		field := map[string]string{"default.webhook": "webhookURL", "default.jwt": "jwksUri"}[c.ID]
		if field == "" || len(c.Parameters) == 0 {
			continue
		}
		var p map[string]json.RawMessage
		var u string
		if json.Unmarshal(c.Parameters, &p) != nil || json.Unmarshal(p[field], &u) != nil {
			continue // Compile refused what is not an object or a string
		}
		if err := h.checkHost(u); err != nil {
			msg := "is not a URL the gateway may call"
			var ge *gateway.Error
			if errors.As(err, &ge) {
				msg = ge.Message
			}
			return &Error{Code: CodeInvalidParameter, Param: "checks[" + strconv.Itoa(i) + "].parameters." + field, Message: msg}
		}
	}
	return nil
}

func (h *Hooks) create(w http.ResponseWriter, r *http.Request) error {
	id, _ := gateway.IdentityFrom(r.Context())
	var b body
	if err := decode(w, r, &b); err != nil {
		return err
	}
	named := ""
	if b.WorkspaceID != nil {
		named = *b.WorkspaceID
	}
	ws, err := acting(id, named)
	if err != nil {
		return err
	}
	if b.ID != nil {
		return &Error{Code: CodeInvalidParameter, Param: "id", Message: "is made by the gateway"}
	}
	if b.Name == nil {
		return &Error{Code: CodeInvalidParameter, Param: "name", Message: "is required"}
	}
	if e := validName(*b.Name); e != nil {
		return e
	}
	now := time.Now().UTC()
	rec := &Record{ID: newID(), Slug: newSlug(), Name: *b.Name, WorkspaceID: ws, VersionID: newID(), OwnerID: id.KeyID,
		CreatedAt: now, UpdatedAt: now}
	if e := b.settings(rec, true); e != nil {
		return e
	}
	if err := h.check(rec); err != nil {
		return err
	}
	if err := h.admin().PutGuardrail(r.Context(), rec); err != nil {
		return err
	}
	return writeJSON(w, map[string]string{"id": rec.ID, "slug": rec.Slug, "version_id": rec.VersionID})
}

// visible returns the guardrails the caller of r sees in the workspace it
// acts on.
func (h *Hooks) visible(r *http.Request) ([]*Record, error) {
	id, _ := gateway.IdentityFrom(r.Context())
	named, err := httpapi.WorkspaceParam(r.URL.Query())
	if err != nil {
		return nil, err
	}
	ws, err := acting(id, named)
	if err != nil {
		return nil, err
	}
	all := id.Type == gateway.KeyOrganisation && named == ""
	return h.admin().ListGuardrails(r.Context(), ws, all)
}

func (h *Hooks) list(w http.ResponseWriter, r *http.Request) error {
	p, err := httpapi.ParsePage(r.URL.Query())
	if err != nil {
		return err
	}
	recs, err := h.visible(r)
	if err != nil {
		return err
	}
	data, total := httpapi.Filter(recs, nil, func(rec **Record) wire { return toWire(*rec, false) }, p)
	return writeJSON(w, map[string]any{"data": data, "total": total})
}

// find returns the guardrail of the route's {id} (its ID or slug) that
// the caller may act on, or a 404.
func (h *Hooks) find(r *http.Request) (*Record, error) {
	ref := r.PathValue("id")
	id, _ := gateway.IdentityFrom(r.Context())
	recs, err := h.admin().ListGuardrails(r.Context(), id.WorkspaceID, id.Type == gateway.KeyOrganisation)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(recs, func(rec *Record) bool { return rec.ID == ref || rec.Slug == ref })
	if i < 0 || id.Type != gateway.KeyOrganisation && recs[i].WorkspaceID != id.WorkspaceID && recs[i].WorkspaceID != "" {
		return nil, notFound(ref)
	}
	return recs[i], nil
}

func (h *Hooks) get(w http.ResponseWriter, r *http.Request) error {
	rec, err := h.find(r)
	if err != nil {
		return err
	}
	return writeJSON(w, toWire(rec, true))
}

// findOwn is find for a write: a workspace key sees the organisation's
// guardrails, but only an organisation key changes them.
func (h *Hooks) findOwn(r *http.Request) (*Record, gateway.Identity, error) {
	rec, err := h.find(r)
	id, _ := gateway.IdentityFrom(r.Context())
	if err == nil && id.Type != gateway.KeyOrganisation && rec.WorkspaceID != id.WorkspaceID {
		err = notFound(r.PathValue("id"))
	}
	return rec, id, err
}

func (h *Hooks) update(w http.ResponseWriter, r *http.Request) error {
	old, id, err := h.findOwn(r)
	if err != nil {
		return err
	}
	var b body
	if err := decode(w, r, &b); err != nil {
		return err
	}
	if b.ID != nil || b.WorkspaceID != nil || b.OrganisationID != nil {
		return &Error{Code: CodeInvalidParameter, Param: "workspace_id", Message: "a guardrail's id and workspace do not change"}
	}
	rec := *old
	if b.Name != nil {
		if e := validName(*b.Name); e != nil {
			return e
		}
		rec.Name = *b.Name
	}
	if e := b.settings(&rec, false); e != nil {
		return e
	}
	if err := h.check(&rec); err != nil {
		return err
	}
	rec.VersionID, rec.UpdatedBy, rec.UpdatedAt = newID(), id.KeyID, time.Now().UTC()
	if err := h.admin().PutGuardrail(r.Context(), &rec); err != nil {
		return err
	}
	return writeJSON(w, map[string]string{"id": rec.ID, "slug": rec.Slug, "version_id": rec.VersionID})
}

func (h *Hooks) remove(w http.ResponseWriter, r *http.Request) error {
	rec, _, err := h.findOwn(r)
	if err != nil {
		return err
	}
	if err := h.admin().DeleteGuardrail(r.Context(), rec.ID); err != nil {
		if errors.Is(err, gateway.ErrNotFound) {
			return notFound(r.PathValue("id"))
		}
		return err
	}
	return writeJSON(w, struct{}{})
}

// newSlug returns guard_ and 16 random letters and digits.
func newSlug() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	var b [16]byte
	rand.Read(b[:])
	out := []byte("guard_")
	for _, c := range b {
		out = append(out, alphabet[int(c)%len(alphabet)])
	}
	return string(out)
}
