package observe

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
	"github.com/modelgateway/gateway/internal/uuid"
)

// customLog is the reference's CustomLog: a request made elsewhere, told
// to the gateway so that it shows in the logs and analytics beside its
// own. Headers and bodies are read for what the record keeps (the model,
// the usage) and never stored: they may hold credentials.
type customLog struct {
	Request *struct {
		URL    *string         `json:"url"`
		Method string          `json:"method"`
		Body   json.RawMessage `json:"body"`
	} `json:"request"`
	Response *struct {
		Status       int             `json:"status"`
		Body         json.RawMessage `json:"body"`
		ResponseTime *int64          `json:"response_time"` // ms
	} `json:"response"`
	Metadata map[string]json.RawMessage `json:"metadata"`
}

// customLogsMax is how many custom logs one POST /logs may carry.
const customLogsMax = 100

// addCustomLogs serves POST /logs: one CustomLog or an array of up to
// 100, stored as request logs of the caller's key and workspace, each a
// 400 naming its field when it is not well formed (nothing is stored
// then). request.url gives the path (its query is not kept, as it may
// hold a key); request.body.model the model; response.body.usage the
// tokens; metadata.trace_id the trace id (a new one when absent), and the
// other metadata string values the record's metadata. It answers
// {"object":"list","data":[{"id"},…]} with the new records' ids.
func (rs *Routes) addCustomLogs(w http.ResponseWriter, r *http.Request, id gateway.Identity) {
	body, err := control.ReadBody(r)
	if err != nil {
		gateway.WriteError(w, r, err)
		return
	}
	var logs []customLog
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		err = json.Unmarshal(trimmed, &logs)
	} else {
		logs = make([]customLog, 1)
		err = json.Unmarshal(trimmed, &logs[0])
	}
	if err != nil {
		gateway.WriteError(w, r, control.Translate(httpapi.BodyError(err)))
		return
	}
	if len(logs) == 0 || len(logs) > customLogsMax {
		gateway.WriteError(w, r, control.Invalid("", "the body must hold 1 to 100 logs"))
		return
	}
	now := rs.clock()
	recs := make([]*gateway.RequestLog, len(logs))
	for i, cl := range logs {
		if recs[i], err = customRecord(&cl, len(logs) > 1, i, id, now, rs.ids.Next(now)); err != nil {
			gateway.WriteError(w, r, err)
			return
		}
	}
	if err := rs.logs.AddLogs(r.Context(), recs); err != nil {
		control.Fail(w, r, rs.errLog, "log store", err)
		return
	}
	type idWire struct {
		ID string `json:"id"`
	}
	data := make([]idWire, len(recs))
	for i, rec := range recs {
		data[i] = idWire{rec.ID}
	}
	httpapi.WriteJSON(w, http.StatusOK, struct {
		Object string   `json:"object"`
		Data   []idWire `json:"data"`
	}{"list", data})
}

// customRecord turns one custom log into the record logID; many says the
// body was an array, so that fields are named with their index.
func customRecord(cl *customLog, many bool, i int, id gateway.Identity, now time.Time, logID string) (*gateway.RequestLog, error) {
	field := func(name string) string {
		if many {
			return "[" + strconv.Itoa(i) + "]." + name
		}
		return name
	}
	switch {
	case cl.Request == nil:
		return nil, control.Invalid(field("request"), field("request")+" is required")
	case cl.Request.URL == nil:
		return nil, control.Invalid(field("request.url"), field("request.url")+" is required")
	case cl.Response == nil:
		return nil, control.Invalid(field("response"), field("response")+" is required")
	}
	u, err := url.Parse(*cl.Request.URL)
	if err != nil || len(*cl.Request.URL) > 2048 {
		return nil, control.Invalid(field("request.url"), field("request.url")+" must be a URL")
	}
	rec := &gateway.RequestLog{ID: logID, Time: now, TraceID: uuid.NewV7(), KeyID: id.KeyID, WorkspaceID: id.WorkspaceID,
		Provider: "custom", Method: cl.Request.Method, Path: u.Path, Status: cl.Response.Status}
	if rec.Method == "" {
		rec.Method = http.MethodPost
	}
	if rec.Status != 0 && (rec.Status < 100 || rec.Status > 599) {
		return nil, control.Invalid(field("response.status"), field("response.status")+" must be an HTTP status code")
	}
	if rt := cl.Response.ResponseTime; rt != nil {
		if *rt < 0 {
			return nil, control.Invalid(field("response.response_time"), field("response.response_time")+" must be ≥ 0")
		}
		rec.Latency = time.Duration(*rt) * time.Millisecond
	}
	var req struct {
		Model string `json:"model"`
	}
	if json.Unmarshal(cl.Request.Body, &req) == nil {
		rec.Model = clipModel(req.Model) // only observed: clipped, not refused
	}
	var res struct {
		Model string `json:"model"`
		Usage struct {
			Prompt     int64 `json:"prompt_tokens"`
			Completion int64 `json:"completion_tokens"`
			Total      int64 `json:"total_tokens"`
		} `json:"usage"`
	}
	if json.Unmarshal(cl.Response.Body, &res) == nil {
		if rec.Model == "" {
			rec.Model = clipModel(res.Model)
		}
		u := res.Usage
		if u.Prompt >= 0 && u.Completion >= 0 && u.Total >= 0 {
			rec.PromptTokens, rec.CompletionTokens, rec.TotalTokens = u.Prompt, u.Completion, max(u.Total, u.Prompt+u.Completion)
		}
	}
	for k, raw := range cl.Metadata {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, control.Invalid(field("metadata."+k), field("metadata."+k)+" must be a string")
		}
		switch k {
		case "trace_id":
			if s != "" {
				rec.TraceID = s
			}
		case "span_id", "span_name":
		default:
			if rec.Metadata == nil {
				rec.Metadata = make(map[string]string, len(cl.Metadata))
			}
			rec.Metadata[k] = s
		}
	}
	return rec, nil
}
