package console

import (
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/modelgateway/gateway"
)

// apiKey is a key as GET /api-keys answers it (masked).
type apiKey struct {
	ID          string            `json:"id"`
	Key         string            `json:"key"`
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Type        string            `json:"type"`
	WorkspaceID string            `json:"workspace_id"`
	UserID      string            `json:"user_id"`
	Status      string            `json:"status"`
	CreatedAt   time.Time         `json:"created_at"`
	ExpiresAt   time.Time         `json:"expires_at"`
	Scopes      []gateway.Scope   `json:"scopes"`
	Defaults    defaultGuardrails `json:"defaults"`

	// Self says that the session is signed in with this key: the page
	// does not offer to revoke it.
	Self bool `json:"-"`
}

// maskOf returns the mask the API shows in place of key (admin's masked
// key: a fixed mask and the last 4 hex digits of the key's digest), by
// which the console tells the key it is signed in with in a list that
// holds only masks. Two keys share a mask once in 65,536: the console
// may then refuse to revoke a key that is not its own (the API, with
// another key, still can), never the reverse.
func maskOf(key string) string {
	d := gateway.HashAPIKey(key)
	return "gw-****" + hex.EncodeToString(d[len(d)-2:])
}

// selfRevoke is the refusal to revoke the key the session is signed in
// with.
var selfRevoke = &apiError{Status: http.StatusConflict, Message: "You are signed in with this key: revoking it would sign you out " +
	"and lock out whoever uses it. Sign in with another key to revoke it."}

// isSessionKey reports whether key id is the one s is signed in with,
// by its mask (see maskOf).
func (c *console) isSessionKey(r *http.Request, s *session, id string) (bool, error) {
	var k apiKey
	if err := c.call(r, s.key, http.MethodGet, "/api-keys/"+escape(id), nil, nil, &k); err != nil {
		return false, err
	}
	return k.Key == maskOf(s.key), nil
}

// scopes are the scopes a new key may be given, in the order offered.
var scopes = []gateway.Scope{gateway.ScopeCompletionsWrite,
	gateway.ScopeLogsRead, gateway.ScopeLogsWrite, gateway.ScopeAnalyticsRead,
	gateway.ScopeAPIKeysRead, gateway.ScopeAPIKeysWrite, gateway.ScopeVirtualKeysRead, gateway.ScopeVirtualKeysWrite,
	gateway.ScopeConfigsRead, gateway.ScopeConfigsWrite, gateway.ScopePoliciesRead, gateway.ScopePoliciesWrite,
	gateway.ScopeAuditLogsRead, gateway.ScopeWorkspacesRead, gateway.ScopeWorkspacesWrite}

// apiKeys lists the keys the signed-in key may see, with the form that
// creates one.
func (c *console) apiKeys(w http.ResponseWriter, r *http.Request, s *session) {
	c.showAPIKeys(w, r, s, http.StatusOK, "")
}

func (c *console) showAPIKeys(w http.ResponseWriter, r *http.Request, s *session, status int, msg string) {
	q := r.URL.Query()
	p := &listPage[apiKey]{Page: pageNumber(q), Workspace: strings.TrimSpace(q.Get("workspace_id")), Scopes: scopes}
	d := &pageData{Title: "API keys", Nav: "api-keys", Data: p, Error: msg, Flash: flashes[q.Get("done")]}
	var list struct {
		Data  []apiKey `json:"data"`
		Total int      `json:"total"`
	}
	if err := c.call(r, s.key, http.MethodGet, "/api-keys", listQuery(p.Page, 50, p.Workspace), nil, &list); err != nil {
		if c.apiFailed(w, r, s, err) {
			return
		}
		if d.Error == "" {
			d.Error, status = err.Error(), statusFor(err)
		}
	}
	self := maskOf(s.key)
	for i := range list.Data {
		list.Data[i].Self = list.Data[i].Key == self
	}
	p.Items, p.Total = list.Data, list.Total
	pager(p, c.base+"/api-keys", 50, "workspace_id", p.Workspace)
	c.render(w, r, status, "apikeys", s, d)
}

// created is the page that shows a new key, once.
type created struct {
	What, ID, Key, Note, Back string
}

// createAPIKey creates a key through POST /api-keys/{type}/{sub-type}
// and shows it once.
func (c *console) createAPIKey(w http.ResponseWriter, r *http.Request, s *session) {
	f := r.PostForm
	typ, sub := f.Get("type"), f.Get("sub_type")
	body := map[string]any{"name": strings.TrimSpace(f.Get("name")), "scopes": f["scope"]}
	if f["scope"] == nil {
		body["scopes"] = []string{}
	}
	for _, n := range []string{"description", "workspace_id", "user_id"} {
		if v := strings.TrimSpace(f.Get(n)); v != "" {
			body[n] = v
		}
	}
	var out struct {
		ID  string `json:"id"`
		Key string `json:"key"`
	}
	err := c.call(r, s.key, http.MethodPost, "/api-keys/"+escape(typ)+"/"+escape(sub), nil, body, &out)
	if err != nil {
		if c.apiFailed(w, r, s, err) {
			return
		}
		c.showAPIKeys(w, r, s, statusFor(err), "The key was not created: "+err.Error())
		return
	}
	c.render(w, r, http.StatusOK, "created", s, &pageData{Title: "API key created", Nav: "api-keys",
		Data: &created{What: "API key", ID: out.ID, Key: out.Key, Back: c.base + "/api-keys",
			Note: "Copy the key now: it is shown once and the gateway keeps only its digest."}})
}

// confirmation is the data of a page that asks before a change.
type confirmation struct {
	Question   string
	Action     string // where the form posts
	Button     string
	Back       string
	Transition bool // ask for a key transition period (rotate)
	NewSecret  bool // ask for a new provider key (virtual key rotate)
	Workspace  string
}

// confirmAPIKey asks before rotating or revoking a key.
func (c *console) confirmAPIKey(w http.ResponseWriter, r *http.Request, s *session) {
	id, action := r.PathValue("id"), r.PathValue("action")
	cf := &confirmation{Action: c.base + "/api-keys/" + url.PathEscape(id) + "/" + action, Back: c.base + "/api-keys"}
	switch action {
	case "rotate":
		cf.Question = "Rotate API key " + id + "? A new key is made and shown once."
		cf.Button, cf.Transition = "Rotate key", true
	case "revoke":
		if self, err := c.isSessionKey(r, s, id); err != nil || self {
			if err == nil {
				err = selfRevoke
			}
			c.changeFailed(w, r, s, "api-keys", err)
			return
		}
		cf.Question = "Revoke API key " + id + "? It stops working at once; this cannot be undone."
		cf.Button = "Revoke key"
	default:
		c.notFound(w, r)
		return
	}
	c.render(w, r, http.StatusOK, "confirm", s, &pageData{Title: "Confirm", Nav: "api-keys", Data: cf})
}

// changeAPIKey rotates (POST /api-keys/{id}/rotate, the new key shown
// once) or revokes (DELETE /api-keys/{id}) a key.
func (c *console) changeAPIKey(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	switch r.PathValue("action") {
	case "rotate":
		body := map[string]any{}
		if ms, err := strconv.ParseInt(r.PostFormValue("transition_ms"), 10, 64); err == nil && ms > 0 {
			body["key_transition_period_ms"] = ms
		}
		var out struct {
			ID  string `json:"id"`
			Key string `json:"key"`
		}
		if err := c.call(r, s.key, http.MethodPost, "/api-keys/"+escape(id)+"/rotate", nil, body, &out); err != nil {
			c.changeFailed(w, r, s, "api-keys", err)
			return
		}
		c.render(w, r, http.StatusOK, "created", s, &pageData{Title: "API key rotated", Nav: "api-keys",
			Data: &created{What: "API key", ID: id, Key: out.Key, Back: c.base + "/api-keys",
				Note: "Copy the new key now: it is shown once."}})
	case "revoke":
		self, err := c.isSessionKey(r, s, id)
		if err == nil && self {
			err = selfRevoke
		}
		if err == nil {
			err = c.call(r, s.key, http.MethodDelete, "/api-keys/"+escape(id), nil, nil, nil)
		}
		if err != nil {
			c.changeFailed(w, r, s, "api-keys", err)
			return
		}
		http.Redirect(w, r, c.base+"/api-keys?done=revoked", http.StatusSeeOther)
	default:
		c.notFound(w, r)
	}
}

// changeFailed shows the API's refusal of a change on an error page.
func (c *console) changeFailed(w http.ResponseWriter, r *http.Request, s *session, nav string, err error) {
	if c.apiFailed(w, r, s, err) {
		return
	}
	c.render(w, r, statusFor(err), "error", s, &pageData{Title: "Not done", Nav: nav, Error: err.Error()})
}
