package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"time"
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

// maxAuditCapture bounds the response body the audit middleware holds
// back; control-plane answers are far smaller.
const maxAuditCapture = 1 << 20

// audit is the middleware around the control-plane routes that adds one
// AuditRecord to Options.Audit for every request other than GET, HEAD and
// OPTIONS, after its handler ran. It holds the handler's answer back
// until the record is stored, so that a client that got its answer finds
// the record in GET /audit-logs. The answer is read only for the "id"
// (or "slug") of what a create made; it never reaches the record. A
// store failure is logged, and the answer still sent. Requests refused
// before the control plane (no or an invalid key) are not recorded: they
// name no key.
func (g *Gateway) audit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.opts.Audit == nil || r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions {
			next.ServeHTTP(w, r)
			return
		}
		bw := &auditWriter{ResponseWriter: w}
		note := new(auditNote)
		r = r.WithContext(context.WithValue(r.Context(), auditNoteKey{}, note))
		next.ServeHTTP(bw, r)
		rec := g.auditRecord(r, bw)
		if note.workspace != "" {
			rec.WorkspaceID = note.workspace
		}
		rec.Detail = note.detail
		if err := g.opts.Audit.AddAuditRecord(r.Context(), &rec); err != nil {
			g.errLog.ErrorContext(r.Context(), "gateway: audit store", "err", err)
		}
		bw.flush()
	})
}

// auditNote is what a control-plane handler adds to its request's audit
// record: the workspace it acted in, when its route does not say, and a
// detail of the change.
type auditNote struct {
	workspace string
	detail    string
}

type auditNoteKey struct{}

// auditActedIn records that the control-plane write r acted in workspace
// ws (an organisation key naming a workspace in the body, say), for its
// audit record. It does nothing outside the audit middleware.
func auditActedIn(r *http.Request, ws string) {
	if n, ok := r.Context().Value(auditNoteKey{}).(*auditNote); ok && ws != "" {
		n.workspace = ws
	}
}

// auditRecord describes the request r, answered as bw holds.
func (g *Gateway) auditRecord(r *http.Request, bw *auditWriter) AuditRecord {
	id, _ := IdentityFrom(r.Context())
	trace, _ := TraceIDFrom(r.Context())
	rec := AuditRecord{Time: g.clock().UTC(), RequestID: trace, KeyID: id.KeyID, Method: r.Method,
		URI: r.URL.Path, Status: bw.status}
	if rec.Status == 0 {
		rec.Status = http.StatusOK // what net/http sends for a handler that wrote nothing
		if r.Context().Err() != nil {
			rec.Status = statusClientClosed
		}
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		rec.ClientIP = host
	}
	rest := strings.TrimPrefix(r.URL.Path, g.prefix+"/")
	switch seg := strings.SplitN(rest, "/", 3); {
	case seg[0] == "policies" && len(seg) > 1:
		rec.ResourceType = strings.ReplaceAll(seg[1], "-", "_") + "_policies"
	case seg[0] == "admin" && len(seg) > 1:
		rec.ResourceType = seg[1]
	case seg[0] == "logs" && len(seg) > 1 && seg[1] == "exports":
		rec.ResourceType = "log_exports"
	default:
		rec.ResourceType = strings.ReplaceAll(seg[0], "-", "_")
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
	// the query names.
	switch {
	case id.Type != KeyOrganisation:
		rec.WorkspaceID = id.WorkspaceID
	case rec.ResourceType == "workspaces":
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

// control marks the requests next serves as control-plane requests: the
// audit log records their writes, and they are not request logs of the
// LogSinks (nor, so, in analytics). The LogSink still gets their line.
func (g *Gateway) control(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if st := stateFrom(r.Context()); st != nil {
			st.control = true
		}
		next.ServeHTTP(w, r)
	})
}
