package observe

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

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
	"github.com/modelgateway/gateway/internal/uuid"
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
// x-gateway-api-key as well. Without Options.Exports and Options.Logs
// every route answers 404.
func (rs *Routes) logExportRoutes() {
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
		rs.gw.Handle(r.path, rs.auditor.Wrap("log_exports", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			rs.serveLogExports(w, req, r.action, r.allow)
		})))
	}
}

func (rs *Routes) serveLogExports(w http.ResponseWriter, r *http.Request, action, allow string) {
	eid := r.PathValue("exportId")
	if !control.Allow(w, r, strings.Split(allow, ", ")...) {
		return
	}
	id, _ := gateway.IdentityFrom(r.Context())
	if !id.Can(gateway.ScopeLogsRead) {
		gateway.WriteError(w, r, control.MissingScope(gateway.ScopeLogsRead))
		return
	}
	if r.Method != http.MethodGet && !id.Can(gateway.ScopeLogsWrite) {
		gateway.WriteError(w, r, control.MissingScope(gateway.ScopeLogsWrite))
		return
	}
	store := rs.exportStore
	if store == nil || rs.logs == nil {
		gateway.WriteError(w, r, &gateway.Error{Status: http.StatusNotFound, Type: gateway.TypeNotFound, Code: gateway.CodeNotFound,
			Message: "log exports are not kept on this gateway"})
		return
	}
	var err error
	switch {
	case eid == "" && r.Method == http.MethodPost:
		err = rs.createLogExport(w, r, store, id)
	case eid == "":
		err = rs.listLogExports(w, r, store, id)
	default:
		var e *Export
		if e, err = rs.lookupLogExport(r.Context(), store, id, eid); err == nil {
			switch {
			case action == "start":
				err = rs.startLogExport(w, r, store, e)
			case action == "cancel":
				err = rs.cancelLogExport(w, r, store, e)
			case action == "download":
				err = rs.downloadLogExport(w, r, e)
			case action == "content":
				err = rs.logExportContent(w, r, store, e)
			case r.Method == http.MethodPut:
				err = rs.updateLogExport(w, r, store, id, e)
			default:
				httpapi.WriteJSON(w, http.StatusOK, wireLogExport(e))
			}
		}
	}
	if err != nil {
		control.Fail(w, r, rs.errLog, "log export store", err)
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
	Status        ExportStatus    `json:"status"`
	Description   string          `json:"description"`
	Total         int64           `json:"total"`
	CreatedAt     time.Time       `json:"created_at"`
	LastUpdatedAt time.Time       `json:"last_updated_at"`
	CreatedBy     string          `json:"created_by"`
}

func wireLogExport(e *Export) logExportWire {
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
func exportWorkspace(id gateway.Identity, named string) (string, error) {
	if id.Type == gateway.KeyOrganisation {
		return named, nil
	}
	if named != "" && named != id.WorkspaceID {
		return "", control.OtherWorkspace()
	}
	if id.WorkspaceID == "" {
		return exportNoWorkspace, nil
	}
	return id.WorkspaceID, nil
}

// lookupLogExport returns export eid if the caller may see it, brought
// up to date (see settleLogExport); else a 404.
func (rs *Routes) lookupLogExport(ctx context.Context, store ExportStore, id gateway.Identity, eid string) (*Export, error) {
	ws, _ := exportWorkspace(id, "")
	if len(eid) > 128 || ws == exportNoWorkspace {
		return nil, logExportNotFound(eid)
	}
	e, err := store.LogExport(ctx, ws, eid)
	if err != nil {
		return nil, notFoundAs(err, "log export "+control.Quote(eid)+" not found")
	}
	return rs.settleLogExport(ctx, store, e)
}

func logExportNotFound(eid string) *gateway.Error {
	return &gateway.Error{Status: http.StatusNotFound, Type: gateway.TypeNotFound, Code: gateway.CodeNotFound, Message: "log export " + control.Quote(eid) + " not found"}
}

// settleLogExport returns e, marked failed first when it is in progress
// but its job has not moved it for exportStaleAfter and does not run
// here: the gateway that ran it is gone.
func (rs *Routes) settleLogExport(ctx context.Context, store ExportStore, e *Export) (*Export, error) {
	if e.Status != ExportInProgress || rs.clock().Sub(e.UpdatedAt) < exportStaleAfter || rs.exports.running(e.ID) {
		return e, nil
	}
	next := e.Clone()
	next.Status, next.Description, next.UpdatedAt = ExportFailed, exportDescGone, rs.exportNow(e.UpdatedAt)
	switch err := store.UpdateLogExport(ctx, e, next, nil); {
	case err == nil:
		return next, nil
	case errors.Is(err, gateway.ErrConflict):
		return store.LogExport(ctx, e.WorkspaceID, e.ID) // the job moved, or another request settled it
	default:
		return nil, notFoundAs(err, "log export "+control.Quote(e.ID)+" not found")
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

func (rs *Routes) createLogExport(w http.ResponseWriter, r *http.Request, store ExportStore, id gateway.Identity) error {
	var b logExportBody
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	named := ""
	if b.WorkspaceID != nil {
		if *b.WorkspaceID == "" {
			return control.Invalid("workspace_id", "workspace_id must not be empty")
		}
		named = *b.WorkspaceID
	}
	ws, err := exportWorkspace(id, named)
	if err != nil {
		return err
	}
	if ws == exportNoWorkspace {
		return &gateway.Error{Status: http.StatusForbidden, Type: gateway.TypePermission, Code: gateway.CodePermissionDenied,
			Message: "a key of no workspace has no request logs to export"}
	}
	filters, f, err := b.check(ws, true)
	if err != nil {
		return err
	}
	total, err := countExport(r.Context(), rs.logs, f)
	if err != nil {
		return err
	}
	now := rs.exportNow(time.Time{})
	e := &Export{ID: uuid.New(), WorkspaceID: ws, CreatedBy: id.KeyID, Filters: filters, Fields: b.RequestedData,
		Status: ExportDraft, Description: exportDescDraft, Total: total, CreatedAt: now, UpdatedAt: now}
	if err := store.CreateLogExport(r.Context(), e); err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, exportTotal{e.ID, total, logExportObject})
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

func (rs *Routes) listLogExports(w http.ResponseWriter, r *http.Request, store ExportStore, id gateway.Identity) error {
	q := r.URL.Query()
	named, err := httpapi.WorkspaceParam(q)
	err = control.Translate(err)
	if err != nil {
		return err
	}
	pg, err := control.Page(q)
	if err != nil {
		return err
	}
	size, page := pg.Size, pg.Number
	ws, err := exportWorkspace(id, named)
	if err != nil {
		return err
	}
	var all []Export
	if ws != exportNoWorkspace {
		if all, err = store.LogExports(r.Context(), ws); err != nil {
			return err
		}
	}
	data, total := httpapi.Filter(all, nil, func(e *Export) logExportWire {
		s, err := rs.settleLogExport(r.Context(), store, e)
		if err != nil || s == nil {
			s = e
		}
		return wireLogExport(s)
	}, httpapi.Page{Size: size, Number: page})
	httpapi.WriteJSON(w, http.StatusOK, struct {
		Object string          `json:"object"`
		Total  int             `json:"total"`
		Data   []logExportWire `json:"data"`
	}{"list", total, data})
	return nil
}

func (rs *Routes) updateLogExport(w http.ResponseWriter, r *http.Request, store ExportStore, id gateway.Identity, e *Export) error {
	var b logExportBody
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	if b.WorkspaceID != nil {
		if _, err := exportWorkspace(id, *b.WorkspaceID); err != nil {
			return err
		}
		if *b.WorkspaceID != e.WorkspaceID {
			return control.Invalid("workspace_id", "an export stays in the workspace it was created in")
		}
	}
	if e.Status != ExportDraft {
		return exportStateConflict(e, "only a draft may be changed")
	}
	filters, f, err := b.check(e.WorkspaceID, false)
	if err != nil {
		return err
	}
	total, err := countExport(r.Context(), rs.logs, f)
	if err != nil {
		return err
	}
	next := e.Clone()
	next.Filters, next.Total, next.UpdatedAt = filters, total, rs.exportNow(e.UpdatedAt)
	if b.RequestedData != nil {
		next.Fields = b.RequestedData
	}
	if err := store.UpdateLogExport(r.Context(), e, next, nil); err != nil {
		if errors.Is(err, gateway.ErrConflict) {
			return exportStateConflict(e, "it changed while being updated; read it again")
		}
		return notFoundAs(err, "log export "+control.Quote(e.ID)+" not found")
	}
	httpapi.WriteJSON(w, http.StatusOK, exportTotal{e.ID, total, logExportObject})
	return nil
}

// exportStateConflict is the 409 of a request export e's status refuses.
func exportStateConflict(e *Export, why string) *gateway.Error {
	return &gateway.Error{Status: http.StatusConflict, Type: gateway.TypeInvalidRequest, Code: gateway.CodeConflict, Param: "status",
		Message: "log export " + control.Quote(e.ID) + " is " + string(e.Status) + ": " + why}
}

func (rs *Routes) startLogExport(w http.ResponseWriter, r *http.Request, store ExportStore, e *Export) error {
	switch {
	case e.Status == ExportInProgress:
		return exportStateConflict(e, "it is already running")
	case e.Status.Final():
		return exportStateConflict(e, "a finished export cannot be restarted; create a new one")
	}
	started := rs.exportNow(e.UpdatedAt)
	next := e.Clone()
	next.Status, next.UpdatedAt = ExportInProgress, started
	next.Description = "in_progress: writing the records up to " + started.Format(exportTimeFormat)
	if err := store.UpdateLogExport(r.Context(), e, next, nil); err != nil {
		if errors.Is(err, gateway.ErrConflict) {
			return exportStateConflict(e, "it changed while being started (started or cancelled by another request); read it again")
		}
		return notFoundAs(err, "log export "+control.Quote(e.ID)+" not found")
	}
	logs := rs.logs
	if !rs.exports.start(next.ID, func(ctx context.Context) { rs.runExport(ctx, store, logs, next, started) }) {
		rs.runExport(canceledContext(), store, logs, next, started) // closing: records it failed
		return &gateway.Error{Status: http.StatusServiceUnavailable, Type: gateway.TypeGateway, Code: "shutting_down",
			Message: "the gateway is shutting down: the export was not started"}
	}
	httpapi.WriteJSON(w, http.StatusOK, exportTask{"export started", logExportObject})
	return nil
}

// canceledContext returns a context that is already done.
func canceledContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func (rs *Routes) cancelLogExport(w http.ResponseWriter, r *http.Request, store ExportStore, e *Export) error {
	for range exportSwapTries {
		if e.Status.Final() {
			return exportStateConflict(e, "it has finished; there is nothing to cancel")
		}
		next := e.Clone()
		next.Status, next.Description, next.UpdatedAt = ExportStopped, exportDescStopped, rs.exportNow(e.UpdatedAt)
		err := store.UpdateLogExport(r.Context(), e, next, nil)
		if err == nil {
			rs.exports.cancel(e.ID)
			httpapi.WriteJSON(w, http.StatusOK, exportTask{"export stopped", logExportObject})
			return nil
		}
		if !errors.Is(err, gateway.ErrConflict) {
			return notFoundAs(err, "log export "+control.Quote(e.ID)+" not found")
		}
		// The job's heartbeat moved it meanwhile: read it again.
		if e, err = store.LogExport(r.Context(), e.WorkspaceID, e.ID); err != nil {
			return notFoundAs(err, "log export not found")
		}
	}
	return exportStateConflict(e, "it kept changing while being cancelled; try again")
}

func (rs *Routes) downloadLogExport(w http.ResponseWriter, r *http.Request, e *Export) error {
	if e.Status != ExportSuccess {
		return exportStateConflict(e, "its records can be downloaded once it has succeeded")
	}
	// The host is the operator's (Options.PublicURL), never the
	// request's Host or X-Forwarded-* headers, which the caller chooses.
	w.Header().Set("Cache-Control", "no-store") // the URL is a credential
	httpapi.WriteJSON(w, http.StatusOK, struct {
		SignedURL string `json:"signed_url"`
	}{rs.signedExportURL(e.ID)})
	return nil
}

func (rs *Routes) logExportContent(w http.ResponseWriter, r *http.Request, store ExportStore, e *Export) error {
	if e.Status != ExportSuccess {
		return exportStateConflict(e, "its records can be downloaded once it has succeeded")
	}
	content, err := store.LogExportContent(r.Context(), e.WorkspaceID, e.ID)
	if err != nil {
		return notFoundAs(err, "log export "+control.Quote(e.ID)+" has no records stored")
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
			rs.errLog.ErrorContext(r.Context(), "gateway: log export download cut short", "export", e.ID, "err", err)
		}
		panic(http.ErrAbortHandler) // the status is sent: abort rather than end a partial file cleanly
	}
	return nil
}
