package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHandle: a product's control route runs behind the trace, key and
// header stages (it sees the caller's identity, a missing key is a 401
// before it), is never rate-limited nor request-logged, and its pattern
// is relative to the prefix, with or without a method.
func TestHandle(t *testing.T) {
	sink := &recordingSink{}
	e := newCoreEnv(t, nil, func(o *Options) {
		o.LogSinks = []LogSink{sink}
		o.Prefix = "/gw"
		o.Policies = policyStoreOf(RateLimitsPolicy{ID: "p1", Conditions: []PolicyCondition{{Key: "workspace_id", Value: "ws-1"}},
			GroupBy: []PolicyGroupBy{{Key: "api_key"}}, Type: PolicyRequests, Unit: PolicyPerMinute, Value: 1, Status: PolicyActive, WorkspaceID: "ws-1"})
	})
	e.gw.Handle("GET /widgets/{id}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := IdentityFrom(r.Context())
		trace, _ := TraceIDFrom(r.Context())
		if !ok || trace == "" {
			t.Errorf("control route: identity %v %v, trace %q", id, ok, trace)
		}
		io.WriteString(w, r.PathValue("id")+" for "+id.KeyID)
	}))
	for i := range 3 { // the policy allows 1 a minute: control routes are not limited
		res := e.do("GET", "/gw/widgets/w1", nil, "x-gateway-api-key: "+coreKey)
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 || string(b) != "w1 for key-member" || res.Header.Get(HeaderTraceID) == "" {
			t.Fatalf("GET %d: %d %q, trace %q", i, res.StatusCode, b, res.Header.Get(HeaderTraceID))
		}
	}
	if res := e.do("GET", "/gw/widgets/w1", nil); res.StatusCode != 401 {
		t.Errorf("without a key: %d, want 401", res.StatusCode)
	}
	e.gw.Close()
	if n := len(sink.records()); n != 0 {
		t.Errorf("the control route left %d request logs, want none", n)
	}
	for _, bad := range []string{"widgets", "GET widgets"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Handle(%q) did not panic", bad)
				}
			}()
			e.gw.Handle(bad, http.NotFoundHandler())
		}()
	}
}

// policyStoreOf is a PolicyStore holding ps.
func policyStoreOf(ps ...RateLimitsPolicy) PolicyStore {
	s := &testStore{}
	for _, p := range ps {
		if err := s.PutPolicy(context.Background(), &p); err != nil {
			panic(err)
		}
	}
	return s
}

// recordingSink keeps what it is given, and how (one by one or batched).
type recordingSink struct {
	mu      sync.Mutex
	recs    []*RequestLog
	batches int
}

func (s *recordingSink) Log(rec *RequestLog) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs, rec)
}

func (s *recordingSink) records() []*RequestLog {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*RequestLog(nil), s.recs...)
}

type batchingSink struct {
	recordingSink
	fail error // what LogBatch returns
}

func (s *batchingSink) LogBatch(recs []*RequestLog) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches++
	s.recs = append(s.recs, recs...)
	return s.fail
}

// TestBatchLogSinkFailureCounted: the records of a batch a BatchLogSink
// fails to keep are counted by DroppedLogs, and the failure is logged
// once, not once per batch.
func TestBatchLogSinkFailureCounted(t *testing.T) {
	up := newCoreUpstream(t, nil)
	var logged bytes.Buffer
	b := &batchingSink{fail: errors.New("store down")}
	e := newCoreEnv(t, up, func(o *Options) {
		o.LogSinks = []LogSink{b}
		o.ErrorLog = slog.New(slog.NewTextHandler(&logged, nil))
	})
	for range 3 {
		e.do("POST", "/v1/chat/completions", strings.NewReader(`{"model":"m"}`), "x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-up")
	}
	e.gw.Close()
	if got, want := e.gw.DroppedLogs(), int64(len(b.records())); got != want || want != 3 {
		t.Errorf("DroppedLogs = %d, want the %d records the sink failed to keep (3)", got, want)
	}
	if n := strings.Count(logged.String(), "failed to keep request logs"); n != 1 {
		t.Errorf("the failure was logged %d times, want once: %s", n, logged.String())
	}
}

// TestLogSinks: every sink of Options.LogSinks gets each data-plane
// request's record, a copy of its own, from its own queue (batched for a
// BatchLogSink); control-plane requests and failed authentications are
// not theirs; LogSink still gets every line.
func TestLogSinks(t *testing.T) {
	up := newCoreUpstream(t, nil)
	a, b := &recordingSink{}, &batchingSink{}
	e := newCoreEnv(t, up, func(o *Options) { o.LogSinks = []LogSink{a, b} })
	e.gw.Handle("GET /control-probe", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, map[string]string{}) }))
	for range 3 {
		e.do("POST", "/v1/chat/completions", strings.NewReader(`{"model":"m"}`), "x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-up")
	}
	e.do("GET", "/v1/control-probe", nil, "x-gateway-api-key: "+coreAdminKey) // control plane
	e.do("POST", "/v1/chat/completions", nil, "x-gateway-api-key: gw-wrong")  // unauthenticated
	e.gw.Close()
	ra, rb := a.records(), b.records()
	if len(ra) != 3 || len(rb) != 3 {
		t.Fatalf("sinks got %d and %d records, want 3 each", len(ra), len(rb))
	}
	for i := range ra {
		if ra[i] == rb[i] || ra[i].TraceID != rb[i].TraceID || ra[i].Path != "/v1/chat/completions" || ra[i].Status != 200 {
			t.Errorf("record %d: %p %+v and %p %+v, want equal copies of the completion's", i, ra[i], *ra[i], rb[i], *rb[i])
		}
	}
	if b.batches == 0 {
		t.Error("the BatchLogSink was never given a batch")
	}
	if n := len(e.logs.Query(LogFilter{})); n != 4 {
		t.Errorf("LogSink got %d lines, want 4 (3 completions and the control-plane read)", n)
	}
}

// countingAdmission refuses once it admitted max requests, and keeps the
// final records it was settled with.
type countingAdmission struct {
	mu       sync.Mutex
	max      int
	admitted int
	refuse   error
	settled  []RequestLog
}

func (a *countingAdmission) Admit(r *http.Request) (func(*RequestLog), error) {
	if _, ok := IdentityFrom(r.Context()); !ok {
		return nil, errors.New("no identity")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.admitted >= a.max {
		return nil, a.refuse
	}
	a.admitted++
	return func(rec *RequestLog) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.settled = append(a.settled, *rec)
	}, nil
}

func (a *countingAdmission) records() []RequestLog {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]RequestLog(nil), a.settled...)
}

// TestAdmissions: an Admission refuses with its own *Error, a failure of
// its own is a 500, and every admitted request is settled once with its
// final record (tokens and status as the answer had them), including one
// that a later admission refused.
func TestAdmissions(t *testing.T) {
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","model":"m","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":5,"total_tokens":12}}`)
	})
	first := &countingAdmission{max: 3, refuse: &Error{Status: 412, Type: "usage_limit_exceeded", Code: "budget_exhausted", Message: "spent"}}
	second := &countingAdmission{max: 2, refuse: errors.New("counter store down")}
	e := newCoreEnv(t, up, func(o *Options) { o.Admissions = []Admission{first, second}; o.LogSink = nil })
	send := func() *http.Response {
		return e.do("POST", "/v1/chat/completions", strings.NewReader(`{"model":"m"}`), "x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-up")
	}
	for i, want := range []int{200, 200, 500, 412} {
		res := send()
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != want {
			t.Fatalf("request %d: %d, want %d", i, res.StatusCode, want)
		}
	}
	if n := len(up.received()); n != 2 {
		t.Errorf("the provider got %d requests, want 2", n)
	}
	// Settling follows the answer: wait for the handlers to return.
	deadline := time.Now().Add(10 * time.Second)
	for len(first.records()) < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	fr, sr := first.records(), second.records()
	if len(fr) != 3 || len(sr) != 2 {
		t.Fatalf("settled %d and %d, want 3 (two answers and the refusal by the second) and 2", len(fr), len(sr))
	}
	for i, rec := range sr {
		if rec.Status != 200 || rec.TotalTokens != 12 || rec.PromptTokens != 7 || rec.Model != "m" || rec.KeyID != "key-member" {
			t.Errorf("settle %d: %+v, want the answer's status and tokens", i, rec)
		}
	}
	if fr[2].Status != 500 || fr[2].TotalTokens != 0 {
		t.Errorf("the first admission was settled with %+v, want the second's refusal", fr[2])
	}
}

// bodyAdmission records the body and key an Admission reads through
// RequestBody and APIKeyFrom.
type bodyAdmission struct {
	mu     sync.Mutex
	bodies []string
	keys   []string
}

func (a *bodyAdmission) Admit(r *http.Request) (func(*RequestLog), error) {
	body, err := RequestBody(r, 1<<20)
	if err != nil {
		return nil, err
	}
	k, _ := APIKeyFrom(r.Context())
	a.mu.Lock()
	defer a.mu.Unlock()
	a.bodies = append(a.bodies, string(body))
	if k != nil {
		a.keys = append(a.keys, k.ID)
	}
	return nil, nil
}

// TestAdmissionRequestBody: an Admission reads the request's body
// (RequestBody) and its API key record (APIKeyFrom), whether the endpoint
// read the body (the legacy completions) or it streams (chat completions,
// a pass-through route),
// and the provider still gets the body whole.
func TestAdmissionRequestBody(t *testing.T) {
	up := newCoreUpstream(t, nil)
	a := &bodyAdmission{}
	e := newCoreEnv(t, up, func(o *Options) { o.Admissions = []Admission{a} })
	const chat, embed = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, `{"model":"e","input":"hello"}`
	const legacy = `{"model":"m","prompt":"hi"}`
	for _, c := range []struct{ path, body string }{{"/v1/chat/completions", chat}, {"/v1/embeddings", embed}, {"/v1/completions", legacy}} {
		res := e.do("POST", c.path, strings.NewReader(c.body), "x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-up",
			"Content-Type: application/json")
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("%s: %d", c.path, res.StatusCode)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.bodies) != 3 || a.bodies[0] != chat || a.bodies[1] != embed || a.bodies[2] != legacy {
		t.Errorf("the admission read %q, want the three bodies", a.bodies)
	}
	if len(a.keys) != 3 || a.keys[0] != "key-member" {
		t.Errorf("the admission found keys %q, want key-member thrice", a.keys)
	}
	got := up.received()
	if len(got) != 3 || got[0].Body != chat || got[1].Body != embed || got[2].Body != legacy {
		t.Errorf("the provider got %+v, want the bodies whole", got)
	}
}

// TestServeDataPlane: a control route serves a data-plane request of its
// caller in process: with the caller's identity and trace id and the
// options it passes, through the rate limits to the provider, logged as
// a request of its own (the control route itself is not).
func TestServeDataPlane(t *testing.T) {
	sink := &recordingSink{}
	up := newCoreUpstream(t, nil)
	e := newCoreEnv(t, up, func(o *Options) {
		o.LogSinks = []LogSink{sink}
		o.Policies = policyStoreOf(RateLimitsPolicy{ID: "p1", Conditions: []PolicyCondition{{Key: "workspace_id", Value: "ws-1"}},
			GroupBy: []PolicyGroupBy{{Key: "api_key"}}, Type: PolicyRequests, Unit: PolicyPerMinute, Value: 1, Status: PolicyActive, WorkspaceID: "ws-1"})
	})
	e.gw.Handle("POST /run", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		opts, _ := RequestOptionsFrom(r.Context())
		opts.VirtualKey = "vk-up"
		opts.Metadata = map[string]string{"run": "1", "team": opts.Metadata["team"]}
		in := r.Clone(r.Context())
		in.URL.Path = "/v1/chat/completions"
		in.Body = io.NopCloser(strings.NewReader(`{"model":"m","messages":[]}`))
		in.ContentLength = -1
		e.gw.ServeDataPlane(w, in, opts)
	}))
	res := e.do("POST", "/v1/run", nil, "x-gateway-api-key: "+coreKey, "x-gateway-trace-id: t-run", `x-gateway-metadata: {"team":"a"}`)
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || string(b) != `{"ok":true}` {
		t.Fatalf("run: %d %s", res.StatusCode, b)
	}
	got := up.received()
	if len(got) != 1 || got[0].Path != "/v1/chat/completions" || got[0].Body != `{"model":"m","messages":[]}` ||
		got[0].Header.Get("Authorization") != "Bearer sk-stored-secret" {
		t.Fatalf("the provider got %+v", got)
	}
	// The caller's rate limit counts the request it served.
	if res := e.do("POST", "/v1/run", nil, "x-gateway-api-key: "+coreKey); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("second run: %d, want 429", res.StatusCode)
	}
	e.gw.Close()
	recs := sink.records()
	if len(recs) != 2 {
		t.Fatalf("%d request logs, want the two served requests'", len(recs))
	}
	if r := recs[0]; r.Path != "/v1/chat/completions" || r.KeyID != "key-member" || r.WorkspaceID != "ws-1" || r.TraceID != "t-run" ||
		r.VirtualKey != "vk-up" || r.Status != 200 || r.Metadata["run"] != "1" || r.Metadata["team"] != "a" {
		t.Fatalf("request log %+v", r)
	}
}
