package guardrail

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
)

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
		if _, ok := control.Scoped(w, r, gateway.ScopeGuardrailsRead, gateway.ScopeGuardrailsWrite); !ok {
			return
		}
		if _, ok := h.Store.(AdminStore); !ok {
			control.NoRoute(w, r)
			return
		}
		if err := m.Serve(w, r); err != nil {
			writeError(w, r, err)
		}
	})
}

func (h *Hooks) admin() AdminStore { return h.Store.(AdminStore) }

// writeError answers err: an *Error of the registry is the 400 of its
// code naming its parameter; anything else as the control-plane kit
// answers it.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	var ge *Error
	if errors.As(err, &ge) {
		err = &gateway.Error{Status: http.StatusBadRequest, Type: gateway.TypeInvalidRequest, Code: ge.Code, Param: ge.Param, Message: ge.Message}
	}
	control.WriteError(w, r, err)
}

func notFound(ref string) *gateway.Error {
	return control.NotFound("no guardrail " + control.Quote(ref))
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
	httpapi.WriteJSON(w, http.StatusOK, v)
	return nil
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
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	named := ""
	if b.WorkspaceID != nil {
		named = *b.WorkspaceID
	}
	ws, err := control.ActingWorkspace(id, named)
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
	rec := &Record{ID: control.NewUUID(), Slug: newSlug(), Name: *b.Name, WorkspaceID: ws, VersionID: control.NewUUID(), OwnerID: id.KeyID,
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
	named, err := control.WorkspaceParam(r.URL.Query())
	if err != nil {
		return nil, err
	}
	ws, err := control.ActingWorkspace(id, named)
	if err != nil {
		return nil, err
	}
	all := id.Type == gateway.KeyOrganisation && named == ""
	return h.admin().ListGuardrails(r.Context(), ws, all)
}

func (h *Hooks) list(w http.ResponseWriter, r *http.Request) error {
	p, err := control.Page(r.URL.Query())
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
	if err := control.Decode(r, &b, false); err != nil {
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
	rec.VersionID, rec.UpdatedBy, rec.UpdatedAt = control.NewUUID(), id.KeyID, time.Now().UTC()
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
