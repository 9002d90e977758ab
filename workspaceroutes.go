package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/modelgateway/gateway/internal/httpapi"
)

// workspaceObject is the "object" of a workspace in responses.
const workspaceObject = "workspace"

// Bounds of the workspaces control plane.
const (
	maxWorkspaceID    = 64
	maxWorkspaceSwaps = 16
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
// list them, virtual keys) is a 409 conflict. The gateway has no user
// accounts: users in a body is a 400, and …/users routes are 404.
// Without Options.Workspaces every call is a 404.
func (g *Gateway) serveWorkspaces(w http.ResponseWriter, r *http.Request) {
	id, _ := IdentityFrom(r.Context())
	if id.Type != KeyOrganisation {
		WriteError(w, r, &Error{Status: http.StatusForbidden, Type: TypePermission, Code: CodePermissionDenied,
			Message: "only an organisation key may manage workspaces"})
		return
	}
	if _, ok := scopedIdentity(w, r, ScopeWorkspacesRead, ScopeWorkspacesWrite); !ok {
		return
	}
	store := g.opts.Workspaces
	if store == nil {
		WriteError(w, r, &Error{Status: http.StatusNotFound, Type: TypeNotFound, Code: CodeNotFound,
			Message: "workspaces are not managed on this gateway"})
		return
	}
	m := httpapi.Methods{
		http.MethodGet:  func(w http.ResponseWriter, r *http.Request) error { return g.listWorkspaces(w, r, store) },
		http.MethodPost: func(w http.ResponseWriter, r *http.Request) error { return g.createWorkspace(w, r, store) },
	}
	if wid := r.PathValue("workspaceId"); wid != "" {
		m = httpapi.Methods{
			http.MethodGet:    func(w http.ResponseWriter, r *http.Request) error { return g.getWorkspace(w, r, store, wid) },
			http.MethodPut:    func(w http.ResponseWriter, r *http.Request) error { return g.updateWorkspace(w, r, store, wid) },
			http.MethodDelete: func(w http.ResponseWriter, r *http.Request) error { return g.deleteWorkspace(w, r, store, wid) },
		}
	}
	err := m.Serve(w, r)
	if err != nil {
		g.controlPlaneError(w, r, "workspace store", err)
	}
}

func workspaceNotFound(wid string) *Error {
	return &Error{Status: http.StatusNotFound, Type: TypeNotFound, Code: CodeNotFound,
		Message: "no workspace " + quoteShort(wid)}
}

// workspaceDefaults is the defaults object of a workspace body.
type workspaceDefaults struct {
	Metadata map[string]string `json:"metadata"`
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
func (b *workspaceBody) apply(ws *Workspace) error {
	if b.Users != nil {
		return policyInvalid("users", "the gateway has no user accounts: users are not accepted")
	}
	if b.Name != nil {
		if strings.TrimSpace(*b.Name) == "" {
			return policyInvalid("name", "name must not be empty")
		}
		if err := checkLabel("name", *b.Name); err != nil {
			return err
		}
		ws.Name = *b.Name
	}
	if b.Description != nil {
		if err := checkDescription("description", *b.Description); err != nil {
			return err
		}
		ws.Description = *b.Description
	}
	if b.Defaults != nil {
		if err := checkMetadata("defaults.metadata", b.Defaults.Metadata); err != nil {
			return err
		}
		ws.Metadata = b.Defaults.Metadata
	}
	if b.RateLimits != nil {
		rl, err := limitsJSON("rate_limits", b.RateLimits, '[')
		if err != nil {
			return err
		}
		ws.RateLimits = rl
	}
	if b.UsageLimits != nil {
		ul, err := UsageLimitsJSON(b.UsageLimits, true)
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

func (g *Gateway) createWorkspace(w http.ResponseWriter, r *http.Request, store WorkspaceStore) error {
	var b workspaceBody
	if err := g.decodeStrict(w, r, &b, false); err != nil {
		return err
	}
	if b.Name == nil {
		return policyInvalid("name", "name is required")
	}
	now := g.clock().UTC()
	ws := Workspace{CreatedAt: now, UpdatedAt: now}
	if err := b.apply(&ws); err != nil {
		return err
	}
	if b.Slug != nil {
		if !validWorkspaceID(*b.Slug) {
			return policyInvalid("slug", "slug must be 1 to 64 letters, digits, - and _, starting with a letter or digit")
		}
		ws.ID = *b.Slug
	} else {
		ws.ID = newWorkspaceID(ws.Name)
	}
	auditActedIn(r, ws.ID)
	if err := store.CreateWorkspace(r.Context(), &ws); err != nil {
		if errors.Is(err, ErrConflict) {
			return &Error{Status: http.StatusConflict, Type: TypeInvalidRequest, Code: CodeConflict, Param: "slug",
				Message: "workspace " + quoteShort(ws.ID) + " already exists", Err: err}
		}
		return err
	}
	writeJSON(w, http.StatusOK, ws.wire())
	return nil
}

// workspaceWireDefaults is the defaults object of the reference's
// Workspace.
type workspaceWireDefaults struct {
	Metadata  map[string]string `json:"metadata"`
	IsDefault int               `json:"is_default"`
	Object    string            `json:"object"`
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

func (ws *Workspace) wire() workspaceWire {
	o := workspaceWire{ID: ws.ID, Slug: ws.ID, Name: ws.Name, CreatedAt: ws.CreatedAt, LastUpdatedAt: ws.UpdatedAt,
		RateLimits: ws.RateLimits, UsageLimits: ws.UsageLimits, Object: workspaceObject}
	if ws.Description != "" {
		o.Description = &ws.Description
	}
	if ws.Metadata != nil {
		o.Defaults = &workspaceWireDefaults{Metadata: ws.Metadata, Object: workspaceObject}
	}
	return o
}

func (g *Gateway) listWorkspaces(w http.ResponseWriter, r *http.Request, store WorkspaceStore) error {
	q := r.URL.Query()
	size, page, err := pageParams(q)
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
				return policyInvalid("status", "status must be active, archived or both, comma separated")
			}
		}
	}
	all, err := store.Workspaces(r.Context())
	if err != nil {
		return err
	}
	data, total := listPage(all, func(ws *Workspace) bool {
		return active && (name == "" || strings.Contains(ws.Name, name)) && (exact == "" || ws.Name == exact)
	}, (*Workspace).wire, size, page)
	writeJSON(w, http.StatusOK, struct {
		Object string          `json:"object"`
		Data   []workspaceWire `json:"data"`
		Total  int             `json:"total"`
	}{"list", data, total})
	return nil
}

func lookupWorkspace(ctx context.Context, store WorkspaceStore, wid string) (*Workspace, error) {
	ws, err := store.Workspace(ctx, wid)
	if errors.Is(err, ErrNotFound) || err == nil && ws == nil {
		return nil, workspaceNotFound(wid)
	}
	return ws, err
}

func (g *Gateway) getWorkspace(w http.ResponseWriter, r *http.Request, store WorkspaceStore, wid string) error {
	ws, err := lookupWorkspace(r.Context(), store, wid)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		workspaceWire
		Users []struct{} `json:"users"`
	}{ws.wire(), []struct{}{}})
	return nil
}

func (g *Gateway) updateWorkspace(w http.ResponseWriter, r *http.Request, store WorkspaceStore, wid string) error {
	var b workspaceBody
	if err := g.decodeStrict(w, r, &b, false); err != nil {
		return err
	}
	if b.Slug != nil {
		return policyInvalid("slug", "a workspace's slug cannot change")
	}
	if err := b.apply(&Workspace{}); err != nil { // check before reading
		return err
	}
	ctx := r.Context()
	err := swapStored(ctx, maxWorkspaceSwaps, "workspace "+quoteShort(wid), workspaceNotFound(wid), func() (error, error) {
		old, err := lookupWorkspace(ctx, store, wid)
		if err != nil {
			return nil, err
		}
		ws := cloneWorkspace(old)
		b.apply(ws)
		ws.UpdatedAt = g.clock().UTC()
		return store.UpdateWorkspace(ctx, old, ws), nil
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct{}{})
	return nil
}

// virtualKeyLister is the listing capability the workspaces control plane
// looks for on Options.VirtualKeys, to refuse deleting a workspace that
// still holds virtual keys.
type virtualKeyLister interface {
	VirtualKeys(ctx context.Context, workspaceID string) ([]VirtualKey, error)
}

// deleteWorkspace refuses with 409 while the workspace holds API keys or
// virtual keys. The check and the delete are not one transaction: a key
// created for the workspace in between survives it, as a key naming an
// unregistered workspace may.
func (g *Gateway) deleteWorkspace(w http.ResponseWriter, r *http.Request, store WorkspaceStore, wid string) error {
	ctx := r.Context()
	if _, err := lookupWorkspace(ctx, store, wid); err != nil {
		return err
	}
	held := func(what string) error {
		return &Error{Status: http.StatusConflict, Type: TypeInvalidRequest, Code: CodeConflict,
			Message: "workspace " + quoteShort(wid) + " still holds " + what + "; delete them first"}
	}
	if ks, ok := g.opts.Keys.(APIKeyStore); ok {
		keys, err := ks.APIKeys(ctx, wid)
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			return held("API keys")
		}
	}
	if vs, ok := g.opts.VirtualKeys.(virtualKeyLister); ok {
		vks, err := vs.VirtualKeys(ctx, wid)
		if err != nil {
			return err
		}
		if len(vks) > 0 {
			return held("virtual keys")
		}
	}
	if err := store.DeleteWorkspace(ctx, wid); err != nil {
		if errors.Is(err, ErrNotFound) {
			return workspaceNotFound(wid)
		}
		return err
	}
	writeJSON(w, http.StatusOK, struct{}{})
	return nil
}
