package console

import (
	"encoding/json"
	"net/http"
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
	showList[guardrailRecord](c, w, r, s, listSource{"/guardrails", paged}, "guardrails", "guardrails", "Guardrails")
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
