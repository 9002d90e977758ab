package console

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// guardrailRecord is a guardrail as GET /guardrails and GET /guardrails/{id}
// answer it.
type guardrailRecord struct {
	ID            string          `json:"id"`
	Slug          string          `json:"slug"`
	Name          string          `json:"name"`
	WorkspaceID   string          `json:"workspace_id"`
	LastUpdatedAt time.Time       `json:"last_updated_at"`
	StreamMode    string          `json:"stream_mode"`
	OnError       string          `json:"on_error"`
	Checks        json.RawMessage `json:"checks"`
	Actions       json.RawMessage `json:"actions"`
}

// guardrails lists the guardrails the signed-in key may see.
func (c *console) guardrails(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	p := &listPage[guardrailRecord]{Page: pageNumber(q), Workspace: strings.TrimSpace(q.Get("workspace_id"))}
	d := &pageData{Title: "Guardrails", Nav: "guardrails", Data: p}
	status := http.StatusOK
	var list struct {
		Data  []guardrailRecord `json:"data"`
		Total int               `json:"total"`
	}
	if err := c.call(r, s.key, http.MethodGet, "/guardrails", listQuery(p.Page, 50, p.Workspace), nil, &list); err != nil {
		if c.apiFailed(w, r, s, err) {
			return
		}
		d.Error, status = err.Error(), statusFor(err)
	}
	p.Items, p.Total = list.Data, list.Total
	pager(p, c.base+"/guardrails", 50, "workspace_id", p.Workspace)
	c.render(w, r, status, "guardrails", s, d)
}

// guardrailPage is the data of a guardrail's page.
type guardrailPage struct {
	Guardrail       guardrailRecord
	Checks, Actions string
}

// guardrailDetail shows a guardrail: its checks and actions.
func (c *console) guardrailDetail(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	d := &pageData{Title: "Guardrail " + id, Nav: "guardrails"}
	var g guardrailRecord
	if err := c.call(r, s.key, http.MethodGet, "/guardrails/"+escape(id), nil, nil, &g); err != nil {
		if c.apiFailed(w, r, s, err) {
			return
		}
		d.Error = err.Error()
		c.render(w, r, statusFor(err), "guardrail", s, d)
		return
	}
	d.Data = &guardrailPage{Guardrail: g, Checks: prettyJSON(g.Checks), Actions: prettyJSON(g.Actions)}
	c.render(w, r, http.StatusOK, "guardrail", s, d)
}
