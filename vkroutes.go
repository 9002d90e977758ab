package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// VirtualKeyAdmin is an optional capability of Options.VirtualKeys, found
// by type assertion: keeping virtual keys per workspace, as the virtual
// keys control plane needs. Without it every call to /virtual-keys is a
// 404 saying that virtual keys are not managed on this gateway.
// MemoryStore implements it.
//
// A virtual key is stored under its WorkspaceID and Slug: a slug is unique
// within a workspace, and the same slug may live in several workspaces
// (and once with no workspace). The data plane finds the slug a caller
// names in the caller's workspace with VirtualKeyIn first, then with
// VirtualKey (of VirtualKeyStore), which should prefer the key of no
// workspace; a key of another workspace found that way answers as an
// unknown one (400 unknown_virtual_key), so that no caller learns it
// exists.
//
// Implementations must be safe for concurrent use, and each method atomic
// with respect to the others. VirtualKeyIn, UpdateVirtualKey and
// DeleteVirtualKey return ErrNotFound for an unknown workspace and slug.
// A key returned by VirtualKeyIn may be shared and must not be modified;
// VirtualKeys returns copies. VirtualKeys returns the keys whose
// WorkspaceID is workspaceID, or every key when workspaceID is empty,
// ordered by CreatedAt, then WorkspaceID and Slug. CreateVirtualKey
// returns ErrConflict when the workspace already holds the slug.
// UpdateVirtualKey replaces the stored key of old's workspace and slug
// with vk (of the same workspace and slug) only if the stored key still
// has old's UpdatedAt, and returns ErrConflict otherwise.
type VirtualKeyAdmin interface {
	VirtualKeyStore
	VirtualKeyIn(ctx context.Context, workspaceID, slug string) (*VirtualKey, error)
	VirtualKeys(ctx context.Context, workspaceID string) ([]VirtualKey, error)
	CreateVirtualKey(ctx context.Context, vk *VirtualKey) error
	UpdateVirtualKey(ctx context.Context, old, vk *VirtualKey) error
	DeleteVirtualKey(ctx context.Context, workspaceID, slug string) error
}

// virtualKeyObject is the "object" of a virtual key in responses.
const virtualKeyObject = "virtual-key"

// Bounds of the virtual keys and configs control planes.
const (
	maxSlugLen   = 64
	maxNoteLen   = 4096
	maxSecretLen = 16 << 10
)

// findVirtualKey is the data plane's lookup of slug for a caller of
// workspace ws (see VirtualKeyAdmin).
func findVirtualKey(ctx context.Context, st VirtualKeyStore, ws, slug string) (*VirtualKey, error) {
	if a, ok := st.(VirtualKeyAdmin); ok && ws != "" {
		vk, err := a.VirtualKeyIn(ctx, ws, slug)
		if !errors.Is(err, ErrNotFound) {
			return vk, err
		}
	}
	return st.VirtualKey(ctx, slug)
}

// serveVirtualKeys serves the virtual keys control plane under
// {prefix}/virtual-keys (the control plane, the reference's shapes):
//
//	POST   /virtual-keys         create → 200 {"success":true,"data":{"slug"}}
//	GET    /virtual-keys         list   → 200 {"object":"list","data","total"}
//	GET    /virtual-keys/{slug}  read   → 200 the virtual key, secrets masked
//	PUT    /virtual-keys/{slug}  update → 200 {}
//	DELETE /virtual-keys/{slug}  delete → 200 {}
//
// Reads need the virtual_keys.read scope, writes virtual_keys.write (403
// otherwise). A workspace key acts on its own workspace only: another
// workspace's virtual key is a 404, as if it did not exist. An
// organisation key names a workspace with workspace_id (in the query, or
// the body of a create); without it, it acts on the virtual keys of no
// workspace, which every workspace may use, and its list shows every
// virtual key. A key of no workspace that is not an organisation key may
// not use this control plane (403).
//
// The credential (key, secret_access_key, session_token) is never
// returned: reads show it masked, its first 2 and last 2 characters with
// '*' between (all '*' for one shorter than 8).
//
// What these routes write is a tenant's (docs/architecture.md, Trust): a key whose host
// they set is marked VirtualKey.Tenant, and its base_url is guarded like
// an x-gateway-custom-host (Options.CustomHostAllow) when written and when
// used, its names resolved and every address checked at each dial.
// resource_name, project_id and region must be DNS labels (a region a
// lower-case one starting with a letter), so that they only ever pick a
// resource under the provider's own domain. An update that changes where
// a stored secret goes (base_url, resource_name, project_id, region)
// must send that secret again (key, secret_access_key, session_token,
// whichever the key holds), else 400 secret_required; its audit record
// names the old and new host. allowed_routes (see VirtualKey) is
// validated when written.
func (g *Gateway) serveVirtualKeys(w http.ResponseWriter, r *http.Request) {
	id, ok := scopedIdentity(w, r, ScopeVirtualKeysRead, ScopeVirtualKeysWrite)
	if !ok {
		return
	}
	store, ok := g.opts.VirtualKeys.(VirtualKeyAdmin)
	if !ok {
		WriteError(w, r, &Error{Status: http.StatusNotFound, Type: TypeNotFound, Code: CodeNotFound,
			Message: "virtual keys are not managed on this gateway"})
		return
	}
	err := virtualKeyKind(store).serve(w, r, id, r.PathValue("slug"), g.createVirtualKey, g.getVirtualKey, g.updateVirtualKey)
	if err != nil {
		g.controlPlaneError(w, r, "virtual key store", err)
	}
}

// virtualKeyKind is the virtual keys of store for the shared skeleton of
// the routes of records kept by workspace and slug.
func virtualKeyKind(store VirtualKeyAdmin) *slugKind[VirtualKey, virtualKeyWire] {
	return &slugKind[VirtualKey, virtualKeyWire]{what: "virtual key",
		in: store.VirtualKeyIn, all: store.VirtualKeys, create: store.CreateVirtualKey,
		update: store.UpdateVirtualKey, delete: store.DeleteVirtualKey,
		ws:    func(vk *VirtualKey) string { return vk.WorkspaceID },
		clone: func(vk *VirtualKey) *VirtualKey { c := *vk; return &c },
		wire:  (*VirtualKey).wire,
	}
}

// virtualKeyBody is the body of POST /virtual-keys and PUT
// /virtual-keys/{slug}: the reference's fields name, key and note, the
// slug, provider, base_url, allowed_routes and host settings of the store
// file's virtual_keys entries, and workspace_id. Absent fields of an
// update are left as they are; slug, provider and workspace_id cannot be
// changed.
type virtualKeyBody struct {
	Name          *string   `json:"name"`
	Slug          *string   `json:"slug"`
	Provider      *string   `json:"provider"`
	Key           *string   `json:"key"`
	Note          *string   `json:"note"`
	BaseURL       *string   `json:"base_url"`
	WorkspaceID   *string   `json:"workspace_id"`
	AllowedRoutes *[]string `json:"allowed_routes"`

	ResourceName    *string `json:"resource_name"`
	DeploymentID    *string `json:"deployment_id"`
	APIVersion      *string `json:"api_version"`
	ModelName       *string `json:"model_name"`
	ProjectID       *string `json:"project_id"`
	Region          *string `json:"region"`
	AccessKeyID     *string `json:"access_key_id"`
	SecretAccessKey *string `json:"secret_access_key"`
	SessionToken    *string `json:"session_token"`
}

// hostField is one host setting of a virtualKeyBody and where it goes.
type hostField struct {
	name string
	in   *string
	out  *string
}

func (b *virtualKeyBody) hostFields(h *HostSettings) []hostField {
	return []hostField{
		{"resource_name", b.ResourceName, &h.ResourceName},
		{"deployment_id", b.DeploymentID, &h.DeploymentID},
		{"api_version", b.APIVersion, &h.APIVersion},
		{"model_name", b.ModelName, &h.ModelName},
		{"project_id", b.ProjectID, &h.ProjectID},
		{"region", b.Region, &h.Region},
		{"access_key_id", b.AccessKeyID, &h.AccessKeyID},
		{"secret_access_key", b.SecretAccessKey, &h.SecretAccessKey},
		{"session_token", b.SessionToken, &h.SessionToken},
	}
}

// apply checks b's changeable fields and sets them on vk.
func (g *Gateway) applyVirtualKeyBody(b *virtualKeyBody, vk *VirtualKey) error {
	if b.Name != nil {
		vk.Name = *b.Name
	}
	if b.Key != nil {
		if len(*b.Key) > maxSecretLen {
			return policyInvalid("key", "key must be at most 16 KiB")
		}
		vk.APIKey = *b.Key
	}
	if b.Note != nil {
		if len(*b.Note) > maxNoteLen || !utf8.ValidString(*b.Note) {
			return policyInvalid("note", "note must be valid UTF-8 of at most 4096 bytes")
		}
		vk.Note = *b.Note
	}
	if b.BaseURL != nil {
		if *b.BaseURL != "" {
			if _, err := g.guard.checkURL(*b.BaseURL, "base_url"); err != nil {
				return err
			}
		}
		vk.BaseURL = *b.BaseURL
	}
	if b.AllowedRoutes != nil {
		if err := CheckAllowedRoutes(*b.AllowedRoutes); err != nil {
			return err
		}
		vk.AllowedRoutes = slices.Clone(*b.AllowedRoutes)
	}
	for _, f := range b.hostFields(&vk.HostSettings) {
		if f.in == nil {
			continue
		}
		if len(*f.in) > maxSecretLen {
			return policyInvalid(f.name, f.name+" must be at most 16 KiB")
		}
		*f.out = *f.in
	}
	// The settings that name a host: labels only, so that no value can
	// move a request off the provider's own domain.
	h := &vk.HostSettings
	switch {
	case b.ResourceName != nil && h.ResourceName != "" && !dnsLabel(h.ResourceName):
		return policyInvalid("resource_name", "resource_name must be a DNS label: 1 to 63 letters, digits or hyphens, not starting or ending with a hyphen")
	case b.ProjectID != nil && h.ProjectID != "" && !gcpProjectID(h.ProjectID):
		return policyInvalid("project_id", "project_id must be a project id or number: 1 to 63 lower-case letters, digits or hyphens")
	case b.Region != nil && h.Region != "" && !cloudRegion(h.Region):
		return policyInvalid("region", "region must be a region name such as us-east-1, us-central1 or global")
	}
	return nil
}

// hostChanges lists, for the audit record, the settings of vk that name
// where its secrets go and differ from old's: "base_url: <old> → <new>"
// (URLs without user info, query or fragment), "region: a → b".
func hostChanges(old, vk *VirtualKey) []string {
	var out []string
	if old.BaseURL != vk.BaseURL {
		out = append(out, "base_url: "+auditURL(old.BaseURL)+" → "+auditURL(vk.BaseURL))
	}
	for _, f := range []struct{ name, a, b string }{
		{"resource_name", old.ResourceName, vk.ResourceName},
		{"project_id", old.ProjectID, vk.ProjectID},
		{"region", old.Region, vk.Region},
	} {
		if f.a != f.b {
			out = append(out, f.name+": "+auditValue(f.a)+" → "+auditValue(f.b))
		}
	}
	return out
}

// auditURL is raw, a base URL or custom host, as an audit record shows it:
// without user info, query or fragment, which may carry a secret.
func auditURL(raw string) string {
	if raw == "" {
		return "(none)"
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}

// auditValue is a host setting as an audit record shows it.
func auditValue(s string) string {
	if s == "" {
		return "(none)"
	}
	return quoteShort(s)
}

// secretResent refuses, with 400 secret_required, an update of old that
// changes where its secrets go (changes is not empty) without sending
// each secret old holds again.
func (b *virtualKeyBody) secretResent(old *VirtualKey, changes []string) error {
	if len(changes) == 0 {
		return nil
	}
	for _, f := range []struct {
		name   string
		stored string
		sent   *string
	}{
		{"key", old.APIKey, b.Key},
		{"secret_access_key", old.SecretAccessKey, b.SecretAccessKey},
		{"session_token", old.SessionToken, b.SessionToken},
	} {
		if f.stored != "" && f.sent == nil {
			what, _, _ := strings.Cut(changes[0], ":")
			return badRequest(CodeSecretRequired, f.name, "changing "+what+" sends the stored "+f.name+
				" to another host: send "+f.name+" again in the same request")
		}
	}
	return nil
}

func (g *Gateway) createVirtualKey(w http.ResponseWriter, r *http.Request, k *slugKind[VirtualKey, virtualKeyWire], id Identity) error {
	var b virtualKeyBody
	if err := g.decodeStrict(w, r, &b, false); err != nil {
		return err
	}
	if err := checkName(b.Name, true); err != nil {
		return err
	}
	ws, slug, err := k.createIn(r, id, b.WorkspaceID, b.Slug, *b.Name)
	if err != nil {
		return err
	}
	if b.Provider == nil || *b.Provider == "" {
		return policyInvalid("provider", "provider is required")
	}
	if _, ok := g.providers[*b.Provider]; !ok {
		return policyInvalid("provider", "unknown provider "+quoteShort(*b.Provider))
	}
	orgActedIn(r, id, ws)
	now := g.clock().UTC()
	// Written through the control plane: a tenant's key, its host guarded.
	vk := VirtualKey{Slug: slug, Provider: *b.Provider, WorkspaceID: ws, CreatedAt: now, UpdatedAt: now, Tenant: true}
	if err := g.applyVirtualKeyBody(&b, &vk); err != nil {
		return err
	}
	if err := k.store(r, slug, &vk); err != nil {
		return err
	}
	type data struct {
		Slug string `json:"slug"`
	}
	writeJSON(w, http.StatusOK, struct {
		Success bool `json:"success"`
		Data    data `json:"data"`
	}{true, data{slug}})
	return nil
}

// virtualKeyWire is a virtual key in answers: the reference's VirtualKeys
// object with the fields of the create body. Key and the secrets of the
// host settings are masked.
type virtualKeyWire struct {
	Slug          string    `json:"slug"`
	Name          string    `json:"name"`
	Note          string    `json:"note"`
	Provider      string    `json:"provider"`
	Key           string    `json:"key"`
	BaseURL       string    `json:"base_url,omitempty"`
	AllowedRoutes []string  `json:"allowed_routes,omitempty"`
	WorkspaceID   string    `json:"workspace_id,omitempty"`
	Status        string    `json:"status"`
	CreatedAt     time.Time `json:"created_at,omitzero"`
	LastUpdatedAt time.Time `json:"last_updated_at,omitzero"`
	HostSettings
	Object string `json:"object"`
}

func (vk *VirtualKey) wire() virtualKeyWire {
	o := virtualKeyWire{Slug: vk.Slug, Name: vk.Name, Note: vk.Note, Provider: vk.Provider, Key: maskSecret(vk.APIKey),
		BaseURL: vk.BaseURL, AllowedRoutes: vk.AllowedRoutes, WorkspaceID: vk.WorkspaceID, Status: "active", CreatedAt: vk.CreatedAt,
		LastUpdatedAt: vk.UpdatedAt, HostSettings: vk.HostSettings, Object: virtualKeyObject}
	o.SecretAccessKey = maskSecret(o.SecretAccessKey)
	o.SessionToken = maskSecret(o.SessionToken)
	return o
}

func (g *Gateway) getVirtualKey(w http.ResponseWriter, r *http.Request, k *slugKind[VirtualKey, virtualKeyWire], id Identity, slug string) error {
	vk, err := k.lookup(r, id, slug)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, vk.wire())
	return nil
}

func (g *Gateway) updateVirtualKey(w http.ResponseWriter, r *http.Request, k *slugKind[VirtualKey, virtualKeyWire], id Identity, slug string) error {
	var b virtualKeyBody
	if err := g.decodeStrict(w, r, &b, false); err != nil {
		return err
	}
	if b.Slug == nil && b.Provider != nil {
		return policyInvalid("provider", "provider cannot be changed; create another virtual key")
	}
	if err := fixed(b.Slug, b.WorkspaceID); err != nil {
		return err
	}
	if err := checkName(b.Name, false); err != nil {
		return err
	}
	return k.change(w, r, id, slug, func(old *VirtualKey) (*VirtualKey, []string, error) {
		vk := *old
		if err := g.applyVirtualKeyBody(&b, &vk); err != nil {
			return nil, nil, err
		}
		changes := hostChanges(old, &vk)
		if err := b.secretResent(old, changes); err != nil {
			return nil, nil, err
		}
		// A host the tenant set makes the key a tenant's; other changes
		// leave the operator's host as trusted as it was.
		vk.Tenant = old.Tenant || len(changes) > 0
		vk.UpdatedAt = g.clock().UTC()
		return &vk, changes, nil
	}, func(*VirtualKey) { writeJSON(w, http.StatusOK, struct{}{}) })
}
