package console

import (
	"net/http"
	"strings"
	"time"
)

// auditRecord is a record of GET /audit-logs.
type auditRecord struct {
	Timestamp    time.Time `json:"timestamp"`
	Method       string    `json:"method"`
	URI          string    `json:"uri"`
	APIKeyID     string    `json:"api_key_id"`
	WorkspaceID  string    `json:"workspace_id"`
	Status       int       `json:"response_status_code"`
	ResourceType string    `json:"resource_type"`
	ResourceID   string    `json:"resource_id"`
	Action       string    `json:"action"`
	ClientIP     string    `json:"client_ip"`
}

// auditFilters are the audit page's filters, passed to the API as they
// are.
var auditFilters = []string{"resource_type", "action", "api_key_id", "workspace_id"}

// auditPage is the data of the audit log page.
type auditPage struct {
	listPage[auditRecord]
	Filters map[string]string
}

// audit shows GET /audit-logs, newest first, paged.
func (c *console) audit(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	p := &auditPage{Filters: map[string]string{}}
	p.Page = pageNumber(q)
	d := &pageData{Title: "Audit log", Nav: "audit", Data: p}
	aq := listQuery(p.Page, 50, "")
	var pairs []string
	for _, n := range auditFilters {
		if v := strings.TrimSpace(q.Get(n)); v != "" {
			p.Filters[n] = v
			pairs = append(pairs, n, v)
			if n == "api_key_id" {
				n = "user_id" // the API's name for the key that acted
			}
			aq.Set(n, v)
		}
	}
	var list struct {
		Records []auditRecord `json:"records"`
		Total   int           `json:"total"`
	}
	status := http.StatusOK
	if err := c.call(r, s.key, http.MethodGet, "/audit-logs", aq, nil, &list); err != nil {
		if c.apiFailed(w, r, s, err) {
			return
		}
		d.Error, status = err.Error(), statusFor(err)
	}
	p.Items, p.Total = list.Records, list.Total
	pager(&p.listPage, c.base+"/audit", 50, pairs...)
	c.render(w, r, status, "audit", s, d)
}
