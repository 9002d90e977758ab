package observe

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/uuid"
)

// Options configure the observability routes Mount adds to a gateway.
// Each store is optional: the routes of a nil one answer 404.
type Options struct {
	// Logs keeps request logs, to be asked later through GET /logs and
	// GET /logs/{id}, and takes custom logs from POST /logs; the
	// analytics routes read it. Nil: those routes answer 404. The
	// gateway's records reach it through Sink(Logs), which the host puts
	// in gateway.Options.LogSinks.
	Logs Store

	// Feedback keeps the feedback of POST /feedback and PUT /feedback/{id},
	// which the analytics routes read with the request logs of its trace
	// (nil: those routes answer 404, and analytics count only what a Logs
	// store that aggregates itself keeps).
	Feedback FeedbackStore

	// Exports keeps the log exports of /logs/exports and the records each
	// produced (nil: those routes answer 404, as they do without Logs). A
	// started export runs in a goroutine of the Routes', paging through
	// Logs; replicas sharing the store see each other's exports and serve
	// each other's downloads.
	Exports ExportStore

	// Audit records the writes of /logs/exports (resource log_exports),
	// and its Store serves GET /audit-logs. Nil, or one without a Store:
	// writes are not recorded and /audit-logs answers 404.
	Audit *Auditor

	// PublicURL is where clients reach the gateway, such as
	// https://gateway.example.com (an absolute URL without query), which
	// the signed URLs of log exports (their signed_url) start with. Empty
	// means relative URLs. It is never taken from a request's Host or
	// X-Forwarded-* headers, which callers choose.
	PublicURL string

	// URLSigningKey is the HMAC-SHA256 key of those signed URLs. Replicas
	// that serve each other's URLs need the same key; it must be secret
	// and should be derived for this use alone (never a master key
	// itself). Nil means a random key per process.
	URLSigningKey []byte

	// ErrorLog receives the stores' failures. Nil means slog.Default().
	ErrorLog *slog.Logger

	// Now is the clock of exports, custom logs and analytics. Nil means
	// time.Now.
	Now func() time.Time
}

// Routes are the observability routes Mount added to a gateway. Close
// stops the log exports they started.
type Routes struct {
	gw          *gateway.Gateway
	logs        Store
	feedback    FeedbackStore
	exportStore ExportStore
	audit       AuditStore
	auditor     *Auditor
	publicURL   string
	signingKey  []byte
	errLog      *slog.Logger
	now         func() time.Time
	ids         uuid.V7      // custom logs' ids
	exports     exportRunner // the log exports started here
}

// Mount registers on g the observability routes, each behind g's trace,
// key and header stages (see gateway.Gateway.Handle), under g's prefix:
// /logs and /logs/{id}, /logs/exports…, /analytics/…, /feedback… and
// /audit-logs, as the package documentation lists them. The rest of
// /logs/, /analytics/ and /feedback/ answers 404, never passed through.
// A signed URL of a log export is served without an API key (see
// gateway.Gateway.HandleSigned).
//
// Mount must be called once per gateway, before it serves its first
// request; it panics if the routes are registered already. The Routes'
// Close stops the export jobs; it is best called before the gateway's and
// the stores' own Close.
func Mount(g *gateway.Gateway, o Options) *Routes {
	rs := &Routes{gw: g, logs: o.Logs, feedback: o.Feedback, exportStore: o.Exports, auditor: o.Audit,
		publicURL: o.PublicURL, signingKey: o.URLSigningKey, errLog: o.ErrorLog, now: o.Now}
	if o.Audit != nil {
		rs.audit = o.Audit.Store
	}
	if rs.errLog == nil {
		rs.errLog = slog.Default()
	}
	none := http.HandlerFunc(control.NoRoute)
	g.Handle("/audit-logs", http.HandlerFunc(rs.serveAuditLogs))
	// Reads of the logs, and custom logs, are not audited writes of
	// configuration.
	g.Handle("/logs", http.HandlerFunc(rs.serveLogs))
	g.Handle("/logs/{id}", http.HandlerFunc(rs.serveLogs))
	rs.logExportRoutes()
	g.Handle("/logs/", none)
	// Analytics read the logs; feedback is the callers' scoring of
	// answers: neither is an audited write of configuration.
	for path, route := range analyticsRoutes {
		g.Handle(path, rs.analytics(route))
	}
	g.Handle("/analytics/", none)
	g.Handle("/feedback", http.HandlerFunc(rs.serveFeedback))
	g.Handle("/feedback/{id}", http.HandlerFunc(rs.serveFeedback))
	g.Handle("/feedback/", none)
	g.HandleSigned(rs.serveSignedExport)
	return rs
}

// Close stops the log exports started through these routes and waits for
// their goroutines to end; an export cut short is marked failed by the
// next gateway that reads it. Close is safe to call more than once.
func (rs *Routes) Close() error {
	rs.exports.close()
	return nil
}

// clock returns the time now, by Options.Now.
func (rs *Routes) clock() time.Time {
	if rs.now != nil {
		return rs.now()
	}
	return time.Now()
}
