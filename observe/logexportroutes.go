package gateway

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
)

// logExportObject is the "object" of a log export in responses.
const logExportObject = "export"

// logExportRoutes registers the export lifecycle of request logs under
// {p}/logs/exports (the observability routes, the reference's shapes):
//
//	POST /logs/exports                    create a draft      → {"id","total","object":"export"}
//	GET  /logs/exports                    list                → {"object":"list","total","data"}
//	GET  /logs/exports/{id}               read                → the export (ExportItem)
//	PUT  /logs/exports/{id}               change a draft      → {"id","total","object":"export"}
//	POST /logs/exports/{id}/start         run it              → {"message","object":"export"}
//	POST /logs/exports/{id}/cancel        stop it             → {"message","object":"export"}
//	GET  /logs/exports/{id}/download      where its records are → {"signed_url"}
//	GET  /logs/exports/{id}/content       the records, as JSON Lines (application/x-ndjson)
//
// Every route needs logs.read, and the POST and PUT routes logs.write
// too. A workspace key sees its workspace's exports only; another's is
// 404. The download's signed_url names the content route on
// Options.PublicURL (a relative path without it) with an expiry an hour
// away and an HMAC-SHA256 signature under Options.URLSigningKey: whoever
// holds it may download that export's records, without an API key, until
// it expires (see serveSignedExport); the content route takes the
// x-gateway-api-key as well. Without Options.LogExports and Options.Logs
// every route answers 404.
func (g *Gateway) logExportRoutes(p string) {
	for _, r := range []struct{ path, action, allow string }{
		{"/logs/exports", "", "GET, POST"},
		{"/logs/exports/{exportId}", "", "GET, PUT"},
		{"/logs/exports/{exportId}/start", "start", "POST"},
		{"/logs/exports/{exportId}/cancel", "cancel", "POST"},
		{"/logs/exports/{exportId}/download", "download", "GET"},
		{"/logs/exports/{exportId}/content", "content", "GET"},
	} {
		// Exports take records out of the gateway: their writes (create,
		// update, start, cancel) are audited.
		g.mux.Handle(p+r.path, g.control(g.audit(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			g.serveLogExports(w, req, r.action, r.allow)
		}))))
	}
}

func (g *Gateway) serveLogExports(w http.ResponseWriter, r *http.Request, action, allow string) {
	eid := r.PathValue("exportId")
	if !allowOnly(w, r, strings.Split(allow, ", ")...) {
		return
	}
	id, _ := IdentityFrom(r.Context())
	if !id.Can(ScopeLogsRead) {
		WriteError(w, r, missingScope(ScopeLogsRead))
		return
	}
	if r.Method != http.MethodGet && !id.Can(ScopeLogsWrite) {
		WriteError(w, r, missingScope(ScopeLogsWrite))
		return
	}
	store := g.opts.LogExports
	if store == nil || g.opts.Logs == nil {
		WriteError(w, r, &Error{Status: http.StatusNotFound, Type: TypeNotFound, Code: CodeNotFound,
			Message: "log exports are not kept on this gateway"})
		return
	}
	var err error
	switch {
	case eid == "" && r.Method == http.MethodPost:
		err = g.createLogExport(w, r, store, id)
	case eid == "":
		err = g.listLogExports(w, r, store, id)
	default:
		var e *LogExport
		if e, err = g.lookupLogExport(r.Context(), store, id, eid); err == nil {
			switch {
			case action == "start":
				err = g.startLogExport(w, r, store, e)
			case action == "cancel":
				err = g.cancelLogExport(w, r, store, e)
			case action == "download":
				err = g.downloadLogExport(w, r, e)
			case action == "content":
				err = g.logExportContent(w, r, store, e)
			case r.Method == http.MethodPut:
				err = g.updateLogExport(w, r, store, id, e)
			default:
				writeJSON(w, http.StatusOK, wireLogExport(e))
			}
		}
	}
	if err != nil {
		g.controlPlaneError(w, r, "log export store", err)
	}
}

// logExportWire is an export as the reference's ExportItem has it. The
// gateway has no organisations: organisation_id is left out.
// workspace_id is null for an export of every workspace (an organisation
// key's); total is the gateway's own: the records a draft selects, or a
// successful export wrote.
type logExportWire struct {
	ID            string          `json:"id"`
	Object        string          `json:"object"`
	WorkspaceID   *string         `json:"workspace_id"`
	Filters       json.RawMessage `json:"filters"`
	RequestedData []string        `json:"requested_data"`
	Status        LogExportStatus `json:"status"`
	Description   string          `json:"description"`
	Total         int64           `json:"total"`
	CreatedAt     time.Time       `json:"created_at"`
	LastUpdatedAt time.Time       `json:"last_updated_at"`
	CreatedBy     string          `json:"created_by"`
}

func wireLogExport(e *LogExport) logExportWire {
	var ws *string
	if e.WorkspaceID != "" {
		ws = &e.WorkspaceID
	}
	filters := e.Filters
	if len(filters) == 0 {
		filters = json.RawMessage("{}")
	}
	fields := e.Fields
	if fields == nil {
		fields = []string{}
	}
	return logExportWire{ID: e.ID, Object: logExportObject, WorkspaceID: ws, Filters: filters, RequestedData: fields,
		Status: e.Status, Description: e.Description, Total: e.Total, CreatedAt: e.CreatedAt, LastUpdatedAt: e.UpdatedAt,
		CreatedBy: e.CreatedBy}
}

// exportWorkspace is the workspace an export request acts on: named (""
// for every workspace) for an organisation key; its own for a workspace
// key, which may not name another (403).
func exportWorkspace(id Identity, named string) (string, error) {
	if id.Type == KeyOrganisation {
		return named, nil
	}
	if named != "" && named != id.WorkspaceID {
		return "", otherWorkspace()
	}
	if id.WorkspaceID == "" {
		return exportNoWorkspace, nil
	}
	return id.WorkspaceID, nil
}

// lookupLogExport returns export eid if the caller may see it, brought
// up to date (see settleLogExport); else a 404.
func (g *Gateway) lookupLogExport(ctx context.Context, store LogExportStore, id Identity, eid string) (*LogExport, error) {
	ws, _ := exportWorkspace(id, "")
	if len(eid) > 128 || ws == exportNoWorkspace {
		return nil, logExportNotFound(eid)
	}
	e, err := store.LogExport(ctx, ws, eid)
	if err != nil {
		return nil, notFoundAs(err, "log export "+quoteShort(eid)+" not found")
	}
	return g.settleLogExport(ctx, store, e)
}

func logExportNotFound(eid string) *Error {
	return &Error{Status: http.StatusNotFound, Type: TypeNotFound, Code: CodeNotFound, Message: "log export " + quoteShort(eid) + " not found"}
}

// settleLogExport returns e, marked failed first when it is in progress
// but its job has not moved it for exportStaleAfter and does not run
// here: the gateway that ran it is gone.
func (g *Gateway) settleLogExport(ctx context.Context, store LogExportStore, e *LogExport) (*LogExport, error) {
	if e.Status != ExportInProgress || g.clock().Sub(e.UpdatedAt) < exportStaleAfter || g.exports.running(e.ID) {
		return e, nil
	}
	next := cloneLogExport(e)
	next.Status, next.Description, next.UpdatedAt = ExportFailed, exportDescGone, g.exportNow(e.UpdatedAt)
	switch err := store.UpdateLogExport(ctx, e, next, nil); {
	case err == nil:
		return next, nil
	case errors.Is(err, ErrConflict):
		return store.LogExport(ctx, e.WorkspaceID, e.ID) // the job moved, or another request settled it
	default:
		return nil, notFoundAs(err, "log export "+quoteShort(e.ID)+" not found")
	}
}

// logExportBody is the body of POST /logs/exports and PUT
// /logs/exports/{id}.
type logExportBody struct {
	WorkspaceID   *string         `json:"workspace_id"`
	Filters       json.RawMessage `json:"filters"`
	RequestedData []string        `json:"requested_data"`
}

// check checks b against the workspace ws the export is in, and returns
// its filters, compacted, and what they select.
func (b *logExportBody) check(ws string, fieldsRequired bool) (json.RawMessage, *exportFilter, error) {
	filters, f, err := parseExportFilters(b.Filters, ws)
	if err != nil {
		return nil, nil, err
	}
	if b.RequestedData != nil || fieldsRequired {
		if _, err := exportFields(b.RequestedData); err != nil {
			return nil, nil, err
		}
	}
	return filters, f, nil
}

func (g *Gateway) createLogExport(w http.ResponseWriter, r *http.Request, store LogExportStore, id Identity) error {
	var b logExportBody
	if err := g.decodeStrict(w, r, &b, false); err != nil {
		return err
	}
	named := ""
	if b.WorkspaceID != nil {
		if *b.WorkspaceID == "" {
			return policyInvalid("workspace_id", "workspace_id must not be empty")
		}
		named = *b.WorkspaceID
	}
	ws, err := exportWorkspace(id, named)
	if err != nil {
		return err
	}
	if ws == exportNoWorkspace {
		return &Error{Status: http.StatusForbidden, Type: TypePermission, Code: CodePermissionDenied,
			Message: "a key of no workspace has no request logs to export"}
	}
	filters, f, err := b.check(ws, true)
	if err != nil {
		return err
	}
	total, err := countExport(r.Context(), g.opts.Logs, f)
	if err != nil {
		return err
	}
	now := g.exportNow(time.Time{})
	e := &LogExport{ID: newUUID(), WorkspaceID: ws, CreatedBy: id.KeyID, Filters: filters, Fields: b.RequestedData,
		Status: ExportDraft, Description: exportDescDraft, Total: total, CreatedAt: now, UpdatedAt: now}
	if err := store.CreateLogExport(r.Context(), e); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, exportTotal{e.ID, total, logExportObject})
	return nil
}

// exportTotal is the reference's UpdateExportResponse.
type exportTotal struct {
	ID     string `json:"id"`
	Total  int64  `json:"total"`
	Object string `json:"object"`
}

// exportTask is the reference's ExportTaskResponse.
type exportTask struct {
	Message string `json:"message"`
	Object  string `json:"object"`
}

func (g *Gateway) listLogExports(w http.ResponseWriter, r *http.Request, store LogExportStore, id Identity) error {
	q := r.URL.Query()
	named, err := workspaceParam(q)
	if err != nil {
		return err
	}
	size, page, err := pageParams(q)
	if err != nil {
		return err
	}
	ws, err := exportWorkspace(id, named)
	if err != nil {
		return err
	}
	var all []LogExport
	if ws != exportNoWorkspace {
		if all, err = store.LogExports(r.Context(), ws); err != nil {
			return err
		}
	}
	data, total := listPage(all, nil, func(e *LogExport) logExportWire {
		s, err := g.settleLogExport(r.Context(), store, e)
		if err != nil || s == nil {
			s = e
		}
		return wireLogExport(s)
	}, size, page)
	writeJSON(w, http.StatusOK, struct {
		Object string          `json:"object"`
		Total  int             `json:"total"`
		Data   []logExportWire `json:"data"`
	}{"list", total, data})
	return nil
}

func (g *Gateway) updateLogExport(w http.ResponseWriter, r *http.Request, store LogExportStore, id Identity, e *LogExport) error {
	var b logExportBody
	if err := g.decodeStrict(w, r, &b, false); err != nil {
		return err
	}
	if b.WorkspaceID != nil {
		if _, err := exportWorkspace(id, *b.WorkspaceID); err != nil {
			return err
		}
		if *b.WorkspaceID != e.WorkspaceID {
			return policyInvalid("workspace_id", "an export stays in the workspace it was created in")
		}
	}
	if e.Status != ExportDraft {
		return exportStateConflict(e, "only a draft may be changed")
	}
	filters, f, err := b.check(e.WorkspaceID, false)
	if err != nil {
		return err
	}
	total, err := countExport(r.Context(), g.opts.Logs, f)
	if err != nil {
		return err
	}
	next := cloneLogExport(e)
	next.Filters, next.Total, next.UpdatedAt = filters, total, g.exportNow(e.UpdatedAt)
	if b.RequestedData != nil {
		next.Fields = b.RequestedData
	}
	if err := store.UpdateLogExport(r.Context(), e, next, nil); err != nil {
		if errors.Is(err, ErrConflict) {
			return exportStateConflict(e, "it changed while being updated; read it again")
		}
		return notFoundAs(err, "log export "+quoteShort(e.ID)+" not found")
	}
	writeJSON(w, http.StatusOK, exportTotal{e.ID, total, logExportObject})
	return nil
}

// exportStateConflict is the 409 of a request export e's status refuses.
func exportStateConflict(e *LogExport, why string) *Error {
	return &Error{Status: http.StatusConflict, Type: TypeInvalidRequest, Code: CodeConflict, Param: "status",
		Message: "log export " + quoteShort(e.ID) + " is " + string(e.Status) + ": " + why}
}

func (g *Gateway) startLogExport(w http.ResponseWriter, r *http.Request, store LogExportStore, e *LogExport) error {
	switch {
	case e.Status == ExportInProgress:
		return exportStateConflict(e, "it is already running")
	case e.Status.Final():
		return exportStateConflict(e, "a finished export cannot be restarted; create a new one")
	}
	started := g.exportNow(e.UpdatedAt)
	next := cloneLogExport(e)
	next.Status, next.UpdatedAt = ExportInProgress, started
	next.Description = "in_progress: writing the records up to " + started.Format(exportTimeFormat)
	if err := store.UpdateLogExport(r.Context(), e, next, nil); err != nil {
		if errors.Is(err, ErrConflict) {
			return exportStateConflict(e, "it changed while being started (started or cancelled by another request); read it again")
		}
		return notFoundAs(err, "log export "+quoteShort(e.ID)+" not found")
	}
	logs := g.opts.Logs
	if !g.exports.start(next.ID, func(ctx context.Context) { g.runExport(ctx, store, logs, next, started) }) {
		g.runExport(canceledContext(), store, logs, next, started) // closing: records it failed
		return &Error{Status: http.StatusServiceUnavailable, Type: TypeGateway, Code: "shutting_down",
			Message: "the gateway is shutting down: the export was not started"}
	}
	writeJSON(w, http.StatusOK, exportTask{"export started", logExportObject})
	return nil
}

// canceledContext returns a context that is already done.
func canceledContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func (g *Gateway) cancelLogExport(w http.ResponseWriter, r *http.Request, store LogExportStore, e *LogExport) error {
	for range exportSwapTries {
		if e.Status.Final() {
			return exportStateConflict(e, "it has finished; there is nothing to cancel")
		}
		next := cloneLogExport(e)
		next.Status, next.Description, next.UpdatedAt = ExportStopped, exportDescStopped, g.exportNow(e.UpdatedAt)
		err := store.UpdateLogExport(r.Context(), e, next, nil)
		if err == nil {
			g.exports.cancel(e.ID)
			writeJSON(w, http.StatusOK, exportTask{"export stopped", logExportObject})
			return nil
		}
		if !errors.Is(err, ErrConflict) {
			return notFoundAs(err, "log export "+quoteShort(e.ID)+" not found")
		}
		// The job's heartbeat moved it meanwhile: read it again.
		if e, err = store.LogExport(r.Context(), e.WorkspaceID, e.ID); err != nil {
			return notFoundAs(err, "log export not found")
		}
	}
	return exportStateConflict(e, "it kept changing while being cancelled; try again")
}

func (g *Gateway) downloadLogExport(w http.ResponseWriter, r *http.Request, e *LogExport) error {
	if e.Status != ExportSuccess {
		return exportStateConflict(e, "its records can be downloaded once it has succeeded")
	}
	// The host is the operator's (Options.PublicURL), never the
	// request's Host or X-Forwarded-* headers, which the caller chooses.
	w.Header().Set("Cache-Control", "no-store") // the URL is a credential
	writeJSON(w, http.StatusOK, struct {
		SignedURL string `json:"signed_url"`
	}{g.signedExportURL(e.ID)})
	return nil
}

func (g *Gateway) logExportContent(w http.ResponseWriter, r *http.Request, store LogExportStore, e *LogExport) error {
	if e.Status != ExportSuccess {
		return exportStateConflict(e, "its records can be downloaded once it has succeeded")
	}
	content, err := store.LogExportContent(r.Context(), e.WorkspaceID, e.ID)
	if err != nil {
		return notFoundAs(err, "log export "+quoteShort(e.ID)+" has no records stored")
	}
	zr, err := gzip.NewReader(bytes.NewReader(content))
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "application/x-ndjson")
	h.Set("Content-Disposition", `attachment; filename="log-export-`+e.ID+`.jsonl"`)
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, zr); err != nil {
		if r.Context().Err() == nil { // not merely a caller gone
			g.errLog.ErrorContext(r.Context(), "gateway: log export download cut short", "export", e.ID, "err", err)
		}
		panic(http.ErrAbortHandler) // the status is sent: abort rather than end a partial file cleanly
	}
	return nil
}
