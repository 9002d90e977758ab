package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// integration is an integration as GET /integrations lists it and GET
// /integrations/{slug} answers it: its credential masked, a secret
// configuration only as masked_….
type integration struct {
	ID             string            `json:"id"`
	Slug           string            `json:"slug"`
	Name           string            `json:"name"`
	Provider       string            `json:"ai_provider_id"`
	Status         string            `json:"status"`
	Description    string            `json:"description"`
	CreatedAt      time.Time         `json:"created_at"`
	LastUpdatedAt  time.Time         `json:"last_updated_at"`
	MaskedKey      string            `json:"masked_key"`
	Configurations map[string]string `json:"configurations"`
	AllowAllModels bool              `json:"allow_all_models"`
	WorkspaceCount int               `json:"workspace_count"`
}

// integrationModel is a model of an integration, as GET
// /integrations/{slug}/models answers it.
type integrationModel struct {
	Slug     string          `json:"slug"`
	Name     string          `json:"name"`
	Enabled  bool            `json:"enabled"`
	Custom   bool            `json:"is_custom"`
	Finetune bool            `json:"is_finetune"`
	Pricing  json.RawMessage `json:"pricing_config"`
}

// grant is a workspace's access to an integration, as GET
// /integrations/{slug}/workspaces answers it.
type grant struct {
	ID          string          `json:"id"`
	Enabled     bool            `json:"enabled"`
	Provider    string          `json:"provider_slug"`
	RateLimits  json.RawMessage `json:"rate_limits"`
	UsageLimits json.RawMessage `json:"usage_limits"`
}

// provider is a provider of a workspace as GET /providers lists it.
type provider struct {
	Slug          string    `json:"slug"`
	Name          string    `json:"name"`
	Provider      string    `json:"ai_provider_id"`
	IntegrationID string    `json:"integration_id"`
	WorkspaceID   string    `json:"workspace_id"`
	Status        string    `json:"status"`
	CreatedAt     time.Time `json:"created_at"`
}

// model is a model the signed-in key may use, as GET /models lists it.
type model struct {
	ID        string `json:"id"`
	Slug      string `json:"slug"`
	Provider  string `json:"provider"`
	AIService string `json:"ai_service"`
	OwnedBy   string `json:"owned_by"`
}

// integrations lists the integrations the signed-in key may see: all of
// the organisation's for an organisation key, those granted to its
// workspace for a workspace key.
func (c *console) integrations(w http.ResponseWriter, r *http.Request, s *session) {
	showList[integration](c, w, r, s, listSource{"/integrations", paged}, "integrations", "catalog", "Integrations")
}

// providers lists the providers of the workspaces the signed-in key may
// see: virtual keys, those made from an integration naming it.
func (c *console) providers(w http.ResponseWriter, r *http.Request, s *session) {
	showList[provider](c, w, r, s, listSource{"/providers", paged}, "providers", "catalog", "Providers")
}

// models lists the models the signed-in key may use, as a request names
// them ("@{provider}/{model}"), 50 a page.
func (c *console) models(w http.ResponseWriter, r *http.Request, s *session) {
	showList[model](c, w, r, s, listSource{"/models", func(n int, _ string) url.Values {
		return url.Values{"limit": {"50"}, "offset": {strconv.Itoa(n * 50)}}
	}}, "models", "catalog", "Models")
}

// integrationPage is the data of an integration's page: the integration
// and, each with the API's refusal if it refused, its models and its
// grants.
type integrationPage struct {
	Integration integration
	Models      []integrationModel
	ModelsError string
	Grants      []grant
	GrantsError string
	ModelsTotal int
	GrantsTotal int
}

// integrationDetail shows an integration, masked, with its models and
// the workspaces it is granted to.
func (c *console) integrationDetail(w http.ResponseWriter, r *http.Request, s *session) {
	slug := r.PathValue("slug")
	d := &pageData{Title: "Integration " + slug, Nav: "catalog"}
	p := &integrationPage{}
	base := "/integrations/" + escape(slug)
	if err := c.call(r, s.key, http.MethodGet, base, nil, nil, &p.Integration); err != nil {
		if c.apiFailed(w, r, s, err) {
			return
		}
		d.Error = err.Error()
		c.render(w, r, statusFor(err), "integration", s, d)
		return
	}
	var models struct {
		Total  int                `json:"total"`
		Models []integrationModel `json:"models"`
	}
	if err := c.call(r, s.key, http.MethodGet, base+"/models", nil, nil, &models); err != nil {
		p.ModelsError = err.Error()
	}
	var grants struct {
		Total      int     `json:"total"`
		Workspaces []grant `json:"workspaces"`
	}
	if err := c.call(r, s.key, http.MethodGet, base+"/workspaces", nil, nil, &grants); err != nil {
		p.GrantsError = err.Error()
	}
	p.Models, p.ModelsTotal = models.Models, models.Total
	p.Grants, p.GrantsTotal = grants.Workspaces, grants.Total
	d.Data = p
	c.render(w, r, http.StatusOK, "integration", s, d)
}
