package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// logRecord is a request log as GET /logs answers it (the fields the
// console shows).
type logRecord struct {
	ID                 string            `json:"id"`
	CreatedAt          time.Time         `json:"created_at"`
	TraceID            string            `json:"trace_id"`
	WorkspaceID        string            `json:"workspace_id"`
	APIKeyID           string            `json:"api_key_id"`
	VirtualKey         string            `json:"virtual_key"`
	Config             string            `json:"config"`
	AIOrg              string            `json:"ai_org"`
	AIModel            string            `json:"ai_model"`
	RequestMethod      string            `json:"request_method"`
	RequestURL         string            `json:"request_url"`
	ResponseStatusCode int               `json:"response_status_code"`
	IsSuccess          bool              `json:"is_success"`
	ResponseTime       int64             `json:"response_time"`
	TimeToFirstByte    int64             `json:"time_to_first_byte"`
	ResponseTimeUS     int64             `json:"response_time_us"`
	TimeToFirstByteUS  int64             `json:"time_to_first_byte_us"`
	ReqUnits           int64             `json:"req_units"`
	ResUnits           int64             `json:"res_units"`
	TotalUnits         int64             `json:"total_units"`
	CachedUnits        int64             `json:"cached_req_units"`
	Cost               float64           `json:"cost"`
	CostUnknown        bool              `json:"cost_unknown"`
	CacheStatus        string            `json:"cache_status"`
	Retries            int               `json:"retry_count"`
	LastUsedOption     int               `json:"last_used_option_index"`
	Rescued            bool              `json:"rescued"`
	ErrorCode          string            `json:"error_code"`
	Aborted            bool              `json:"aborted"`
	BytesIn            int64             `json:"request_bytes"`
	BytesOut           int64             `json:"response_bytes"`
	Metadata           map[string]string `json:"metadata"`
	Guardrails         string            `json:"guardrails"`
	HookResults        *hookResults      `json:"hook_results"`

	// Latency is the record's latency for people, to the tenth of a
	// millisecond below 10 ms, and FirstByte its time to first byte
	// alike; setTimes sets them. They are fields, not methods, because
	// the pages' templates read fields only (see internal/htmltmpl).
	Latency, FirstByte string `json:"-"`
}

// setTimes sets the record's Latency and FirstByte from the API's times.
func (l *logRecord) setTimes() {
	l.Latency = millis(l.ResponseTimeUS, l.ResponseTime)
	l.FirstByte = millis(l.TimeToFirstByteUS, l.TimeToFirstByte)
}

// millis formats a duration the API gives in microseconds (us) and in
// whole milliseconds (ms; used when us is 0, as from a gateway that does
// not give microseconds): "0.4 ms", "3.2 ms", "1,250 ms", and "< 0.1 ms"
// for a duration under 50 µs that is not zero.
func millis(us, ms int64) string {
	if us <= 0 {
		return num(ms) + " ms"
	}
	switch {
	case us < 50:
		return "< 0.1 ms"
	case us < 10_000:
		return strconv.FormatFloat(float64(us)/1000, 'f', 1, 64) + " ms"
	}
	return num((us+500)/1000) + " ms"
}

// hookResults are the verdicts of the guardrails a request's config
// attached, as GET /logs/{id} answers them.
type hookResults struct {
	Before []hookResult `json:"before_request_hooks"`
	After  []hookResult `json:"after_request_hooks"`
}

// hookResult is one guardrail's verdict and its checks'.
type hookResult struct {
	ID      string `json:"id"`
	Verdict bool   `json:"verdict"`
	Deny    bool   `json:"deny"`
	Checks  []struct {
		ID          string `json:"id"`
		Verdict     bool   `json:"verdict"`
		Explanation string `json:"explanation"`
		Error       string `json:"error"`
	} `json:"checks"`
}

// logsFilters are the filters of the logs page and whether any is set,
// the range included.
type logsFilters struct {
	filters
	Any bool
}

// logsPage is the data of the logs page.
type logsPage struct {
	Filters logsFilters
	Ranges  any
	Logs    []logRecord
	Next    string // link to the next page; "" on the last
	First   string // link to the first page; "" on it
}

// logs shows GET /logs as a table, with the analytics filters and
// cursor paging (after).
func (c *console) logs(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	f := readFilters(q, "")
	p := &logsPage{Filters: logsFilters{filters: f, Any: f != (filters{})}, Ranges: ranges}
	d := &pageData{Title: "Logs", Nav: "logs", Data: p}
	var list struct {
		Data    []logRecord `json:"data"`
		HasMore bool        `json:"has_more"`
		LastID  string      `json:"last_id"`
	}
	aq, err := f.api(c.opts.Now())
	if err == nil {
		aq.Set("page_size", "50")
		if after := strings.TrimSpace(q.Get("after")); after != "" {
			aq.Set("after", after)
			p.First = link(c.base+"/logs", f.pairs()...)
		}
		err = c.call(r, s.key, http.MethodGet, "/logs", aq, nil, &list)
	}
	if err != nil {
		if c.apiFailed(w, r, s, err) {
			return
		}
		d.Error = err.Error()
		c.render(w, r, statusFor(err), "logs", s, d)
		return
	}
	for i := range list.Data {
		list.Data[i].setTimes()
	}
	p.Logs = list.Data
	if list.HasMore && list.LastID != "" {
		p.Next = link(c.base+"/logs", append(f.pairs(), "after", list.LastID)...)
	}
	c.render(w, r, http.StatusOK, "logs", s, d)
}

// logDetail shows one record of GET /logs/{id}.
func (c *console) logDetail(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	var rec logRecord
	d := &pageData{Title: "Log " + id, Nav: "logs"}
	if err := c.call(r, s.key, http.MethodGet, "/logs/"+escape(id), url.Values{}, nil, &rec); err != nil {
		if c.apiFailed(w, r, s, err) {
			return
		}
		d.Error = err.Error()
		c.render(w, r, statusFor(err), "log", s, d)
		return
	}
	rec.setTimes()
	d.Data = &rec
	c.render(w, r, http.StatusOK, "log", s, d)
}

// statusFor is the status of a page that shows a failed API call: the
// API's own for a refusal (400, 403, 404), 502 for anything else.
func statusFor(err error) int {
	switch st := statusOf(err); st {
	case http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound, http.StatusConflict:
		return st
	}
	return http.StatusBadGateway
}
