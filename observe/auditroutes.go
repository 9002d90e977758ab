package observe

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// auditRecordWire is a record of the reference's AuditLogObjectList, and
// the gateway's api_key_id and resource_id. Fields the gateway never
// keeps (request_body, query_params, request_headers, organisation_id,
// country) are left out: bodies, queries and headers may hold secrets.
type auditRecordWire struct {
	Timestamp    time.Time `json:"timestamp"`
	Method       string    `json:"method"`
	URI          string    `json:"uri"`
	RequestID    string    `json:"request_id"`
	UserID       string    `json:"user_id"`
	UserType     string    `json:"user_type"`
	APIKeyID     string    `json:"api_key_id"`
	WorkspaceID  string    `json:"workspace_id,omitempty"`
	Status       int       `json:"response_status_code"`
	ResourceType string    `json:"resource_type"`
	ResourceID   string    `json:"resource_id,omitempty"`
	Action       string    `json:"action"`
	ClientIP     string    `json:"client_ip,omitempty"`
	Detail       string    `json:"detail,omitempty"`
}

// serveAuditLogs serves GET {prefix}/audit-logs: the audit log's records,
// newest first, as {"object":"list","records","total"} (total counts every
// match, not the page). It needs the audit_logs.read scope. A workspace
// key sees only its workspace's records; an organisation key sees every
// record and may narrow them with workspace_id.
//
// Filters, all optional: start_time and end_time (RFC 3339, inclusive),
// method, uri (the exact path), request_id, user_id (the API key id),
// user_type (api_key; user matches nothing, the gateway having no user
// accounts), workspace_id, response_status_code, resource_type, action,
// client_ip; paging with page_size (1–100, default 20) and current_page.
// organisation_id and country are accepted and ignored: the gateway has
// one organisation and keeps no country.
func (rs *Routes) serveAuditLogs(w http.ResponseWriter, r *http.Request) {
	if !control.Allow(w, r, http.MethodGet) {
		return
	}
	id, _ := gateway.IdentityFrom(r.Context())
	if !id.Can(gateway.ScopeAuditLogsRead) {
		gateway.WriteError(w, r, control.MissingScope(gateway.ScopeAuditLogsRead))
		return
	}
	if rs.audit == nil {
		gateway.WriteError(w, r, &gateway.Error{Status: http.StatusNotFound, Type: gateway.TypeNotFound, Code: gateway.CodeNotFound,
			Message: "audit logs are not enabled on this gateway"})
		return
	}
	q, err := auditQuery(r.URL.Query(), id)
	if err != nil {
		gateway.WriteError(w, r, err)
		return
	}
	data := []auditRecordWire{}
	total := 0
	if q != nil {
		recs, n, err := rs.audit.AuditRecords(r.Context(), *q)
		if err != nil {
			control.Fail(w, r, rs.errLog, "audit store", err)
			return
		}
		total = n
		for _, rec := range recs {
			data = append(data, auditRecordWire{Timestamp: rec.Time, Method: rec.Method, URI: rec.URI,
				RequestID: rec.RequestID, UserID: rec.KeyID, UserType: "api_key", APIKeyID: rec.KeyID,
				WorkspaceID: rec.WorkspaceID, Status: rec.Status, ResourceType: rec.ResourceType,
				ResourceID: rec.ResourceID, Action: rec.Action, ClientIP: rec.ClientIP, Detail: rec.Detail})
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, struct {
		Object  string            `json:"object"`
		Records []auditRecordWire `json:"records"`
		Total   int               `json:"total"`
	}{"list", data, total})
}

// auditQuery reads the filters of GET /audit-logs. A nil query (and nil
// error) matches nothing.
func auditQuery(v map[string][]string, id gateway.Identity) (*AuditQuery, error) {
	pg, err := control.Page(v)
	if err != nil {
		return nil, err
	}
	q := &AuditQuery{Offset: pg.Number * pg.Size, Limit: pg.Size}
	one := func(name string) (string, error) {
		vs, ok := v[name]
		if !ok {
			return "", nil
		}
		if len(vs) != 1 || vs[0] == "" {
			return "", control.Invalid(name, name+" must be given once, not empty")
		}
		return vs[0], nil
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"method", &q.Method}, {"uri", &q.URI}, {"request_id", &q.RequestID}, {"user_id", &q.KeyID},
		{"workspace_id", &q.WorkspaceID}, {"resource_type", &q.ResourceType}, {"action", &q.Action},
		{"client_ip", &q.ClientIP}} {
		if *f.dst, err = one(f.name); err != nil {
			return nil, err
		}
	}
	q.Method = strings.ToUpper(q.Method)
	for _, f := range []struct {
		name string
		dst  *time.Time
	}{{"start_time", &q.Start}, {"end_time", &q.End}} {
		s, err := one(f.name)
		if err != nil || s == "" {
			if err != nil {
				return nil, err
			}
			continue
		}
		if *f.dst, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return nil, control.Invalid(f.name, f.name+" must be an RFC 3339 date-time, e.g. 2025-01-31T12:00:00Z")
		}
	}
	if s, err := one("response_status_code"); err != nil {
		return nil, err
	} else if s != "" {
		if q.Status, err = strconv.Atoi(s); err != nil || q.Status < 100 || q.Status > 599 {
			return nil, control.Invalid("response_status_code", "response_status_code must be an HTTP status code")
		}
	}
	ut, err := one("user_type")
	switch {
	case err != nil:
		return nil, err
	case ut != "" && ut != "api_key" && ut != "user":
		return nil, control.Invalid("user_type", "user_type must be api_key or user")
	case ut == "user":
		return nil, nil
	}
	if id.Type != gateway.KeyOrganisation {
		if q.WorkspaceID != "" && q.WorkspaceID != id.WorkspaceID {
			return nil, control.OtherWorkspace()
		}
		if id.WorkspaceID == "" {
			return nil, nil
		}
		q.WorkspaceID = id.WorkspaceID
	}
	return q, nil
}
