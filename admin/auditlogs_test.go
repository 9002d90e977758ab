package admin_test

// The audit log as GET /v1/audit-logs answers it, for the tests that
// check what the admin routes record.

import (
	"encoding/json"
	"time"
)

type auditWireT struct {
	Timestamp    time.Time `json:"timestamp"`
	Method       string    `json:"method"`
	URI          string    `json:"uri"`
	RequestID    string    `json:"request_id"`
	UserID       string    `json:"user_id"`
	UserType     string    `json:"user_type"`
	APIKeyID     string    `json:"api_key_id"`
	WorkspaceID  string    `json:"workspace_id"`
	Status       int       `json:"response_status_code"`
	ResourceType string    `json:"resource_type"`
	ResourceID   string    `json:"resource_id"`
	Action       string    `json:"action"`
	ClientIP     string    `json:"client_ip"`
	Detail       string    `json:"detail"`
}

type auditListT struct {
	Object  string       `json:"object"`
	Records []auditWireT `json:"records"`
	Total   int          `json:"total"`
}

// auditLogs reads GET /v1/audit-logs?query with key, failing unless 200,
// and returns the list and its raw body.
func auditLogs(e *coreEnv, key, query string) (auditListT, string) {
	e.t.Helper()
	status, b := cp(e, key, "GET", "/v1/audit-logs"+query, "")
	if status != 200 {
		e.t.Fatalf("GET /v1/audit-logs%s = %d %s", query, status, b)
	}
	var l auditListT
	if err := json.Unmarshal(b, &l); err != nil {
		e.t.Fatal(err)
	}
	if l.Object != "list" || l.Records == nil {
		e.t.Fatalf("audit list %s has no object list or records", b)
	}
	return l, string(b)
}

const auditPolicy = `{"name":"100 RPM","conditions":[{"key":"workspace_id","value":"ws-1"}],"group_by":[{"key":"api_key"}],"type":"requests","unit":"rpm","value":100}`
