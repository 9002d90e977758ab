package admin

import (
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/bounds"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// virtualKeyObject is the "object" of a virtual key in responses.
const virtualKeyObject = "virtual-key"

// Bounds of the virtual keys and configs control planes.
const (
	maxNoteLen   = 4096
	maxSecretLen = 16 << 10
)

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
func (a *plane) serveVirtualKeys(w http.ResponseWriter, r *http.Request) {
	id, ok := control.Scoped(w, r, gateway.ScopeVirtualKeysRead, gateway.ScopeVirtualKeysWrite)
	if !ok {
		return
	}
	store := a.o.VirtualKeys
	if store == nil {
		gateway.WriteError(w, r, &gateway.Error{Status: http.StatusNotFound, Type: gateway.TypeNotFound, Code: gateway.CodeNotFound,
			Message: "virtual keys are not managed on this gateway"})
		return
	}
	err := virtualKeyKind(store).Serve(w, r, id, r.PathValue("slug"), a.createVirtualKey, a.getVirtualKey, a.updateVirtualKey)
	if err != nil {
		control.Fail(w, r, a.o.ErrorLog, "virtual key store", err)
	}
}

// virtualKeyKind is the virtual keys of store for the shared skeleton of
// the routes of records kept by workspace and slug.
func virtualKeyKind(store VirtualKeyStore) *control.SlugKind[gateway.VirtualKey, virtualKeyWire] {
	return &control.SlugKind[gateway.VirtualKey, virtualKeyWire]{What: "virtual key",
		In: store.VirtualKeyIn, All: store.VirtualKeys, Create: store.CreateVirtualKey,
		Update: store.UpdateVirtualKey, Delete: store.DeleteVirtualKey,
		WS:    func(vk *gateway.VirtualKey) string { return vk.WorkspaceID },
		Clone: func(vk *gateway.VirtualKey) *gateway.VirtualKey { c := *vk; return &c },
		Wire:  virtualKeyWireOf,
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

func (b *virtualKeyBody) hostFields(h *gateway.HostSettings) []hostField {
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
func (a *plane) applyVirtualKeyBody(b *virtualKeyBody, vk *gateway.VirtualKey) error {
	if b.Name != nil {
		vk.Name = *b.Name
	}
	if b.Key != nil {
		if len(*b.Key) > maxSecretLen {
			return control.Invalid("key", "key must be at most 16 KiB")
		}
		vk.APIKey = *b.Key
	}
	if b.Note != nil {
		if len(*b.Note) > maxNoteLen || !utf8.ValidString(*b.Note) {
			return control.Invalid("note", "note must be valid UTF-8 of at most 4096 bytes")
		}
		vk.Note = *b.Note
	}
	if b.BaseURL != nil {
		if *b.BaseURL != "" {
			if err := control.CheckHost(a.g, *b.BaseURL, "base_url"); err != nil {
				return err
			}
		}
		vk.BaseURL = *b.BaseURL
	}
	if b.AllowedRoutes != nil {
		if err := gateway.CheckAllowedRoutes(*b.AllowedRoutes); err != nil {
			return err
		}
		vk.AllowedRoutes = slices.Clone(*b.AllowedRoutes)
	}
	for _, f := range b.hostFields(&vk.HostSettings) {
		if f.in == nil {
			continue
		}
		if len(*f.in) > maxSecretLen {
			return control.Invalid(f.name, f.name+" must be at most 16 KiB")
		}
		*f.out = *f.in
	}
	// The settings that name a host: labels only, so that no value can
	// move a request off the provider's own domain.
	h := &vk.HostSettings
	switch {
	case b.ResourceName != nil && h.ResourceName != "" && !bounds.DNSLabel(h.ResourceName):
		return control.Invalid("resource_name", "resource_name must be a DNS label: 1 to 63 letters, digits or hyphens, not starting or ending with a hyphen")
	case b.ProjectID != nil && h.ProjectID != "" && !bounds.ProjectID(h.ProjectID):
		return control.Invalid("project_id", "project_id must be a project id or number: 1 to 63 lower-case letters, digits or hyphens")
	case b.Region != nil && h.Region != "" && !bounds.Region(h.Region):
		return control.Invalid("region", "region must be a region name such as us-east-1, us-central1 or global")
	}
	return nil
}

// hostChanges lists, for the audit record, the settings of vk that name
// where its secrets go and differ from old's: "base_url: <old> → <new>"
// (URLs without user info, query or fragment), "region: a → b".
func hostChanges(old, vk *gateway.VirtualKey) []string {
	var out []string
	if old.BaseURL != vk.BaseURL {
		out = append(out, "base_url: "+control.AuditURL(old.BaseURL)+" → "+control.AuditURL(vk.BaseURL))
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

// auditValue is a host setting as an audit record shows it.
func auditValue(s string) string {
	if s == "" {
		return "(none)"
	}
	return control.Quote(s)
}

// secretResent refuses, with 400 secret_required, an update of old that
// changes where its secrets go (changes is not empty) without sending
// each secret old holds again.
func (b *virtualKeyBody) secretResent(old *gateway.VirtualKey, changes []string) error {
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
			return control.SecretRequired(f.name, "changing "+what+" sends the stored "+f.name+
				" to another host: send "+f.name+" again in the same request")
		}
	}
	return nil
}

func (a *plane) createVirtualKey(w http.ResponseWriter, r *http.Request, k *control.SlugKind[gateway.VirtualKey, virtualKeyWire], id gateway.Identity) error {
	var b virtualKeyBody
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	if err := control.CheckName(b.Name, true); err != nil {
		return err
	}
	ws, slug, err := k.CreateIn(id, b.WorkspaceID, b.Slug, *b.Name)
	if err != nil {
		return err
	}
	if b.Provider == nil || *b.Provider == "" {
		return control.Invalid("provider", "provider is required")
	}
	if _, ok := a.g.Provider(*b.Provider); !ok || *b.Provider != strings.ToLower(*b.Provider) {
		return control.Invalid("provider", "unknown provider "+control.Quote(*b.Provider))
	}
	control.OrgActedIn(r, id, ws)
	now := a.now().UTC()
	// Written through the control plane: a tenant's key, its host guarded.
	vk := gateway.VirtualKey{Slug: slug, Provider: *b.Provider, WorkspaceID: ws, CreatedAt: now, UpdatedAt: now, Tenant: true}
	if err := a.applyVirtualKeyBody(&b, &vk); err != nil {
		return err
	}
	if err := k.Store(r, slug, &vk); err != nil {
		return err
	}
	type data struct {
		Slug string `json:"slug"`
	}
	httpapi.WriteJSON(w, http.StatusOK, struct {
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
	gateway.HostSettings
	Object string `json:"object"`
}

func virtualKeyWireOf(vk *gateway.VirtualKey) virtualKeyWire {
	o := virtualKeyWire{Slug: vk.Slug, Name: vk.Name, Note: vk.Note, Provider: vk.Provider, Key: control.MaskSecret(vk.APIKey),
		BaseURL: vk.BaseURL, AllowedRoutes: vk.AllowedRoutes, WorkspaceID: vk.WorkspaceID, Status: "active", CreatedAt: vk.CreatedAt,
		LastUpdatedAt: vk.UpdatedAt, HostSettings: vk.HostSettings, Object: virtualKeyObject}
	o.SecretAccessKey = control.MaskSecret(o.SecretAccessKey)
	o.SessionToken = control.MaskSecret(o.SessionToken)
	return o
}

func (a *plane) getVirtualKey(w http.ResponseWriter, r *http.Request, k *control.SlugKind[gateway.VirtualKey, virtualKeyWire], id gateway.Identity, slug string) error {
	vk, err := k.Lookup(r, id, slug)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, virtualKeyWireOf(vk))
	return nil
}

func (a *plane) updateVirtualKey(w http.ResponseWriter, r *http.Request, k *control.SlugKind[gateway.VirtualKey, virtualKeyWire], id gateway.Identity, slug string) error {
	var b virtualKeyBody
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	if b.Slug == nil && b.Provider != nil {
		return control.Invalid("provider", "provider cannot be changed; create another virtual key")
	}
	if err := control.Fixed(b.Slug, b.WorkspaceID); err != nil {
		return err
	}
	if err := control.CheckName(b.Name, false); err != nil {
		return err
	}
	return k.Change(r, id, slug, func(old *gateway.VirtualKey) (*gateway.VirtualKey, []string, error) {
		vk := *old
		if err := a.applyVirtualKeyBody(&b, &vk); err != nil {
			return nil, nil, err
		}
		changes := hostChanges(old, &vk)
		if err := b.secretResent(old, changes); err != nil {
			return nil, nil, err
		}
		// A host the tenant set makes the key a tenant's; other changes
		// leave the operator's host as trusted as it was.
		vk.Tenant = old.Tenant || len(changes) > 0
		vk.UpdatedAt = a.now().UTC()
		return &vk, changes, nil
	}, func(*gateway.VirtualKey) { httpapi.WriteJSON(w, http.StatusOK, struct{}{}) })
}
