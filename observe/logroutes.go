package observe

import (
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// logWire is a request log as GET /logs and GET /logs/{id} answer it: the
// names of the reference's analytics metrics where it has one (ai_org,
// ai_model, req_units, res_units, total_units, response_time,
// last_used_option_index…), the gateway's own otherwise.
type logWire struct {
	Object             string              `json:"object"`
	ID                 string              `json:"id"`
	CreatedAt          time.Time           `json:"created_at"`
	TraceID            string              `json:"trace_id"`
	WorkspaceID        string              `json:"workspace_id,omitempty"`
	APIKeyID           string              `json:"api_key_id,omitempty"`
	VirtualKey         string              `json:"virtual_key,omitempty"`
	Config             string              `json:"config,omitempty"`
	AIOrg              string              `json:"ai_org,omitempty"`
	AIModel            string              `json:"ai_model,omitempty"`
	RequestMethod      string              `json:"request_method"`
	RequestURL         string              `json:"request_url"`
	ResponseStatusCode int                 `json:"response_status_code"`
	IsSuccess          bool                `json:"is_success"`
	ResponseTime       int64               `json:"response_time"`          // ms
	TimeToFirstByte    int64               `json:"time_to_first_byte"`     // ms
	ResponseTimeUS     int64               `json:"response_time_us"`       // µs, for answers faster than a millisecond
	TimeToFirstByteUS  int64               `json:"time_to_first_byte_us"`  // µs
	ReqUnits           int64               `json:"req_units"`              // prompt tokens
	ResUnits           int64               `json:"res_units"`              // completion tokens
	TotalUnits         int64               `json:"total_units"`            // total tokens
	CachedUnits        int64               `json:"cached_req_units"`       // prompt tokens from the provider's cache
	Cost               float64             `json:"cost"`                   // USD
	CostCurrency       string              `json:"cost_currency"`          // USD
	CostUnknown        bool                `json:"cost_unknown,omitempty"` // the model has no price
	CacheStatus        gateway.CacheStatus `json:"cache_status,omitempty"` // HIT, MISS…
	Retries            int                 `json:"retry_count"`            // retries after the first try
	LastUsedOption     int                 `json:"last_used_option_index"` // the fallback target that answered
	Rescued            bool                `json:"rescued"`                // 2xx after a failed attempt
	ErrorCode          string              `json:"error_code,omitempty"`   // the gateway's or the provider's
	Aborted            bool                `json:"aborted,omitempty"`      // cut mid-stream
	BytesIn            int64               `json:"request_bytes"`          // body bytes received
	BytesOut           int64               `json:"response_bytes"`         // body bytes sent
	Metadata           map[string]string   `json:"metadata"`               // x-gateway-metadata
	Guardrails         string              `json:"guardrails,omitempty"`   // passed, failed or denied
	HookResults        json.RawMessage     `json:"hook_results,omitempty"` // each guardrail's verdict and its checks'
	// The kept bodies (Options.LogBodies), in GET /logs/{id} only.
	Request  *logBodyWire `json:"request,omitempty"`
	Response *logBodyWire `json:"response,omitempty"`
}

// wireLog is rec in its wire form.
func wireLog(rec *gateway.RequestLog) logWire {
	md := rec.Metadata
	if md == nil {
		md = map[string]string{}
	}
	return logWire{Object: "log", ID: rec.ID, CreatedAt: rec.Time, TraceID: rec.TraceID, WorkspaceID: rec.WorkspaceID,
		APIKeyID: rec.KeyID, VirtualKey: rec.VirtualKey, Config: rec.ConfigID, AIOrg: rec.Provider, AIModel: rec.Model,
		RequestMethod: rec.Method, RequestURL: rec.Path, ResponseStatusCode: rec.Status,
		IsSuccess:    rec.Status >= 200 && rec.Status < 300,
		ResponseTime: rec.Latency.Milliseconds(), TimeToFirstByte: rec.TTFB.Milliseconds(),
		ResponseTimeUS: rec.Latency.Microseconds(), TimeToFirstByteUS: rec.TTFB.Microseconds(),
		ReqUnits: rec.PromptTokens, ResUnits: rec.CompletionTokens, TotalUnits: rec.TotalTokens,
		CachedUnits: rec.CachedPromptTokens, Cost: rec.Cost, CostCurrency: "USD", CostUnknown: rec.CostUnknown,
		CacheStatus: rec.CacheStatus, Retries: rec.Attempts, LastUsedOption: rec.FallbackIndex, Rescued: rec.Rescued,
		ErrorCode: rec.ErrorCode, Aborted: rec.Aborted, BytesIn: rec.BytesIn, BytesOut: rec.BytesOut, Metadata: md,
		Guardrails: rec.Guardrails, HookResults: rec.HookResults}
}

// serveLogs serves {prefix}/logs and {prefix}/logs/{id}:
//
//   - GET /logs (logs.read): the records the filters select, newest first,
//     as {"object":"list","data","has_more","last_id"}; pass last_id as
//     after for the next page. Filters: those of logQuery.
//   - GET /logs/{id} (logs.read): one record.
//   - POST /logs (logs.write): custom logs, one CustomLog or an array of
//     them (see addCustomLogs).
//
// A workspace key sees only its workspace's records; another workspace's
// record is 404. The routes answer 404 when Options.Logs is nil.
func (rs *Routes) serveLogs(w http.ResponseWriter, r *http.Request) {
	id, _ := gateway.IdentityFrom(r.Context())
	logID := r.PathValue("id")
	allow := []string{http.MethodGet}
	if logID == "" {
		allow = append(allow, http.MethodPost)
	}
	if !control.Allow(w, r, allow...) {
		return
	}
	scope := gateway.ScopeLogsRead
	if r.Method == http.MethodPost {
		scope = gateway.ScopeLogsWrite
	}
	if !id.Can(scope) {
		gateway.WriteError(w, r, control.MissingScope(scope))
		return
	}
	store := rs.logs
	if store == nil {
		gateway.WriteError(w, r, &gateway.Error{Status: http.StatusNotFound, Type: gateway.TypeNotFound, Code: gateway.CodeNotFound,
			Message: "request logs are not stored on this gateway"})
		return
	}
	switch {
	case r.Method == http.MethodPost:
		rs.addCustomLogs(w, r, id)
	case logID != "":
		ws := id.WorkspaceID
		if id.Type == gateway.KeyOrganisation {
			ws = ""
		} else if ws == "" {
			ws = "\x00" // a workspace key of no workspace sees no record
		}
		rec, err := store.Log(r.Context(), ws, logID)
		if err != nil {
			control.Fail(w, r, rs.errLog, "log store", notFoundAs(err, "log "+control.Quote(logID)+" not found"))
			return
		}
		wl := wireLog(rec)
		wl.Request, wl.Response = wireBodies(rec)
		httpapi.WriteJSON(w, http.StatusOK, wl)
	default:
		rs.listLogs(w, r, store, id)
	}
}

func (rs *Routes) listLogs(w http.ResponseWriter, r *http.Request, store Store, id gateway.Identity) {
	v := r.URL.Query()
	q, err := logQuery(v, id)
	if err != nil {
		gateway.WriteError(w, r, err)
		return
	}
	pg, err := control.Page(v) // pages are cursors (after), not numbers: current_page is only checked
	if err != nil {
		gateway.WriteError(w, r, err)
		return
	}
	if s, ok := v["after"]; ok {
		if len(s) != 1 || s[0] == "" || len(s[0]) > 128 {
			gateway.WriteError(w, r, control.Invalid("after", "after must be the last_id of the previous page"))
			return
		}
		q.After = s[0]
	}
	data := []logWire{}
	more := false
	if q.WorkspaceID != "\x00" {
		q.Limit = pg.Size + 1 // one more tells whether another page follows
		recs, err := store.Logs(r.Context(), q)
		if err != nil {
			control.Fail(w, r, rs.errLog, "log store", err)
			return
		}
		if more = len(recs) > pg.Size; more {
			recs = recs[:pg.Size]
		}
		for i := range recs {
			data = append(data, wireLog(&recs[i]))
		}
	}
	last := ""
	if len(data) > 0 {
		last = data[len(data)-1].ID
	}
	httpapi.WriteJSON(w, http.StatusOK, struct {
		Object  string    `json:"object"`
		Data    []logWire `json:"data"`
		HasMore bool      `json:"has_more"`
		LastID  string    `json:"last_id,omitempty"`
	}{"list", data, more, last})
}

// logQuery reads the filters GET /logs and the analytics routes share,
// each a 400 naming the parameter when it is not well formed:
// time_of_generation_min / _max (RFC 3339), status_code (comma-separated
// status codes), ai_org_model (comma-separated provider__model pairs),
// api_key_ids, virtual_keys, configs and trace_id (comma-separated),
// metadata (a JSON object of strings, every pair of which must match),
// prompt_token_min / _max, completion_token_min / _max, total_units_min /
// _max (integers ≥ 0) and cost_min / cost_max (cents, ≥ 0, as the
// reference has them), and workspace_id for an organisation key. A
// workspace key's query is bound to its workspace ("\x00", which matches
// nothing, for a workspace key of no workspace); naming another is 403.
//
// A range whose _min is above its _max is a 400 naming the _max.
// weighted_feedback_min / _max are a 400: request logs carry no feedback,
// and the analytics routes read them before they call logQuery.
// prompt_slug, a comma-separated list of prompt slugs or ids, selects
// the records of those prompts' completions (Query.Prompts).
// Parameters of the reference the gateway has nothing for (span_id,
// workspace_slug) are accepted and ignored, except that span_id selects
// nothing when given: no record has one.
func logQuery(v url.Values, id gateway.Identity) (*Query, error) {
	q := &Query{}
	for _, name := range []string{"weighted_feedback_min", "weighted_feedback_max"} {
		if _, ok := v[name]; ok {
			return nil, control.Invalid(name, name+" is a filter of the analytics routes only: request logs carry no feedback")
		}
	}
	one := func(name string) (string, bool, error) {
		vs, ok := v[name]
		if !ok {
			return "", false, nil
		}
		if len(vs) != 1 || vs[0] == "" {
			return "", false, control.Invalid(name, name+" must be given once, not empty")
		}
		return vs[0], true, nil
	}
	list := func(name string) ([]string, error) {
		s, ok, err := one(name)
		if !ok || err != nil {
			return nil, err
		}
		var out []string
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p == "" || len(p) > 256 {
				return nil, control.Invalid(name, name+" must be a comma-separated list of non-empty values")
			}
			out = append(out, p)
		}
		return out, nil
	}
	var err error
	for _, f := range []struct {
		name string
		dst  *time.Time
	}{{"time_of_generation_min", &q.Start}, {"time_of_generation_max", &q.End}} {
		s, ok, err := one(f.name)
		if err != nil {
			return nil, err
		}
		if ok {
			if *f.dst, err = time.Parse(time.RFC3339Nano, s); err != nil {
				return nil, control.Invalid(f.name, f.name+" must be an ISO 8601 date-time with an offset, e.g. 2026-02-23T14:20:31+05:30")
			}
		}
	}
	if !q.Start.IsZero() && !q.End.IsZero() && q.End.Before(q.Start) {
		return nil, control.Invalid("time_of_generation_max", "time_of_generation_max must not be before time_of_generation_min")
	}
	codes, err := list("status_code")
	if err != nil {
		return nil, err
	}
	for _, c := range codes {
		n, err := strconv.Atoi(c)
		if err != nil || n < 100 || n > 599 {
			return nil, control.Invalid("status_code", "status_code must be comma-separated HTTP status codes (100–599), not "+control.Quote(c))
		}
		q.StatusCodes = append(q.StatusCodes, n)
	}
	models, err := list("ai_org_model")
	if err != nil {
		return nil, err
	}
	for _, m := range models {
		p, model, ok := strings.Cut(m, "__")
		if !ok || p == "" || model == "" {
			return nil, control.Invalid("ai_org_model", "ai_org_model must be comma-separated provider__model pairs, not "+control.Quote(m))
		}
		q.Models = append(q.Models, ProviderModel{p, model})
	}
	for _, f := range []struct {
		name string
		dst  *[]string
	}{{"api_key_ids", &q.APIKeyIDs}, {"virtual_keys", &q.VirtualKeys}, {"configs", &q.Configs}, {"trace_id", &q.TraceIDs}} {
		if *f.dst, err = list(f.name); err != nil {
			return nil, err
		}
	}
	if s, ok, err := one("metadata"); err != nil {
		return nil, err
	} else if ok {
		if err := json.Unmarshal([]byte(s), &q.Metadata); err != nil || q.Metadata == nil {
			return nil, control.Invalid("metadata", `metadata must be a JSON object of strings, e.g. {"team":"search"}`)
		}
	}
	for _, f := range []struct {
		name string
		dst  *Range[int64]
	}{{"prompt_token", &q.PromptTokens}, {"completion_token", &q.CompletionTokens}, {"total_units", &q.TotalTokens}} {
		for _, side := range []string{"_min", "_max"} {
			s, ok, err := one(f.name + side)
			if err != nil || !ok {
				if err != nil {
					return nil, err
				}
				continue
			}
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 {
				return nil, control.Invalid(f.name+side, f.name+side+" must be an integer ≥ 0")
			}
			if side == "_min" {
				f.dst.Min, f.dst.HasMin = n, true
			} else {
				f.dst.Max, f.dst.HasMax = n, true
			}
		}
		if f.dst.HasMin && f.dst.HasMax && f.dst.Min > f.dst.Max {
			return nil, control.Invalid(f.name+"_max", f.name+"_max must not be below "+f.name+"_min")
		}
	}
	for _, side := range []string{"cost_min", "cost_max"} {
		s, ok, err := one(side)
		if err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		cents, err := strconv.ParseFloat(s, 64)
		if err != nil || cents < 0 || math.IsInf(cents, 0) || math.IsNaN(cents) {
			return nil, control.Invalid(side, side+" must be a number of cents ≥ 0")
		}
		if side == "cost_min" {
			q.Cost.Min, q.Cost.HasMin = cents/100, true
		} else {
			q.Cost.Max, q.Cost.HasMax = cents/100, true
		}
	}
	if q.Cost.HasMin && q.Cost.HasMax && q.Cost.Min > q.Cost.Max {
		return nil, control.Invalid("cost_max", "cost_max must not be below cost_min")
	}
	if _, ok, err := one("span_id"); err != nil {
		return nil, err
	} else if ok {
		q.TraceIDs = []string{"\x00"} // no record has one
	}
	if q.Prompts, err = list("prompt_slug"); err != nil {
		return nil, err
	}
	ws, _, err := one("workspace_id")
	if err != nil {
		return nil, err
	}
	if id.Type != gateway.KeyOrganisation {
		if ws != "" && ws != id.WorkspaceID {
			return nil, control.OtherWorkspace()
		}
		ws = id.WorkspaceID
		if ws == "" {
			ws = "\x00"
		}
	}
	q.WorkspaceID = ws
	return q, nil
}

// logBodyWire is a kept body as GET /logs/{id} shows it: the JSON itself
// when it is JSON, else a string.
type logBodyWire struct {
	Body          json.RawMessage `json:"body"`
	BodyTruncated bool            `json:"body_truncated,omitempty"`
}

// wireBodies returns rec's kept bodies in their wire form, nil for one
// not kept.
func wireBodies(rec *gateway.RequestLog) (req, resp *logBodyWire) {
	wire := func(body string, cut bool) *logBodyWire {
		if body == "" && !cut {
			return nil
		}
		w := &logBodyWire{Body: json.RawMessage(body), BodyTruncated: cut}
		if !json.Valid(w.Body) {
			w.Body, _ = json.Marshal(body)
		}
		return w
	}
	return wire(rec.RequestBody, rec.RequestBodyTruncated), wire(rec.ResponseBody, rec.ResponseBodyTruncated)
}
