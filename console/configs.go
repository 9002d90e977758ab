package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// savedConfig is a config as GET /configs and GET /configs/{slug} answer
// it (secrets in it masked).
type savedConfig struct {
	ID            string          `json:"id"`
	Slug          string          `json:"slug"`
	Name          string          `json:"name"`
	WorkspaceID   string          `json:"workspace_id"`
	Status        string          `json:"status"`
	Version       int             `json:"version"`
	VersionID     string          `json:"version_id"`
	CreatedAt     time.Time       `json:"created_at"`
	LastUpdatedAt time.Time       `json:"last_updated_at"`
	Config        json.RawMessage `json:"config"`
}

// configs lists the saved configs the signed-in key may see, with the
// form that creates one.
func (c *console) configs(w http.ResponseWriter, r *http.Request, s *session) {
	c.showConfigs(w, r, s, http.StatusOK, "")
}

func (c *console) showConfigs(w http.ResponseWriter, r *http.Request, s *session, status int, msg string) {
	q := r.URL.Query()
	p := &listPage[savedConfig]{Page: pageNumber(q), Workspace: strings.TrimSpace(q.Get("workspace_id"))}
	d := &pageData{Title: "Configs", Nav: "configs", Data: p, Error: msg, Flash: flashes[q.Get("done")]}
	var list struct {
		Data  []savedConfig `json:"data"`
		Total int           `json:"total"`
	}
	if err := c.call(r, s.key, http.MethodGet, "/configs", listQuery(p.Page, 50, p.Workspace), nil, &list); err != nil {
		if c.apiFailed(w, r, s, err) {
			return
		}
		if d.Error == "" {
			d.Error, status = err.Error(), statusFor(err)
		}
	}
	p.Items, p.Total = list.Data, list.Total
	pager(p, c.base+"/configs", 50, "workspace_id", p.Workspace)
	c.render(w, r, status, "configs", s, d)
}

// configBody reads the config JSON of a form; an unreadable one is sent
// as a string, for the API to refuse with its own message.
func configBody(s string) any {
	var v json.RawMessage
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	return v
}

// createConfig creates a config through POST /configs.
func (c *console) createConfig(w http.ResponseWriter, r *http.Request, s *session) {
	f := r.PostForm
	body := map[string]any{"config": configBody(f.Get("config"))}
	for _, n := range []string{"name", "slug", "workspace_id"} {
		if v := strings.TrimSpace(f.Get(n)); v != "" {
			body[n] = v
		}
	}
	if err := c.call(r, s.key, http.MethodPost, "/configs", nil, body, nil); err != nil {
		if c.apiFailed(w, r, s, err) {
			return
		}
		c.showConfigs(w, r, s, statusFor(err), "The config was not created: "+err.Error())
		return
	}
	http.Redirect(w, r, c.base+"/configs?done=created", http.StatusSeeOther)
}

// configPage is the data of a config's page.
type configPage struct {
	Config    savedConfig
	JSON      string
	Versions  []savedConfig
	Workspace string
}

// configDetail shows a config (GET /configs/{slug}), its versions and
// the form that saves a new version.
func (c *console) configDetail(w http.ResponseWriter, r *http.Request, s *session) {
	c.showConfig(w, r, s, http.StatusOK, "", "")
}

func (c *console) showConfig(w http.ResponseWriter, r *http.Request, s *session, status int, msg, draft string) {
	slug := r.PathValue("slug")
	ws := strings.TrimSpace(r.URL.Query().Get("workspace_id"))
	if r.Method == http.MethodPost {
		ws = strings.TrimSpace(r.PostFormValue("workspace_id"))
	}
	q := url.Values{}
	if ws != "" {
		q.Set("workspace_id", ws)
	}
	p := &configPage{Workspace: ws}
	d := &pageData{Title: "Config " + slug, Nav: "configs", Data: p, Error: msg, Flash: flashes[r.URL.Query().Get("done")]}
	var one struct {
		Data savedConfig `json:"data"`
	}
	if err := c.call(r, s.key, http.MethodGet, "/configs/"+escape(slug), q, nil, &one); err != nil {
		if c.apiFailed(w, r, s, err) {
			return
		}
		d.Error, d.Data = err.Error(), nil
		c.render(w, r, statusFor(err), "config", s, d)
		return
	}
	p.Config, p.JSON = one.Data, prettyJSON(one.Data.Config)
	if draft != "" {
		p.JSON = draft
	}
	var versions struct {
		Data []savedConfig `json:"data"`
	}
	vq := url.Values{"page_size": {"20"}}
	for k, v := range q {
		vq[k] = v
	}
	if err := c.call(r, s.key, http.MethodGet, "/configs/"+escape(slug)+"/versions", vq, nil, &versions); err == nil {
		p.Versions = versions.Data
	}
	c.render(w, r, status, "config", s, d)
}

// updateConfig saves a new version through PUT /configs/{slug}.
func (c *console) updateConfig(w http.ResponseWriter, r *http.Request, s *session) {
	slug := r.PathValue("slug")
	q := url.Values{}
	ws := strings.TrimSpace(r.PostFormValue("workspace_id"))
	if ws != "" {
		q.Set("workspace_id", ws)
	}
	draft := r.PostFormValue("config")
	if err := c.call(r, s.key, http.MethodPut, "/configs/"+escape(slug), q, map[string]any{"config": configBody(draft)}, nil); err != nil {
		if c.apiFailed(w, r, s, err) {
			return
		}
		c.showConfig(w, r, s, statusFor(err), "The config was not saved: "+err.Error(), draft)
		return
	}
	http.Redirect(w, r, link(c.base+"/configs/"+url.PathEscape(slug), "workspace_id", ws, "done", "updated"), http.StatusSeeOther)
}

// confirmDeleteConfig asks before deleting a config.
func (c *console) confirmDeleteConfig(w http.ResponseWriter, r *http.Request, s *session) {
	slug := r.PathValue("slug")
	cf := &confirmation{Action: c.base + "/configs/" + url.PathEscape(slug) + "/delete", Back: c.base + "/configs",
		Question: "Delete config " + slug + "? Requests naming it are refused from now on.", Button: "Delete config",
		Workspace: strings.TrimSpace(r.URL.Query().Get("workspace_id"))}
	c.render(w, r, http.StatusOK, "confirm", s, &pageData{Title: "Confirm", Nav: "configs", Data: cf})
}

// deleteConfig deletes a config through DELETE /configs/{slug}.
func (c *console) deleteConfig(w http.ResponseWriter, r *http.Request, s *session) {
	q := url.Values{}
	if ws := strings.TrimSpace(r.PostFormValue("workspace_id")); ws != "" {
		q.Set("workspace_id", ws)
	}
	if err := c.call(r, s.key, http.MethodDelete, "/configs/"+escape(r.PathValue("slug")), q, nil, nil); err != nil {
		c.changeFailed(w, r, s, "configs", err)
		return
	}
	http.Redirect(w, r, c.base+"/configs?done=deleted", http.StatusSeeOther)
}

// prettyJSON indents JSON for reading; what is not JSON is shown as it
// is.
func prettyJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}
