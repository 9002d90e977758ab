package admin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/bounds"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
	"github.com/modelgateway/gateway/observe"
)

// workspaceObject is the "object" of a workspace in responses.
const workspaceObject = "workspace"

// Bounds of the workspaces control plane.
const (
	maxWorkspaceID = 64
)

// serveWorkspaces serves the workspaces control plane under
// {prefix}/admin/workspaces (the control plane, the reference's shapes):
//
//	POST   /admin/workspaces       create → 200 the workspace
//	GET    /admin/workspaces       list   → 200 {"object":"list","data","total"}
//	GET    /admin/workspaces/{id}  read   → 200 the workspace, "users": []
//	PUT    /admin/workspaces/{id}  update → 200 {}
//	DELETE /admin/workspaces/{id}  delete → 200 {}
//
// Only organisation keys may call it (a workspace key gets 403), with the
// workspaces.read scope to read and workspaces.write to change. Deleting a
// workspace that still holds API keys (or, when the virtual-key store can
// list them, virtual keys) is a 409 conflict. users in a body is a 400:
// members are added through …/users, which package users serves (404
// without it).
// Without Options.Workspaces every call is a 404.
func (a *plane) serveWorkspaces(w http.ResponseWriter, r *http.Request) {
	id, _ := gateway.IdentityFrom(r.Context())
	if id.Type != gateway.KeyOrganisation {
		gateway.WriteError(w, r, &gateway.Error{Status: http.StatusForbidden, Type: gateway.TypePermission, Code: gateway.CodePermissionDenied,
			Message: "only an organisation key may manage workspaces"})
		return
	}
	if _, ok := control.Scoped(w, r, gateway.ScopeWorkspacesRead, gateway.ScopeWorkspacesWrite); !ok {
		return
	}
	store := a.o.Workspaces
	if store == nil {
		gateway.WriteError(w, r, &gateway.Error{Status: http.StatusNotFound, Type: gateway.TypeNotFound, Code: gateway.CodeNotFound,
			Message: "workspaces are not managed on this gateway"})
		return
	}
	m := httpapi.Methods{
		http.MethodGet:  func(w http.ResponseWriter, r *http.Request) error { return a.listWorkspaces(w, r, store) },
		http.MethodPost: func(w http.ResponseWriter, r *http.Request) error { return a.createWorkspace(w, r, store) },
	}
	if wid := r.PathValue("workspaceId"); wid != "" {
		m = httpapi.Methods{
			http.MethodGet:    func(w http.ResponseWriter, r *http.Request) error { return a.getWorkspace(w, r, store, wid) },
			http.MethodPut:    func(w http.ResponseWriter, r *http.Request) error { return a.updateWorkspace(w, r, store, wid) },
			http.MethodDelete: func(w http.ResponseWriter, r *http.Request) error { return a.deleteWorkspace(w, r, store, wid) },
		}
	}
	err := m.Serve(w, r)
	if err != nil {
		control.Fail(w, r, a.o.ErrorLog, "workspace store", err)
	}
}

func workspaceNotFound(wid string) *gateway.Error {
	return &gateway.Error{Status: http.StatusNotFound, Type: gateway.TypeNotFound, Code: gateway.CodeNotFound,
		Message: "no workspace " + control.Quote(wid)}
}

// workspaceDefaults is the defaults object of a workspace body. The
// guardrail lists, when absent or null, leave the workspace's as they
// are.
type workspaceDefaults struct {
	Metadata         map[string]string `json:"metadata"`
	InputGuardrails  []string          `json:"input_guardrails"`
	OutputGuardrails []string          `json:"output_guardrails"`
}

// workspaceGuardrails checks and writes into ws the guardrail ids of b's
// defaults, if any.
func (a *plane) workspaceGuardrails(ctx context.Context, b *workspaceBody, ws *gateway.Workspace) error {
	if b.Defaults == nil {
		return nil
	}
	return a.setGuardrailIDs(ctx, ws.ID, b.Defaults.InputGuardrails, b.Defaults.OutputGuardrails, &ws.InputGuardrails, &ws.OutputGuardrails)
}

// workspaceBody is the body of POST /admin/workspaces and PUT
// /admin/workspaces/{id}; absent fields of a PUT are left as they are.
// Slug (create only) is the gateway's addition: the id to register, e.g.
// one keys already name; absent, one is made from the name.
type workspaceBody struct {
	Slug        *string            `json:"slug"`
	Name        *string            `json:"name"`
	Description *string            `json:"description"`
	Defaults    *workspaceDefaults `json:"defaults"`
	Users       json.RawMessage    `json:"users"`
	RateLimits  json.RawMessage    `json:"rate_limits"`
	UsageLimits json.RawMessage    `json:"usage_limits"`
}

// apply checks b and writes its fields into ws: name a label
// (checkLabel), description at most 4096 bytes without NUL, and
// defaults.metadata within the bounds of x-gateway-metadata (docs/architecture.md, Trust).
func (b *workspaceBody) apply(ws *gateway.Workspace) error {
	if b.Users != nil {
		return control.Invalid("users", "users are not accepted here: add members with POST /admin/workspaces/{id}/users")
	}
	if b.Name != nil {
		if strings.TrimSpace(*b.Name) == "" {
			return control.Invalid("name", "name must not be empty")
		}
		if err := control.Label("name", *b.Name); err != nil {
			return err
		}
		ws.Name = *b.Name
	}
	if b.Description != nil {
		if err := control.Description("description", *b.Description); err != nil {
			return err
		}
		ws.Description = *b.Description
	}
	if b.Defaults != nil {
		if err := control.Metadata("defaults.metadata", b.Defaults.Metadata); err != nil {
			return err
		}
		if b.Defaults.Metadata != nil || b.Defaults.InputGuardrails == nil && b.Defaults.OutputGuardrails == nil {
			ws.Metadata = b.Defaults.Metadata
		}
	}
	if b.RateLimits != nil {
		rl, err := limitsJSON("rate_limits", b.RateLimits, '[')
		if err != nil {
			return err
		}
		ws.RateLimits = rl
	}
	if b.UsageLimits != nil {
		ul, err := gateway.UsageLimitsJSON(b.UsageLimits, true)
		if err != nil {
			return err
		}
		ws.UsageLimits = ul
	}
	return nil
}

// validWorkspaceID reports whether s may be a workspace id: 1 to 64
// letters, digits, '-' and '_', starting with a letter or digit.
func validWorkspaceID(s string) bool {
	if s == "" || len(s) > maxWorkspaceID || s[0] == '-' || s[0] == '_' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// newWorkspaceID makes an id from a name, as the reference's examples
// look: "ws-", the name's letters and digits in lower case (at most 40),
// "-" and 6 random hex digits.
func newWorkspaceID(name string) string {
	var sb strings.Builder
	sb.WriteString("ws-")
	dash := false
	for _, c := range strings.ToLower(name) {
		if sb.Len() >= 43 {
			break
		}
		if 'a' <= c && c <= 'z' || '0' <= c && c <= '9' {
			sb.WriteRune(c)
			dash = false
		} else if !dash && sb.Len() > 3 {
			sb.WriteByte('-')
			dash = true
		}
	}
	if !dash && sb.Len() > 3 {
		sb.WriteByte('-')
	}
	var b [3]byte
	rand.Read(b[:])
	sb.WriteString(hex.EncodeToString(b[:]))
	return sb.String()
}

func (a *plane) createWorkspace(w http.ResponseWriter, r *http.Request, store WorkspaceStore) error {
	var b workspaceBody
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	if b.Name == nil {
		return control.Invalid("name", "name is required")
	}
	now := a.now().UTC()
	ws := gateway.Workspace{CreatedAt: now, UpdatedAt: now}
	if err := b.apply(&ws); err != nil {
		return err
	}
	if b.Slug != nil {
		if !validWorkspaceID(*b.Slug) {
			return control.Invalid("slug", "slug must be 1 to 64 letters, digits, - and _, starting with a letter or digit")
		}
		ws.ID = *b.Slug
	} else {
		ws.ID = newWorkspaceID(ws.Name)
	}
	observe.ActedIn(r, ws.ID)
	if err := a.workspaceGuardrails(r.Context(), &b, &ws); err != nil {
		return err
	}
	if err := store.CreateWorkspace(r.Context(), &ws); err != nil {
		if errors.Is(err, gateway.ErrConflict) {
			return &gateway.Error{Status: http.StatusConflict, Type: gateway.TypeInvalidRequest, Code: gateway.CodeConflict, Param: "slug",
				Message: "workspace " + control.Quote(ws.ID) + " already exists", Err: err}
		}
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, workspaceWireOf(&ws))
	return nil
}

// workspaceWireDefaults is the defaults object of the reference's
// Workspace.
type workspaceWireDefaults struct {
	Metadata         map[string]string `json:"metadata"`
	IsDefault        int               `json:"is_default"`
	InputGuardrails  []string          `json:"input_guardrails,omitempty"`
	OutputGuardrails []string          `json:"output_guardrails,omitempty"`
	Object           string            `json:"object"`
}

// workspaceWire is the reference's Workspace.
type workspaceWire struct {
	ID            string                 `json:"id"`
	Slug          string                 `json:"slug"`
	Name          string                 `json:"name"`
	Description   *string                `json:"description"`
	CreatedAt     time.Time              `json:"created_at"`
	LastUpdatedAt time.Time              `json:"last_updated_at"`
	Defaults      *workspaceWireDefaults `json:"defaults"`
	RateLimits    json.RawMessage        `json:"rate_limits,omitempty"`
	UsageLimits   json.RawMessage        `json:"usage_limits,omitempty"`
	Object        string                 `json:"object"`
}

func workspaceWireOf(ws *gateway.Workspace) workspaceWire {
	o := workspaceWire{ID: ws.ID, Slug: ws.ID, Name: ws.Name, CreatedAt: ws.CreatedAt, LastUpdatedAt: ws.UpdatedAt,
		RateLimits: ws.RateLimits, UsageLimits: ws.UsageLimits, Object: workspaceObject}
	if ws.Description != "" {
		o.Description = &ws.Description
	}
	if ws.Metadata != nil || len(ws.InputGuardrails) > 0 || len(ws.OutputGuardrails) > 0 {
		o.Defaults = &workspaceWireDefaults{Metadata: ws.Metadata, InputGuardrails: ws.InputGuardrails,
			OutputGuardrails: ws.OutputGuardrails, Object: workspaceObject}
	}
	return o
}

func (a *plane) listWorkspaces(w http.ResponseWriter, r *http.Request, store WorkspaceStore) error {
	q := r.URL.Query()
	page, err := control.Page(q)
	if err != nil {
		return err
	}
	name, exact := q.Get("name"), q.Get("exact_name")
	active := true
	if st, ok := q["status"]; ok {
		active = false
		for _, s := range strings.Split(strings.Join(st, ","), ",") {
			switch strings.TrimSpace(s) {
			case "active":
				active = true
			case "archived": // never: a deleted workspace is gone
			default:
				return control.Invalid("status", "status must be active, archived or both, comma separated")
			}
		}
	}
	all, err := store.Workspaces(r.Context())
	if err != nil {
		return err
	}
	data, total := httpapi.Filter(all, func(ws *gateway.Workspace) bool {
		return active && (name == "" || strings.Contains(ws.Name, name)) && (exact == "" || ws.Name == exact)
	}, workspaceWireOf, page)
	httpapi.WriteJSON(w, http.StatusOK, struct {
		Object string          `json:"object"`
		Data   []workspaceWire `json:"data"`
		Total  int             `json:"total"`
	}{"list", data, total})
	return nil
}

func lookupWorkspace(ctx context.Context, store WorkspaceStore, wid string) (*gateway.Workspace, error) {
	ws, err := store.Workspace(ctx, wid)
	if errors.Is(err, gateway.ErrNotFound) || err == nil && ws == nil {
		return nil, workspaceNotFound(wid)
	}
	return ws, err
}

func (a *plane) getWorkspace(w http.ResponseWriter, r *http.Request, store WorkspaceStore, wid string) error {
	ws, err := lookupWorkspace(r.Context(), store, wid)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, struct {
		workspaceWire
		Users []struct{} `json:"users"`
	}{workspaceWireOf(ws), []struct{}{}})
	return nil
}

func (a *plane) updateWorkspace(w http.ResponseWriter, r *http.Request, store WorkspaceStore, wid string) error {
	var b workspaceBody
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	if b.Slug != nil {
		return control.Invalid("slug", "a workspace's slug cannot change")
	}
	if err := b.apply(&gateway.Workspace{}); err != nil { // check before reading
		return err
	}
	ctx := r.Context()
	err := control.SwapStored(r, "workspace "+control.Quote(wid), workspaceNotFound(wid), func() (error, error) {
		old, err := lookupWorkspace(ctx, store, wid)
		if err != nil {
			return nil, err
		}
		ws := old.Clone()
		b.apply(ws)
		if err := a.workspaceGuardrails(ctx, &b, ws); err != nil {
			return nil, err
		}
		ws.UpdatedAt = a.now().UTC()
		return store.UpdateWorkspace(ctx, old, ws), nil
	})
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, struct{}{})
	return nil
}

// deleteWorkspace refuses with 409 while the workspace holds API keys or
// virtual keys. The check and the delete are not one transaction: a key
// created for the workspace in between survives it, as a key naming an
// unregistered workspace may.
func (a *plane) deleteWorkspace(w http.ResponseWriter, r *http.Request, store WorkspaceStore, wid string) error {
	ctx := r.Context()
	if _, err := lookupWorkspace(ctx, store, wid); err != nil {
		return err
	}
	held := func(what string) error {
		return &gateway.Error{Status: http.StatusConflict, Type: gateway.TypeInvalidRequest, Code: gateway.CodeConflict,
			Message: "workspace " + control.Quote(wid) + " still holds " + what + "; delete them first"}
	}
	if a.o.Keys != nil {
		keys, err := a.o.Keys.APIKeys(ctx, wid)
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			return held("API keys")
		}
	}
	if a.o.VirtualKeys != nil {
		vks, err := a.o.VirtualKeys.VirtualKeys(ctx, wid)
		if err != nil {
			return err
		}
		if len(vks) > 0 {
			return held("virtual keys")
		}
	}
	if err := store.DeleteWorkspace(ctx, wid); err != nil {
		if errors.Is(err, gateway.ErrNotFound) {
			return workspaceNotFound(wid)
		}
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, struct{}{})
	return nil
}

// limitsJSON checks the rate_limits (an array) or usage_limits (an
// object) of a body, named name: nil for absent or null.
func limitsJSON(name string, raw json.RawMessage, open byte) (json.RawMessage, error) {
	l, err := bounds.Limits(name, raw, open)
	return l, control.Translate(err)
}
