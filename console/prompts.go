package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// promptItem is a prompt as GET /prompts lists it.
type promptItem struct {
	ID            string    `json:"id"`
	Slug          string    `json:"slug"`
	Name          string    `json:"name"`
	Model         string    `json:"model"`
	LastUpdatedAt time.Time `json:"last_updated_at"`
}

// prompts lists the prompts of the signed-in key's workspace (or of the
// one an organisation key names).
func (c *console) prompts(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	p := &listPage[promptItem]{Page: pageNumber(q), Workspace: strings.TrimSpace(q.Get("workspace_id"))}
	d := &pageData{Title: "Prompts", Nav: "prompts", Data: p}
	status := http.StatusOK
	var list struct {
		Data  []promptItem `json:"data"`
		Total int          `json:"total"`
	}
	if err := c.call(r, s.key, http.MethodGet, "/prompts", listQuery(p.Page, 50, p.Workspace), nil, &list); err != nil {
		if c.apiFailed(w, r, s, err) {
			return
		}
		d.Error, status = err.Error(), statusFor(err)
	}
	p.Items, p.Total = list.Data, list.Total
	pager(p, c.base+"/prompts", 50, "workspace_id", p.Workspace)
	c.render(w, r, status, "prompts", s, d)
}

// promptVersion is a version as GET /prompts/{id}/versions lists it.
type promptVersion struct {
	ID          string    `json:"id"`
	Version     int       `json:"prompt_version"`
	Description string    `json:"prompt_description"`
	LabelID     string    `json:"label_id"`
	CreatedAt   time.Time `json:"created_at"`
	Label       string    `json:"-"` // the label's name
}

// promptPage is the data of a prompt's page: the prompt at its default
// version, its versions with the labels that point at them, and the
// render preview.
type promptPage struct {
	ID, Slug, Name, Model, Template, Workspace string
	Version, Default                           int
	Parameters                                 string
	Versions                                   []promptVersion
	Variables                                  string // the preview's variables, as typed
	Rendered                                   string // the preview's body, or ""
	RenderError                                string
}

// promptDetail shows a prompt (GET /prompts/{id}); a POST renders it
// with the form's variables (POST /prompts/{id}/render), which writes
// nothing.
func (c *console) promptDetail(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	ws := strings.TrimSpace(r.FormValue("workspace_id"))
	q := url.Values{}
	if ws != "" {
		q.Set("workspace_id", ws)
	}
	p := &promptPage{Workspace: ws, Variables: r.PostFormValue("variables")}
	d := &pageData{Title: "Prompt " + id, Nav: "prompts", Data: p}
	var one struct {
		ID             string          `json:"id"`
		Slug           string          `json:"slug"`
		Name           string          `json:"name"`
		Model          string          `json:"model"`
		String         string          `json:"string"`
		Parameters     json.RawMessage `json:"parameters"`
		Version        int             `json:"prompt_version"`
		DefaultVersion int             `json:"default_version"`
	}
	if err := c.call(r, s.key, http.MethodGet, "/prompts/"+escape(id), q, nil, &one); err != nil {
		if c.apiFailed(w, r, s, err) {
			return
		}
		d.Error, d.Data = err.Error(), nil
		c.render(w, r, statusFor(err), "prompt", s, d)
		return
	}
	p.ID, p.Slug, p.Name, p.Model, p.Version, p.Default = one.ID, one.Slug, one.Name, one.Model, one.Version, one.DefaultVersion
	p.Template, p.Parameters = prettyJSON(json.RawMessage(one.String)), prettyJSON(one.Parameters)
	if err := c.call(r, s.key, http.MethodGet, "/prompts/"+escape(one.ID)+"/versions", q, nil, &p.Versions); err == nil {
		var labels struct {
			Data []struct{ ID, Name string } `json:"data"`
		}
		lq := url.Values{"page_size": {"100"}}
		if ws != "" {
			lq.Set("workspace_id", ws)
		}
		if c.call(r, s.key, http.MethodGet, "/labels", lq, nil, &labels) == nil {
			for i := range p.Versions {
				for _, l := range labels.Data {
					if l.ID == p.Versions[i].LabelID {
						p.Versions[i].Label = l.Name
					}
				}
			}
		}
	}
	status := http.StatusOK
	if r.Method == http.MethodPost {
		var vars json.RawMessage
		if json.Unmarshal([]byte(p.Variables), &vars) != nil {
			p.RenderError, status = "The variables must be a JSON object.", http.StatusBadRequest
		} else {
			var out struct {
				Data json.RawMessage `json:"data"`
			}
			err := c.call(r, s.key, http.MethodPost, "/prompts/"+escape(one.ID)+"/render", q, map[string]any{"variables": vars}, &out)
			if err != nil {
				if c.apiFailed(w, r, s, err) {
					return
				}
				p.RenderError, status = err.Error(), statusFor(err)
			} else {
				p.Rendered = prettyJSON(out.Data)
			}
		}
	}
	if p.Variables == "" {
		p.Variables = "{}"
	}
	c.render(w, r, status, "prompt", s, d)
}
