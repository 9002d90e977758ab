package console

import (
	"net/http"
	"net/url"
	"strings"
	"time"
)

// virtualKey is a virtual key as GET /virtual-keys answers it (its
// credential masked).
type virtualKey struct {
	Slug        string    `json:"slug"`
	Name        string    `json:"name"`
	Note        string    `json:"note"`
	Provider    string    `json:"provider"`
	Key         string    `json:"key"`
	BaseURL     string    `json:"base_url"`
	WorkspaceID string    `json:"workspace_id"`
	Status      string    `json:"status"`
	CreatedAt   time.Time `json:"created_at"`
}

// virtualKeys lists the virtual keys the signed-in key may see, with the
// form that creates one.
func (c *console) virtualKeys(w http.ResponseWriter, r *http.Request, s *session) {
	c.showVirtualKeys(w, r, s, http.StatusOK, "")
}

func (c *console) showVirtualKeys(w http.ResponseWriter, r *http.Request, s *session, status int, msg string) {
	q := r.URL.Query()
	p := &listPage[virtualKey]{Page: pageNumber(q), Workspace: strings.TrimSpace(q.Get("workspace_id"))}
	d := &pageData{Title: "Virtual keys", Nav: "virtual-keys", Data: p, Error: msg, Flash: flashes[q.Get("done")]}
	var list struct {
		Data  []virtualKey `json:"data"`
		Total int          `json:"total"`
	}
	if err := c.call(r, s.key, http.MethodGet, "/virtual-keys", listQuery(p.Page, 50, p.Workspace), nil, &list); err != nil {
		if c.apiFailed(w, r, s, err) {
			return
		}
		if d.Error == "" {
			d.Error, status = err.Error(), statusFor(err)
		}
	}
	p.Items, p.Total = list.Data, list.Total
	pager(p, c.base+"/virtual-keys", 50, "workspace_id", p.Workspace)
	c.render(w, r, status, "virtualkeys", s, d)
}

// createVirtualKey creates a virtual key through POST /virtual-keys.
func (c *console) createVirtualKey(w http.ResponseWriter, r *http.Request, s *session) {
	f := r.PostForm
	body := map[string]any{}
	for _, n := range []string{"name", "slug", "provider", "key", "base_url", "note", "workspace_id"} {
		if v := strings.TrimSpace(f.Get(n)); v != "" {
			body[n] = v
		}
	}
	if err := c.call(r, s.key, http.MethodPost, "/virtual-keys", nil, body, nil); err != nil {
		if c.apiFailed(w, r, s, err) {
			return
		}
		c.showVirtualKeys(w, r, s, statusFor(err), "The virtual key was not created: "+err.Error())
		return
	}
	http.Redirect(w, r, c.base+"/virtual-keys?done=created", http.StatusSeeOther)
}

// confirmVirtualKey asks before replacing a virtual key's provider key
// (rotate) or deleting it.
func (c *console) confirmVirtualKey(w http.ResponseWriter, r *http.Request, s *session) {
	slug, action := r.PathValue("slug"), r.PathValue("action")
	cf := &confirmation{Action: c.base + "/virtual-keys/" + url.PathEscape(slug) + "/" + action,
		Back: c.base + "/virtual-keys", Workspace: strings.TrimSpace(r.URL.Query().Get("workspace_id"))}
	switch action {
	case "rotate":
		cf.Question = "Replace the provider key of virtual key " + slug + "? Requests use the new one at once."
		cf.Button, cf.NewSecret = "Replace key", true
	case "delete":
		cf.Question = "Delete virtual key " + slug + "? Requests naming it are refused from now on."
		cf.Button = "Delete virtual key"
	default:
		c.notFound(w, r)
		return
	}
	c.render(w, r, http.StatusOK, "confirm", s, &pageData{Title: "Confirm", Nav: "virtual-keys", Data: cf})
}

// changeVirtualKey replaces a virtual key's provider key (PUT) or
// deletes it (DELETE).
func (c *console) changeVirtualKey(w http.ResponseWriter, r *http.Request, s *session) {
	slug := r.PathValue("slug")
	q := url.Values{}
	if ws := strings.TrimSpace(r.PostFormValue("workspace_id")); ws != "" {
		q.Set("workspace_id", ws)
	}
	path := "/virtual-keys/" + escape(slug)
	switch r.PathValue("action") {
	case "rotate":
		if err := c.call(r, s.key, http.MethodPut, path, q, map[string]any{"key": r.PostFormValue("key")}, nil); err != nil {
			c.changeFailed(w, r, s, "virtual-keys", err)
			return
		}
		http.Redirect(w, r, c.base+"/virtual-keys?done=rotated", http.StatusSeeOther)
	case "delete":
		if err := c.call(r, s.key, http.MethodDelete, path, q, nil, nil); err != nil {
			c.changeFailed(w, r, s, "virtual-keys", err)
			return
		}
		http.Redirect(w, r, c.base+"/virtual-keys?done=deleted", http.StatusSeeOther)
	default:
		c.notFound(w, r)
	}
}
