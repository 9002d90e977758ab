package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
)

// AuditRecord is one control-plane write, as the audit log keeps it. It
// names who did what to which resource and how it ended, never a secret:
// it holds no request or response body, no header and no query string.
type AuditRecord struct {
	Time         time.Time
	RequestID    string // the request's trace id
	KeyID        string // the gateway API key that made the request
	WorkspaceID  string // the workspace acted in; empty for organisation-wide writes
	Method       string
	URI          string // the request's path, without its query
	Action       string // e.g. "api_keys.create": ResourceType "." create, update, delete, or the route's verb (rotate, reset, start, cancel)
	ResourceType string // api_keys, virtual_keys, configs, workspaces, rate_limits_policies, usage_limits_policies, log_exports
	ResourceID   string // the id or slug acted on, or made by a create; empty when unknown
	Status       int    // the response's status code
	ClientIP     string // the address of the connection's peer
	Detail       string // what the write changed that its route does not say, e.g. "base_url: https://a.example → https://b.example"; never a secret
}

// AuditQuery selects audit records. A zero field matches every record;
// Start and End bound Time inclusively.
type AuditQuery struct {
	Start, End   time.Time
	Method       string
	URI          string
	RequestID    string
	KeyID        string
	WorkspaceID  string
	ResourceType string
	Action       string
	ClientIP     string
	Status       int

	// Offset and Limit page the matches (see AuditStore); zero Limit
	// means every match.
	Offset, Limit int
}

// Match reports whether q selects rec, paging aside.
func (q *AuditQuery) Match(rec *AuditRecord) bool {
	return (q.Start.IsZero() || !rec.Time.Before(q.Start)) && (q.End.IsZero() || !rec.Time.After(q.End)) &&
		(q.Method == "" || q.Method == rec.Method) && (q.URI == "" || q.URI == rec.URI) &&
		(q.RequestID == "" || q.RequestID == rec.RequestID) && (q.KeyID == "" || q.KeyID == rec.KeyID) &&
		(q.WorkspaceID == "" || q.WorkspaceID == rec.WorkspaceID) &&
		(q.ResourceType == "" || q.ResourceType == rec.ResourceType) &&
		(q.Action == "" || q.Action == rec.Action) && (q.ClientIP == "" || q.ClientIP == rec.ClientIP) &&
		(q.Status == 0 || q.Status == rec.Status)
}

// AuditStore keeps the audit log of the control plane: one AuditRecord
// per control-plane write, added by an Auditor and read by GET
// /audit-logs. memstore.Store and sqlstore.Store implement it.
//
// Implementations must be safe for concurrent use. AddAuditRecord stores a
// copy of rec. AuditRecords returns the records q matches (see
// AuditQuery.Match), newest first, skipping q.Offset of them and returning
// at most q.Limit (every one when q.Limit is zero), and total, the number
// of every match.
type AuditStore interface {
	AddAuditRecord(ctx context.Context, rec *AuditRecord) error
	AuditRecords(ctx context.Context, q AuditQuery) (recs []AuditRecord, total int, err error)
}

// An Auditor records every control-plane write in Store: one
// AuditRecord per request other than GET, HEAD and OPTIONS to a handler
// it wraps, added after the handler ran. It holds the handler's answer
// back until the record is stored, so that a client that got its answer
// finds the record in GET /audit-logs. The answer is read only for the
// "id" (or "slug") of what a create made; it never reaches the record.
// A store failure is logged and the answer still sent. A nil *Auditor,
// or one without a Store, records nothing.
type Auditor struct {
	Store AuditStore

	// ErrorLog receives the store's failures. Nil means slog.Default().
	ErrorLog *slog.Logger

	// Now is the clock of the records. Nil means time.Now.
	Now func() time.Time
}

// maxAuditCapture bounds the answer an Auditor holds back; control-plane
// answers are far smaller.
const maxAuditCapture = 1 << 20

// statusClientClosed is the status recorded for a write whose caller went
// away before its handler answered (nginx's 499).
const statusClientClosed = 499

// Wrap returns h audited: its writes are recorded as acting on resource,
// the record's ResourceType (api_keys, virtual_keys, configs, workspaces,
// rate_limits_policies, usage_limits_policies, log_exports, …). The
// resource's id is the route's {id}, {slug}, {workspaceId} or {exportId}
// path value, else the "id" or "slug" of what a create answered. The
// action is resource "." create, update or delete, or, for a POST to a
// route below an item (…/{id}/rotate), its last segment.
func (a *Auditor) Wrap(resource string, h http.Handler) http.Handler {
	if a == nil || a.Store == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions {
			h.ServeHTTP(w, r)
			return
		}
		bw := &auditWriter{ResponseWriter: w}
		ctx, n := control.WithNote(r.Context())
		r = r.WithContext(ctx)
		h.ServeHTTP(bw, r)
		rec := a.record(r, resource, bw)
		if n.Workspace != "" {
			rec.WorkspaceID = n.Workspace
		}
		rec.Detail = n.Detail
		if err := a.Store.AddAuditRecord(r.Context(), &rec); err != nil {
			log := a.ErrorLog
			if log == nil {
				log = slog.Default()
			}
			log.ErrorContext(r.Context(), "gateway: audit store", "err", err)
		}
		bw.flush()
	})
}

// ActedIn records that the audited write r acted in workspace ws (an
// organisation key naming a workspace in the body, say), for its audit
// record. It does nothing outside an Auditor, or for an empty ws.
func ActedIn(r *http.Request, ws string) { control.ActedIn(r, ws) }

// Detail records what the audited write r changed that its route does
// not say, for its audit record. It must never hold a secret.
func Detail(r *http.Request, detail string) { control.Detail(r, detail) }

// record describes the request r, answered as bw holds.
func (a *Auditor) record(r *http.Request, resource string, bw *auditWriter) AuditRecord {
	id, _ := gateway.IdentityFrom(r.Context())
	trace, _ := gateway.TraceIDFrom(r.Context())
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	rec := AuditRecord{Time: now().UTC(), RequestID: trace, KeyID: id.KeyID, Method: r.Method,
		URI: r.URL.Path, Status: bw.status, ResourceType: resource}
	if rec.Status == 0 {
		rec.Status = http.StatusOK // what net/http sends for a handler that wrote nothing
		if r.Context().Err() != nil {
			rec.Status = statusClientClosed
		}
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		rec.ClientIP = host
	}
	for _, name := range []string{"id", "slug", "workspaceId", "exportId"} {
		if v := r.PathValue(name); v != "" {
			rec.ResourceID = v
			break
		}
	}
	verb := ""
	switch r.Method {
	case http.MethodPost:
		verb = "create"
		if p := r.Pattern; rec.ResourceID != "" && !strings.HasSuffix(p, "}") {
			verb = p[strings.LastIndexByte(p, '/')+1:] // e.g. rotate
		}
	case http.MethodPut, http.MethodPatch:
		verb = "update"
	case http.MethodDelete:
		verb = "delete"
	default:
		verb = strings.ToLower(r.Method)
	}
	rec.Action = rec.ResourceType + "." + verb
	if rec.ResourceID == "" && verb == "create" && rec.Status < 300 && !bw.over {
		type ids struct {
			ID   string `json:"id"`
			Slug string `json:"slug"`
		}
		var made struct {
			ids
			Data ids `json:"data"` // {"success":true,"data":{…}} of virtual keys and configs
		}
		if json.Unmarshal(bw.body.Bytes(), &made) == nil {
			for _, v := range []string{made.ID, made.Slug, made.Data.ID, made.Data.Slug} {
				if v != "" {
					rec.ResourceID = v
					break
				}
			}
		}
	}
	// The workspace acted in: a workspace key's own; for an organisation
	// key, the workspace a workspaces route names or makes, else the one
	// the query names (ActedIn overrides both).
	switch {
	case id.Type != gateway.KeyOrganisation:
		rec.WorkspaceID = id.WorkspaceID
	case resource == "workspaces":
		rec.WorkspaceID = rec.ResourceID
	default:
		rec.WorkspaceID = r.URL.Query().Get("workspace_id")
	}
	return rec
}

// auditWriter holds back a control-plane answer until its audit record
// is stored. Headers go to the underlying writer's map directly.
type auditWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
	over   bool // the body outgrew maxAuditCapture and is being passed on
}

func (w *auditWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	if code < 200 && !w.over {
		w.ResponseWriter.WriteHeader(code) // informational: never held
	}
}

func (w *auditWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if !w.over && w.body.Len()+len(p) <= maxAuditCapture {
		return w.body.Write(p)
	}
	if !w.over {
		w.over = true
		w.ResponseWriter.WriteHeader(w.status)
		if _, err := w.ResponseWriter.Write(w.body.Bytes()); err != nil {
			return 0, err
		}
		w.body = bytes.Buffer{}
	}
	return w.ResponseWriter.Write(p)
}

// flush sends what was held back.
func (w *auditWriter) flush() {
	if w.over || w.status == 0 {
		return
	}
	w.ResponseWriter.WriteHeader(w.status)
	w.ResponseWriter.Write(w.body.Bytes())
}

// Unwrap returns the underlying ResponseWriter, for http.ResponseController.
func (w *auditWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
