package catalog

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/bounds"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// maxSecretLen bounds a secret a tenant writes.
const maxSecretLen = 16 << 10

// integrationBody is the body of POST /integrations and PUT
// /integrations/{slug} (the reference's CreateIntegrationRequest and
// UpdateIntegrationRequest). The fields the gateway does not serve
// (workspace-scoped integrations, secret mappings, pricing adjustments)
// are refused with a 400 naming them rather than ignored.
type integrationBody struct {
	Name                  *string                    `json:"name"`
	Slug                  *string                    `json:"slug"`
	Provider              *string                    `json:"ai_provider_id"`
	Key                   *string                    `json:"key"`
	Description           *string                    `json:"description"`
	WorkspaceID           *string                    `json:"workspace_id"`
	Configurations        map[string]json.RawMessage `json:"configurations"`
	CreateDefaultProvider *bool                      `json:"create_default_provider"`
	DefaultProviderSlug   *string                    `json:"default_provider_slug"`
	SecretMappings        json.RawMessage            `json:"secret_mappings"`
	PricingAdjustments    json.RawMessage            `json:"pricing_adjustments"`
}

// configField is one field of an integration's configurations: its
// names (the gateway's, then the reference's) and where it goes.
type configField struct {
	names  []string
	secret bool
	at     func(in *Integration) *string
}

var configFields = []configField{
	{[]string{"custom_host"}, false, func(in *Integration) *string { return &in.BaseURL }},
	{[]string{"resource_name", "azure_resource_name"}, false, func(in *Integration) *string { return &in.ResourceName }},
	{[]string{"deployment_id", "azure_deployment_id"}, false, func(in *Integration) *string { return &in.DeploymentID }},
	{[]string{"api_version", "azure_api_version"}, false, func(in *Integration) *string { return &in.APIVersion }},
	{[]string{"project_id", "vertex_project_id"}, false, func(in *Integration) *string { return &in.ProjectID }},
	{[]string{"region", "aws_region", "vertex_region"}, false, func(in *Integration) *string { return &in.Region }},
	{[]string{"access_key_id", "aws_access_key_id"}, false, func(in *Integration) *string { return &in.AccessKeyID }},
	{[]string{"secret_access_key", "aws_secret_access_key"}, true, func(in *Integration) *string { return &in.SecretAccessKey }},
	{[]string{"session_token", "aws_session_token"}, true, func(in *Integration) *string { return &in.SessionToken }},
}

// serveIntegrations serves the integrations of the organisation:
//
//	POST   /integrations         create → 200 {"id","slug"}
//	GET    /integrations         list   → 200 {"object":"list","total","data"}
//	GET    /integrations/{slug}  read   → 200 the integration, secrets masked
//	PUT    /integrations/{slug}  update → 200 {}
//	DELETE /integrations/{slug}  delete → 200 {} (409 while it is granted)
func (p *plane) serveIntegrations(w http.ResponseWriter, r *http.Request) {
	id, ok := p.integrationCaller(w, r)
	if !ok {
		return
	}
	slug := r.PathValue("slug")
	m := httpapi.Methods{
		http.MethodGet:  func(w http.ResponseWriter, r *http.Request) error { return p.listIntegrations(w, r, id) },
		http.MethodPost: func(w http.ResponseWriter, r *http.Request) error { return p.createIntegration(w, r) },
	}
	if slug != "" {
		m = httpapi.Methods{
			http.MethodGet: func(w http.ResponseWriter, r *http.Request) error {
				in, err := p.visibleIntegration(r, id, slug)
				if err == nil {
					httpapi.WriteJSON(w, http.StatusOK, integrationDetailOf(in))
				}
				return err
			},
			http.MethodPut:    func(w http.ResponseWriter, r *http.Request) error { return p.updateIntegration(w, r, slug) },
			http.MethodDelete: func(w http.ResponseWriter, r *http.Request) error { return p.deleteIntegration(w, r, slug) },
		}
	}
	if err := m.Serve(w, r); err != nil {
		p.fail(w, r, err)
	}
}

// serveBelow serves a route below an integration: GET answers what read
// makes of the integration as the caller sees it; writes, the other
// methods, are the organisation's.
func (p *plane) serveBelow(w http.ResponseWriter, r *http.Request, read func(id gateway.Identity, in *Integration) any, writes httpapi.Methods) {
	id, ok := p.integrationCaller(w, r)
	if !ok {
		return
	}
	writes[http.MethodGet] = func(w http.ResponseWriter, r *http.Request) error {
		in, err := p.visibleIntegration(r, id, r.PathValue("slug"))
		if err == nil {
			httpapi.WriteJSON(w, http.StatusOK, read(id, in))
		}
		return err
	}
	if err := writes.Serve(w, r); err != nil {
		p.fail(w, r, err)
	}
}

// integrationCaller checks the caller of an integrations route: the
// virtual_keys scopes, writes by organisation keys only, and a store.
func (p *plane) integrationCaller(w http.ResponseWriter, r *http.Request) (gateway.Identity, bool) {
	id, ok := control.Scoped(w, r, gateway.ScopeVirtualKeysRead, gateway.ScopeVirtualKeysWrite)
	if !ok {
		return id, false
	}
	if p.o.Store == nil {
		gateway.WriteError(w, r, notManaged("integrations"))
		return id, false
	}
	if r.Method != http.MethodGet && id.Type != gateway.KeyOrganisation {
		gateway.WriteError(w, r, control.Forbidden("", "only an organisation key may write integrations"))
		return id, false
	}
	return id, true
}

// visibleIntegration returns the integration slug as the caller id sees
// it: any for an organisation key, one granted to its workspace for a
// workspace key; 404 otherwise.
func (p *plane) visibleIntegration(r *http.Request, id gateway.Identity, slug string) (*Integration, error) {
	in, err := p.o.Store.Integration(r.Context(), slug)
	if errors.Is(err, gateway.ErrNotFound) || err == nil && !sees(id, in) {
		return nil, integrationNotFound(slug)
	}
	return in, err
}

func sees(id gateway.Identity, in *Integration) bool {
	return id.Type == gateway.KeyOrganisation || id.WorkspaceID != "" && in.Grant(id.WorkspaceID) != nil
}

func integrationNotFound(slug string) *gateway.Error {
	return control.NotFound("no integration " + control.Quote(slug))
}

func (p *plane) listIntegrations(w http.ResponseWriter, r *http.Request, id gateway.Identity) error {
	q := r.URL.Query()
	page, err := control.Page(q)
	if err != nil {
		return err
	}
	typ, err := control.Enum(q, "type", "all", "workspace", "organisation", "all")
	if err != nil {
		return err
	}
	ws, err := control.WorkspaceParam(q)
	if err != nil {
		return err
	}
	if id.Type != gateway.KeyOrganisation {
		if ws != "" && ws != id.WorkspaceID {
			return control.OtherWorkspace()
		}
		ws = id.WorkspaceID
	}
	all, err := p.o.Store.Integrations(r.Context())
	if err != nil {
		return err
	}
	keep := func(in *Integration) bool {
		// Every integration is the organisation's: none is of one workspace.
		return typ != "workspace" && sees(id, in) && (ws == "" || in.Grant(ws) != nil)
	}
	data, total := httpapi.Filter(all, keep, integrationListOf, page)
	httpapi.WriteJSON(w, http.StatusOK, struct {
		Object string            `json:"object"`
		Total  int               `json:"total"`
		Data   []integrationList `json:"data"`
	}{"list", total, data})
	return nil
}

// unsupported refuses the fields of b the gateway does not serve.
func (b *integrationBody) unsupported() error {
	switch {
	case b.WorkspaceID != nil && *b.WorkspaceID != "":
		return control.Invalid("workspace_id", "integrations are the organisation's: leave workspace_id out, and grant the integration with PUT /integrations/{slug}/workspaces (a workspace's own credential is a virtual key)")
	case len(b.SecretMappings) > 0 && string(b.SecretMappings) != "null":
		return control.Invalid("secret_mappings", "secret_mappings are not supported: send the key itself")
	case len(b.PricingAdjustments) > 0 && string(b.PricingAdjustments) != "null":
		return control.Invalid("pricing_adjustments", "pricing_adjustments are not supported: price custom models with PUT /integrations/{slug}/models")
	}
	return nil
}

// apply checks b's changeable fields and sets them on in.
func (p *plane) apply(b *integrationBody, in *Integration) error {
	if b.Name != nil {
		in.Name = *b.Name
	}
	if b.Description != nil {
		if err := control.Description("description", *b.Description); err != nil {
			return err
		}
		in.Description = *b.Description
	}
	if b.Key != nil {
		if len(*b.Key) > maxSecretLen {
			return control.Invalid("key", "key must be at most 16 KiB")
		}
		in.APIKey = *b.Key
	}
	for _, name := range slices.Sorted(maps.Keys(b.Configurations)) {
		raw := b.Configurations[name]
		f, ok := configFieldNamed(name)
		if !ok {
			return control.Invalid("configurations."+name, "unknown configuration "+control.Quote(name)+
				": custom_host, resource_name, deployment_id, api_version, project_id, region, access_key_id, secret_access_key or session_token")
		}
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return control.Invalid("configurations."+name, "configurations."+name+" must be a string")
		}
		if len(v) > maxSecretLen {
			return control.Invalid("configurations."+name, "configurations."+name+" must be at most 16 KiB")
		}
		*f.at(in) = v
	}
	if in.BaseURL != "" {
		if err := control.CheckHost(p.g, in.BaseURL, "configurations.custom_host"); err != nil {
			return err
		}
	}
	h := &in.HostSettings
	switch {
	case h.ResourceName != "" && !bounds.DNSLabel(h.ResourceName):
		return control.Invalid("configurations.resource_name", "resource_name must be a DNS label")
	case h.ProjectID != "" && !bounds.ProjectID(h.ProjectID):
		return control.Invalid("configurations.project_id", "project_id must be a project id or number")
	case h.Region != "" && !bounds.Region(h.Region):
		return control.Invalid("configurations.region", "region must be a region name such as us-east-1")
	}
	return nil
}

func configFieldNamed(name string) (configField, bool) {
	for _, f := range configFields {
		for _, n := range f.names {
			if n == name {
				return f, true
			}
		}
	}
	return configField{}, false
}

func (p *plane) createIntegration(w http.ResponseWriter, r *http.Request) error {
	var b integrationBody
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	if err := b.unsupported(); err != nil {
		return err
	}
	if err := control.CheckName(b.Name, true); err != nil {
		return err
	}
	slug, err := control.NewSlug(b.Slug, *b.Name)
	if err != nil {
		return err
	}
	if b.Provider == nil || *b.Provider == "" {
		return control.Invalid("ai_provider_id", "ai_provider_id is required")
	}
	if _, ok := p.g.Provider(*b.Provider); !ok || *b.Provider != strings.ToLower(*b.Provider) {
		return control.Invalid("ai_provider_id", "unknown provider "+control.Quote(*b.Provider))
	}
	now := p.now()
	in := &Integration{ID: control.NewUUID(), Slug: slug, Provider: *b.Provider, AllowAllModels: true, CreatedAt: now, UpdatedAt: now}
	if err := p.apply(&b, in); err != nil {
		return err
	}
	if err := p.o.Store.CreateIntegration(r.Context(), in); err != nil {
		if errors.Is(err, gateway.ErrConflict) {
			return control.Conflict("slug", "the organisation already has an integration "+control.Quote(slug))
		}
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, struct {
		ID   string `json:"id"`
		Slug string `json:"slug"`
	}{in.ID, in.Slug})
	return nil
}

// hostOf is what of in names where its secrets go.
func hostOf(in *Integration) [4]string {
	return [4]string{in.BaseURL, in.ResourceName, in.ProjectID, in.Region}
}

func (p *plane) updateIntegration(w http.ResponseWriter, r *http.Request, slug string) error {
	var b integrationBody
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	switch {
	case b.Slug != nil:
		return control.Invalid("slug", "slug cannot be changed")
	case b.Provider != nil:
		return control.Invalid("ai_provider_id", "ai_provider_id cannot be changed; create another integration")
	case b.CreateDefaultProvider != nil || b.DefaultProviderSlug != nil:
		return control.Invalid("default_provider_slug", "providers are made by PUT /integrations/{slug}/workspaces")
	}
	if err := b.unsupported(); err != nil {
		return err
	}
	if err := control.CheckName(b.Name, false); err != nil {
		return err
	}
	return p.change(r, slug, func(old *Integration) (*Integration, error) {
		in := old.Clone()
		if err := p.apply(&b, in); err != nil {
			return nil, err
		}
		if hostOf(in) != hostOf(old) {
			// The secrets would go to another host: they must come again.
			if old.APIKey != "" && b.Key == nil {
				return nil, control.SecretRequired("key", "changing the host of an integration sends its key there: send key again in the same request")
			}
			control.Detail(r, "host: "+control.AuditURL(old.BaseURL)+" → "+control.AuditURL(in.BaseURL))
		}
		in.UpdatedAt = p.now()
		return in, nil
	}, func() { httpapi.WriteJSON(w, http.StatusOK, struct{}{}) })
}

// change reads the integration slug, makes the new one with fn and writes
// it only if the stored one is still as read (see control.SwapStored).
func (p *plane) change(r *http.Request, slug string, fn func(old *Integration) (*Integration, error), answer func()) error {
	err := control.SwapStored(r, "integration "+control.Quote(slug), integrationNotFound(slug), func() (error, error) {
		old, err := p.o.Store.Integration(r.Context(), slug)
		if errors.Is(err, gateway.ErrNotFound) {
			return nil, integrationNotFound(slug)
		} else if err != nil {
			return nil, err
		}
		in, err := fn(old.Clone())
		if err != nil {
			return nil, err
		}
		return p.o.Store.UpdateIntegration(r.Context(), old, in), nil
	})
	if err == nil {
		answer()
	}
	return err
}

func (p *plane) deleteIntegration(w http.ResponseWriter, r *http.Request, slug string) error {
	in, err := p.o.Store.Integration(r.Context(), slug)
	if errors.Is(err, gateway.ErrNotFound) {
		return integrationNotFound(slug)
	} else if err != nil {
		return err
	}
	if len(in.Workspaces) > 0 {
		return control.Conflict("", "integration "+control.Quote(slug)+" is granted to "+
			control.Quote(in.Workspaces[0].WorkspaceID)+": revoke its workspaces first (PUT /integrations/{slug}/workspaces)")
	}
	if err := p.o.Store.DeleteIntegration(r.Context(), slug); err != nil {
		if errors.Is(err, gateway.ErrNotFound) {
			return integrationNotFound(slug)
		}
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, struct{}{})
	return nil
}

// integrationList is an integration in lists (the reference's
// IntegrationList).
type integrationList struct {
	ID             string    `json:"id"`
	OrganisationID string    `json:"organisation_id"`
	Provider       string    `json:"ai_provider_id"`
	Name           string    `json:"name"`
	Status         string    `json:"status"`
	CreatedAt      time.Time `json:"created_at"`
	LastUpdatedAt  time.Time `json:"last_updated_at"`
	Slug           string    `json:"slug"`
	Description    string    `json:"description"`
	Object         string    `json:"object"`
}

func integrationListOf(in *Integration) integrationList {
	return integrationList{ID: in.ID, Provider: in.Provider, Name: in.Name, Status: "active", CreatedAt: in.CreatedAt,
		LastUpdatedAt: in.UpdatedAt, Slug: in.Slug, Description: in.Description, Object: "integration"}
}

// integrationDetail is an integration read alone (the reference's
// IntegrationDetailResponse): secrets masked, a secret configuration
// under its name prefixed masked_.
type integrationDetail struct {
	integrationList
	MaskedKey      string            `json:"masked_key"`
	Configurations map[string]string `json:"configurations"`
	GlobalAccess   *struct{}         `json:"global_workspace_access_settings"`
	AllowAllModels bool              `json:"allow_all_models"`
	WorkspaceCount int               `json:"workspace_count"`
}

func integrationDetailOf(in *Integration) integrationDetail {
	cfg := map[string]string{}
	for _, f := range configFields {
		v := *f.at(in)
		switch {
		case v == "":
		case f.secret:
			cfg["masked_"+f.names[0]] = control.MaskSecret(v)
		default:
			cfg[f.names[0]] = v
		}
	}
	return integrationDetail{integrationList: integrationListOf(in), MaskedKey: control.MaskSecret(in.APIKey),
		Configurations: cfg, AllowAllModels: in.AllowAllModels, WorkspaceCount: len(in.Workspaces)}
}
