package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// step is one scripted answer of a fakeUp. The zero step answers 200 with
// {"from":"<name>"}.
type step struct {
	status int
	header map[string]string
	body   string
	hang   bool // wait until the gateway gives up on the request
	abort  bool // drop the connection before any answer
	cut    bool // send the status, headers and body, then drop the connection
}

// fakeUp is a loopback provider that answers from a script, then with 200.
type fakeUp struct {
	*httptest.Server
	name   string
	mu     sync.Mutex
	script []step
	bodies []string
	calls  atomic.Int32
}

func newFakeUp(t *testing.T, name string, script ...step) *fakeUp {
	t.Helper()
	u := &fakeUp{name: name, script: script}
	u.Server = httptest.NewServer(u)
	t.Cleanup(u.Close)
	return u
}

func (u *fakeUp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.calls.Add(1)
	b, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.bodies = append(u.bodies, string(b))
	var s step
	if len(u.script) > 0 {
		s, u.script = u.script[0], u.script[1:]
	}
	u.mu.Unlock()
	switch {
	case s.hang:
		<-r.Context().Done()
		return
	case s.abort:
		panic(http.ErrAbortHandler)
	}
	for k, v := range s.header {
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	if s.status == 0 {
		s.status = http.StatusOK
	}
	if s.body == "" {
		s.body = `{"from":"` + u.name + `"}`
	}
	w.WriteHeader(s.status)
	io.WriteString(w, s.body)
	if s.cut {
		http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	}
}

func (u *fakeUp) received() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.bodies...)
}

// routeEnv is a gateway over real HTTP whose store holds a virtual key per
// fake upstream, named after it.
func routeEnv(t *testing.T, mod func(*Options), ups ...*fakeUp) *coreEnv {
	t.Helper()
	e := newCoreEnv(t, nil, func(o *Options) {
		o.RetryBaseDelay = time.Millisecond
		if mod != nil {
			mod(o)
		}
	})
	for _, u := range ups {
		e.store.AddVirtualKey(VirtualKey{Slug: u.name, Provider: "openai", APIKey: "sk-" + u.name, BaseURL: u.URL + "/v1", WorkspaceID: "ws-1"})
	}
	return e
}

// post sends a chat completion with cfg as x-gateway-config.
func (e *coreEnv) post(cfg, body string, headers ...string) *http.Response {
	e.t.Helper()
	h := append([]string{"x-gateway-api-key: " + coreKey, "content-type: application/json"}, headers...)
	if cfg != "" {
		h = append(h, "x-gateway-config: "+compactJSON(e.t, cfg))
	}
	return e.do("POST", "/v1/chat/completions", strings.NewReader(body), h...)
}

// compactJSON puts a config written over several lines on one header line.
func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("config %s: %v", s, err)
	}
	return b.String()
}

// answer is what a caller sees of a response.
type answer struct {
	Status   int
	Body     string
	Provider string
	Index    string
	Retries  string
	Cache    string
}

func readAnswer(t *testing.T, res *http.Response) answer {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	return answer{Status: res.StatusCode, Body: string(b), Provider: res.Header.Get(HeaderProvider),
		Index: res.Header.Get(HeaderLastUsedOptionIndex), Retries: res.Header.Get(HeaderRetryAttemptCount),
		Cache: res.Header.Get(HeaderCacheStatus)}
}

func callCounts(ups ...*fakeUp) map[string]int {
	m := make(map[string]int, len(ups))
	for _, u := range ups {
		m[u.name] = int(u.calls.Load())
	}
	return m
}

func TestFallback(t *testing.T) {
	tests := []struct {
		name      string
		cfg       string
		a, b, c   []step
		cutOffA   bool // a cannot be reached: see coreEnv.cutOff
		want      answer
		wantCalls map[string]int
	}{
		{
			name:      "any non-2xx moves on without on_status_codes",
			cfg:       `{"strategy":{"mode":"fallback"},"targets":[{"virtual_key":"a"},{"virtual_key":"b"}]}`,
			a:         []step{{status: 500, body: `{"error":"a"}`}},
			want:      answer{Status: 200, Body: `{"from":"b"}`, Provider: "openai", Index: "config.targets[1]", Retries: "0", Cache: "DISABLED"},
			wantCalls: map[string]int{"a": 1, "b": 1, "c": 0},
		},
		{
			name:      "a status outside on_status_codes is the answer",
			cfg:       `{"strategy":{"mode":"fallback","on_status_codes":[429]},"targets":[{"virtual_key":"a"},{"virtual_key":"b"}]}`,
			a:         []step{{status: 500, body: `{"error":"a"}`}},
			want:      answer{Status: 500, Body: `{"error":"a"}`, Provider: "openai", Index: "config.targets[0]", Retries: "0", Cache: "DISABLED"},
			wantCalls: map[string]int{"a": 1, "b": 0, "c": 0},
		},
		{
			name:      "a status in on_status_codes moves on",
			cfg:       `{"strategy":{"mode":"fallback","on_status_codes":[429]},"targets":[{"virtual_key":"a"},{"virtual_key":"b"}]}`,
			a:         []step{{status: 429}},
			want:      answer{Status: 200, Body: `{"from":"b"}`, Provider: "openai", Index: "config.targets[1]", Retries: "0", Cache: "DISABLED"},
			wantCalls: map[string]int{"a": 1, "b": 1, "c": 0},
		},
		{
			name:      "an unreachable target moves on",
			cfg:       `{"strategy":{"mode":"fallback","on_status_codes":[429]},"targets":[{"virtual_key":"a"},{"virtual_key":"b"}]}`,
			cutOffA:   true,
			want:      answer{Status: 200, Body: `{"from":"b"}`, Provider: "openai", Index: "config.targets[1]", Retries: "0", Cache: "DISABLED"},
			wantCalls: map[string]int{"a": 0, "b": 1, "c": 0},
		},
		{
			name:      "the last provider answer is returned as sent when all fail",
			cfg:       `{"strategy":{"mode":"fallback"},"targets":[{"virtual_key":"a"},{"virtual_key":"b"}]}`,
			a:         []step{{status: 500, body: `{"error":"a"}`}},
			b:         []step{{status: 503, body: `{"error":"b"}`, header: map[string]string{"X-Upstream": "b"}}},
			want:      answer{Status: 503, Body: `{"error":"b"}`, Provider: "openai", Index: "config.targets[1]", Retries: "0", Cache: "DISABLED"},
			wantCalls: map[string]int{"a": 1, "b": 1, "c": 0},
		},
		{
			name:      "an earlier provider answer beats a later transport failure",
			cfg:       `{"strategy":{"mode":"fallback"},"targets":[{"virtual_key":"a"},{"virtual_key":"b"}]}`,
			a:         []step{{status: 500, body: `{"error":"a"}`}},
			b:         []step{{abort: true}},
			want:      answer{Status: 500, Body: `{"error":"a"}`, Provider: "openai", Index: "config.targets[0]", Retries: "0", Cache: "DISABLED"},
			wantCalls: map[string]int{"a": 1, "b": 1, "c": 0},
		},
		{
			name: "nested targets are tried depth first, in order",
			cfg: `{"strategy":{"mode":"fallback"},"targets":[
				{"strategy":{"mode":"fallback"},"targets":[{"virtual_key":"a"},{"virtual_key":"b"}]},
				{"virtual_key":"c"}]}`,
			a:         []step{{status: 502}},
			b:         []step{{status: 502}},
			want:      answer{Status: 200, Body: `{"from":"c"}`, Provider: "openai", Index: "config.targets[1]", Retries: "0", Cache: "DISABLED"},
			wantCalls: map[string]int{"a": 1, "b": 1, "c": 1},
		},
		{
			name:      "a 2xx answer stops the fallback",
			cfg:       `{"strategy":{"mode":"fallback"},"targets":[{"virtual_key":"a"},{"virtual_key":"b"}]}`,
			a:         []step{{status: 201, body: `{"created":true}`}},
			want:      answer{Status: 201, Body: `{"created":true}`, Provider: "openai", Index: "config.targets[0]", Retries: "0", Cache: "DISABLED"},
			wantCalls: map[string]int{"a": 1, "b": 0, "c": 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b, c := newFakeUp(t, "a", tt.a...), newFakeUp(t, "b", tt.b...), newFakeUp(t, "c", tt.c...)
			e := routeEnv(t, nil, a, b, c)
			if tt.cutOffA {
				e.cutOff(a)
			}
			got := readAnswer(t, e.post(tt.cfg, `{"model":"m"}`))
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("answer (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantCalls, callCounts(a, b, c)); d != "" {
				t.Errorf("upstream calls (-want +got):\n%s", d)
			}
		})
	}
}

// TestFallbackAllUnreachable checks the 502 when no provider answered.
func TestFallbackAllUnreachable(t *testing.T) {
	a, b := newFakeUp(t, "a"), newFakeUp(t, "b")
	e := routeEnv(t, nil, a, b)
	e.cutOff(a)
	e.cutOff(b)
	res := e.post(`{"strategy":{"mode":"fallback"},"targets":[{"virtual_key":"a"},{"virtual_key":"b"}]}`, `{}`)
	if res.StatusCode != http.StatusBadGateway {
		t.Fatalf("status = %d, want 502", res.StatusCode)
	}
	if got := deref(decodeError(t, res).Error.Code); got != CodeUpstreamUnreachable {
		t.Errorf("code = %q, want %q", got, CodeUpstreamUnreachable)
	}
}

// seeded returns a Rand for Options that is safe for concurrent use.
func seeded(seed uint64) func() float64 {
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return r.Float64()
	}
}

func TestLoadbalance(t *testing.T) {
	a, b, c := newFakeUp(t, "a"), newFakeUp(t, "b"), newFakeUp(t, "c")
	e := routeEnv(t, func(o *Options) { o.Rand = seeded(42) }, a, b, c)
	cfg := `{"strategy":{"mode":"loadbalance"},"targets":[
		{"virtual_key":"a","weight":3},{"virtual_key":"b","weight":1},{"virtual_key":"c","weight":0}]}`
	const draws = 4000
	for range draws {
		res := e.post(cfg, `{}`)
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("status %d", res.StatusCode)
		}
	}
	n := callCounts(a, b, c)
	if n["c"] != 0 {
		t.Errorf("the target of weight 0 was chosen %d times", n["c"])
	}
	// 3:1 is p = 0.75 for a; 5 standard deviations of 4000 draws is ±137.
	if n["a"]+n["b"] != draws || n["a"] < 3000-137 || n["a"] > 3000+137 {
		t.Errorf("draws a=%d b=%d, want about 3000:1000", n["a"], n["b"])
	}
}

func TestLoadbalanceAllWeightsZeroRefused(t *testing.T) {
	a := newFakeUp(t, "a")
	e := routeEnv(t, nil, a)
	res := e.post(`{"strategy":{"mode":"loadbalance"},"targets":[{"virtual_key":"a","weight":0}]}`, `{}`)
	eb := decodeError(t, res)
	if res.StatusCode != 400 || deref(eb.Error.Code) != CodeInvalidConfig || eb.Error.Message != "invalid config: targets: weights must not all be 0" {
		t.Errorf("got %d %+v", res.StatusCode, eb.Error)
	}
	if a.calls.Load() != 0 {
		t.Error("the provider was called")
	}
}

func TestConditional(t *testing.T) {
	const tmpl = `{"strategy":{"mode":"conditional","conditions":[{"query":%s,"then":"big"}],"default":"small"},
		"targets":[{"name":"big","virtual_key":"a"},{"name":"small","virtual_key":"b"}]}`
	tests := []struct {
		name     string
		query    string
		metadata string
		body     string
		want     string // the upstream that answers
	}{
		{"metadata $eq matches", `{"metadata._user":{"$eq":"vip"}}`, `{"_user":"vip"}`, `{}`, "a"},
		{"metadata $eq differs", `{"metadata._user":{"$eq":"vip"}}`, `{"_user":"joe"}`, `{}`, "b"},
		{"a bare value is equality", `{"metadata.tier":"gold"}`, `{"tier":"gold"}`, `{}`, "a"},
		{"missing metadata is not equal", `{"metadata._user":{"$eq":"vip"}}`, ``, `{}`, "b"},
		{"$ne matches missing metadata", `{"metadata._user":{"$ne":"vip"}}`, ``, `{}`, "a"},
		{"$ne refuses the value", `{"metadata._user":{"$ne":"vip"}}`, `{"_user":"vip"}`, `{}`, "b"},
		{"params $eq on the model", `{"params.model":{"$eq":"gpt-4o"}}`, ``, `{"model":"gpt-4o"}`, "a"},
		{"params $in", `{"params.model":{"$in":["x","gpt-4o"]}}`, ``, `{"model":"gpt-4o"}`, "a"},
		{"params $nin", `{"params.model":{"$nin":["x","gpt-4o"]}}`, ``, `{"model":"gpt-4o"}`, "b"},
		{"params $gt numbers", `{"params.max_tokens":{"$gt":1000}}`, ``, `{"max_tokens":4096}`, "a"},
		{"params $gte equal", `{"params.max_tokens":{"$gte":4096}}`, ``, `{"max_tokens":4096}`, "a"},
		{"params $lt", `{"params.max_tokens":{"$lt":100}}`, ``, `{"max_tokens":4096}`, "b"},
		{"params $lte", `{"params.temperature":{"$lte":0.5}}`, ``, `{"temperature":0.2}`, "a"},
		{"numeric metadata compares as a number", `{"metadata.score":{"$gt":9}}`, `{"score":"10"}`, `{}`, "a"},
		{"strings compare lexically", `{"metadata.day":{"$lt":"2025-01-01"}}`, `{"day":"2024-12-31"}`, `{}`, "a"},
		{"a string never orders against a number", `{"params.model":{"$gt":3}}`, ``, `{"model":"gpt"}`, "b"},
		{"$regex", `{"metadata._user":{"$regex":"^vip-[0-9]+$"}}`, `{"_user":"vip-42"}`, `{}`, "a"},
		{"$regex refuses", `{"metadata._user":{"$regex":"^vip-[0-9]+$"}}`, `{"_user":"vip-x"}`, `{}`, "b"},
		{"$and needs both", `{"$and":[{"metadata.a":"1"},{"params.stream":true}]}`, `{"a":"1"}`, `{"stream":false}`, "b"},
		{"$and with both", `{"$and":[{"metadata.a":"1"},{"params.stream":true}]}`, `{"a":"1"}`, `{"stream":true}`, "a"},
		{"$or with one", `{"$or":[{"metadata.a":"1"},{"params.stream":true}]}`, `{"a":"2"}`, `{"stream":true}`, "a"},
		{"operators on one field all hold", `{"params.n":{"$gte":2,"$lt":5}}`, ``, `{"n":5}`, "b"},
		{"a body that is not JSON has no params", `{"params.model":"m"}`, ``, `not json`, "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := newFakeUp(t, "a"), newFakeUp(t, "b")
			e := routeEnv(t, nil, a, b)
			var h []string
			if tt.metadata != "" {
				h = append(h, "x-gateway-metadata: "+tt.metadata)
			}
			got := readAnswer(t, e.post(strings.Replace(tmpl, "%s", tt.query, 1), tt.body, h...))
			if got.Body != `{"from":"`+tt.want+`"}` {
				t.Errorf("answered by %s, want %s", got.Body, tt.want)
			}
			if ups := a.received(); tt.want == "a" && (len(ups) != 1 || ups[0] != tt.body) {
				t.Errorf("upstream got %q, want the body %q as sent", ups, tt.body)
			}
		})
	}
}

func TestConditionalNoMatchNoDefault(t *testing.T) {
	a := newFakeUp(t, "a")
	e := routeEnv(t, nil, a)
	res := e.post(`{"strategy":{"mode":"conditional","conditions":[{"query":{"metadata.x":"1"},"then":"t"}]},
		"targets":[{"name":"t","virtual_key":"a"}]}`, `{}`)
	eb := decodeError(t, res)
	if res.StatusCode != 400 || eb.Error.Type != TypeInvalidRequest {
		t.Errorf("got %d %+v, want 400 invalid_request_error", res.StatusCode, eb.Error)
	}
	if a.calls.Load() != 0 {
		t.Error("the provider was called")
	}
}

func TestRetries(t *testing.T) {
	tests := []struct {
		name      string
		cfg       string
		a, b      []step
		want      answer
		wantCalls map[string]int
	}{
		{
			name:      "retried until an answer",
			cfg:       `{"virtual_key":"a","retry":{"attempts":3}}`,
			a:         []step{{status: 503}, {status: 429}},
			want:      answer{Status: 200, Body: `{"from":"a"}`, Provider: "openai", Index: "config", Retries: "2", Cache: "DISABLED"},
			wantCalls: map[string]int{"a": 3, "b": 0},
		},
		{
			name:      "attempts are retries after the first try",
			cfg:       `{"virtual_key":"a","retry":{"attempts":2}}`,
			a:         []step{{status: 503}, {status: 502}, {status: 500, body: `{"error":"third"}`}, {}},
			want:      answer{Status: 500, Body: `{"error":"third"}`, Provider: "openai", Index: "config", Retries: "2", Cache: "DISABLED"},
			wantCalls: map[string]int{"a": 3, "b": 0},
		},
		{
			name:      "statuses outside the default list are not retried",
			cfg:       `{"virtual_key":"a","retry":{"attempts":3}}`,
			a:         []step{{status: 400, body: `{"error":"bad"}`}},
			want:      answer{Status: 400, Body: `{"error":"bad"}`, Provider: "openai", Index: "config", Retries: "0", Cache: "DISABLED"},
			wantCalls: map[string]int{"a": 1, "b": 0},
		},
		{
			name:      "on_status_codes replaces the default list",
			cfg:       `{"virtual_key":"a","retry":{"attempts":3,"on_status_codes":[409]}}`,
			a:         []step{{status: 409}, {status: 503, body: `{"error":"busy"}`}},
			want:      answer{Status: 503, Body: `{"error":"busy"}`, Provider: "openai", Index: "config", Retries: "1", Cache: "DISABLED"},
			wantCalls: map[string]int{"a": 2, "b": 0},
		},
		{
			name:      "transport errors are retried",
			cfg:       `{"virtual_key":"a","retry":{"attempts":1}}`,
			a:         []step{{abort: true}},
			want:      answer{Status: 200, Body: `{"from":"a"}`, Provider: "openai", Index: "config", Retries: "1", Cache: "DISABLED"},
			wantCalls: map[string]int{"a": 2, "b": 0},
		},
		{
			name:      "an earlier answer beats a later transport failure",
			cfg:       `{"virtual_key":"a","retry":{"attempts":1}}`,
			a:         []step{{status: 503, body: `{"error":"busy"}`}, {abort: true}},
			want:      answer{Status: 503, Body: `{"error":"busy"}`, Provider: "openai", Index: "config", Retries: "1", Cache: "DISABLED"},
			wantCalls: map[string]int{"a": 2, "b": 0},
		},
		{
			name:      "no retries without a retry config",
			cfg:       `{"virtual_key":"a"}`,
			a:         []step{{status: 503, body: `{"error":"once"}`}},
			want:      answer{Status: 503, Body: `{"error":"once"}`, Provider: "openai", Index: "config", Retries: "0", Cache: "DISABLED"},
			wantCalls: map[string]int{"a": 1, "b": 0},
		},
		{
			name:      "a target's retries come before the fallback",
			cfg:       `{"strategy":{"mode":"fallback"},"retry":{"attempts":1},"targets":[{"virtual_key":"a"},{"virtual_key":"b"}]}`,
			a:         []step{{status: 503}, {status: 503}},
			want:      answer{Status: 200, Body: `{"from":"b"}`, Provider: "openai", Index: "config.targets[1]", Retries: "1", Cache: "DISABLED"},
			wantCalls: map[string]int{"a": 2, "b": 1},
		},
		{
			name:      "a child's retry replaces the inherited one",
			cfg:       `{"strategy":{"mode":"fallback"},"retry":{"attempts":4},"targets":[{"virtual_key":"a","retry":{"attempts":0}},{"virtual_key":"b"}]}`,
			a:         []step{{status: 503}},
			b:         []step{{status: 503}},
			want:      answer{Status: 200, Body: `{"from":"b"}`, Provider: "openai", Index: "config.targets[1]", Retries: "1", Cache: "DISABLED"},
			wantCalls: map[string]int{"a": 1, "b": 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := newFakeUp(t, "a", tt.a...), newFakeUp(t, "b", tt.b...)
			e := routeEnv(t, nil, a, b)
			got := readAnswer(t, e.post(tt.cfg, `{"model":"m"}`))
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("answer (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantCalls, callCounts(a, b)); d != "" {
				t.Errorf("upstream calls (-want +got):\n%s", d)
			}
			for i, body := range append(a.received(), b.received()...) {
				if body != `{"model":"m"}` {
					t.Errorf("call %d carried body %q, want the caller's", i, body)
				}
			}
			e.gw.Close()
			recs := e.logs.Query(LogFilter{})
			if len(recs) != 1 || strconv.Itoa(recs[0].Attempts) != tt.want.Retries {
				t.Errorf("logged %+v, want one record with Attempts %s", recs, tt.want.Retries)
			}
		})
	}
}

// TestNoRetryAfterFirstByte: once the provider's answer started reaching
// the caller, nothing is retried or fallen back, and a broken answer aborts
// the caller's connection.
func TestNoRetryAfterFirstByte(t *testing.T) {
	a := newFakeUp(t, "a", step{status: 200, header: map[string]string{"Content-Type": "text/event-stream"}, body: "data: {\"n\":1}\n\n", cut: true})
	b := newFakeUp(t, "b")
	e := routeEnv(t, nil, a, b)
	res := e.post(`{"strategy":{"mode":"fallback"},"retry":{"attempts":3},"targets":[{"virtual_key":"a"},{"virtual_key":"b"}]}`, `{"stream":true}`)
	body, err := io.ReadAll(res.Body)
	if res.StatusCode != 200 || err == nil {
		t.Errorf("status %d, read error %v: want 200 and a broken body", res.StatusCode, err)
	}
	if string(body) != "data: {\"n\":1}\n\n" {
		t.Errorf("body %q, want the event sent before the break", body)
	}
	if d := cmp.Diff(map[string]int{"a": 1, "b": 0}, callCounts(a, b)); d != "" {
		t.Errorf("upstream calls (-want +got):\n%s", d)
	}
}

func TestTimeout(t *testing.T) {
	tests := []struct {
		name    string
		cfg     string
		headers []string
		a       []step
		want    answer
		calls   int
	}{
		{
			name:    "the header bounds the attempt",
			cfg:     `{"virtual_key":"a"}`,
			headers: []string{"x-gateway-request-timeout: 20"},
			a:       []step{{hang: true}},
			want:    answer{Status: 408, Body: `{"error":{"message":"Request exceeded the timeout sent in the request: 20ms","type":"timeout_error","param":null,"code":"timeout"}}` + "\n", Retries: "0"},
			calls:   1,
		},
		{
			name:  "the config bounds the attempt, each retry too",
			cfg:   `{"virtual_key":"a","request_timeout":15,"retry":{"attempts":1}}`,
			a:     []step{{hang: true}, {hang: true}},
			want:  answer{Status: 408, Body: `{"error":{"message":"Request exceeded the timeout sent in the request: 15ms","type":"timeout_error","param":null,"code":"timeout"}}` + "\n", Retries: "1"},
			calls: 2,
		},
		{
			name:    "the header wins over the config",
			cfg:     `{"virtual_key":"a","request_timeout":600000}`,
			headers: []string{"x-gateway-request-timeout: 25"},
			a:       []step{{hang: true}},
			want:    answer{Status: 408, Body: `{"error":{"message":"Request exceeded the timeout sent in the request: 25ms","type":"timeout_error","param":null,"code":"timeout"}}` + "\n", Retries: "0"},
			calls:   1,
		},
		{
			name:  "a timed-out attempt is retried",
			cfg:   `{"virtual_key":"a","request_timeout":20,"retry":{"attempts":2}}`,
			a:     []step{{hang: true}},
			want:  answer{Status: 200, Body: `{"from":"a"}`, Provider: "openai", Index: "config", Retries: "1", Cache: "DISABLED"},
			calls: 2,
		},
		{
			name:  "a timeout on the last attempt is a 408 even after a provider answer",
			cfg:   `{"virtual_key":"a","request_timeout":20,"retry":{"attempts":1}}`,
			a:     []step{{status: 503}, {hang: true}},
			want:  answer{Status: 408, Body: `{"error":{"message":"Request exceeded the timeout sent in the request: 20ms","type":"timeout_error","param":null,"code":"timeout"}}` + "\n", Retries: "1"},
			calls: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newFakeUp(t, "a", tt.a...)
			e := routeEnv(t, nil, a)
			got := readAnswer(t, e.post(tt.cfg, `{}`, tt.headers...))
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("answer (-want +got):\n%s", d)
			}
			if n := int(a.calls.Load()); n != tt.calls {
				t.Errorf("%d upstream calls, want %d", n, tt.calls)
			}
		})
	}
}

func TestOverrideParams(t *testing.T) {
	a := newFakeUp(t, "a")
	e := routeEnv(t, nil, a)
	cfg := `{"override_params":{"model":"gpt-4o","temperature":0,"seed":12345678901234567890},
		"targets":[{"virtual_key":"a","override_params":{"temperature":0.5,"tags":["x"]}}]}`
	res := e.post(cfg, `{"model":"caller","messages":[{"role":"user","content":"<hi>"}],"n":1}`)
	if res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal([]byte(a.received()[0]), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]json.RawMessage{
		"model":       json.RawMessage(`"gpt-4o"`),
		"temperature": json.RawMessage(`0.5`),
		"seed":        json.RawMessage(`12345678901234567890`),
		"tags":        json.RawMessage(`["x"]`),
		"messages":    json.RawMessage(`[{"role":"user","content":"\u003chi\u003e"}]`),
		"n":           json.RawMessage(`1`),
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("upstream body (-want +got):\n%s", d)
	}
}

// TestBodyLimit: a body over MaxBodyBytes goes through once, streamed,
// when the plan only wanted to replay it, and is refused with 413 when the
// plan must rewrite it.
func TestBodyLimit(t *testing.T) {
	a := newFakeUp(t, "a", step{status: 503, body: `{"error":"a"}`})
	b := newFakeUp(t, "b")
	e := routeEnv(t, func(o *Options) { o.MaxBodyBytes = 64 }, a, b)
	big := `{"model":"m","pad":"` + strings.Repeat("x", 100) + `"}`

	got := readAnswer(t, e.post(`{"strategy":{"mode":"fallback"},"retry":{"attempts":2},"targets":[{"virtual_key":"a"},{"virtual_key":"b"}]}`, big))
	if got.Status != 503 || got.Body != `{"error":"a"}` {
		t.Errorf("got %+v, want a's 503: no retry nor fallback without a replayable body", got)
	}
	if d := cmp.Diff([]string{big}, a.received()); d != "" {
		t.Errorf("upstream body (-want +got):\n%s", d)
	}
	if b.calls.Load() != 0 {
		t.Error("the fallback target was called")
	}

	res := e.post(`{"virtual_key":"b","override_params":{"model":"x"}}`, big)
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d, want 413", res.StatusCode)
	}
	if b.calls.Load() != 0 {
		t.Error("the provider was called with a body it should have been rewritten")
	}
}

// pipeTransport serves requests in memory with handlers chosen by host, so
// that tests under testing/synctest run without a network. Responses
// stream: the transport returns once the handler wrote its headers.
type pipeTransport map[string]http.Handler

func (p pipeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	h, ok := p[req.URL.Host]
	if !ok {
		return nil, io.ErrUnexpectedEOF
	}
	pr, pw := io.Pipe()
	w := &pipeWriter{header: make(http.Header), pw: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			if p := recover(); p != nil {
				pw.CloseWithError(io.ErrUnexpectedEOF)
				w.send(0)
				return
			}
			w.send(http.StatusOK)
			pw.Close()
		}()
		h.ServeHTTP(w, req)
	}()
	select {
	case <-w.ready:
		if w.status == 0 {
			return nil, io.ErrUnexpectedEOF
		}
		return &http.Response{StatusCode: w.status, Header: w.sent, Body: pr, Request: req, ContentLength: -1}, nil
	case <-req.Context().Done():
		pr.Close()
		return nil, req.Context().Err()
	}
}

type pipeWriter struct {
	header http.Header
	sent   http.Header
	status int
	pw     *io.PipeWriter
	once   sync.Once
	ready  chan struct{}
}

func (w *pipeWriter) Header() http.Header { return w.header }
func (w *pipeWriter) send(code int) {
	w.once.Do(func() { w.status, w.sent = code, w.header.Clone(); close(w.ready) })
}
func (w *pipeWriter) WriteHeader(code int) { w.send(code) }
func (w *pipeWriter) Write(p []byte) (int, error) {
	w.send(http.StatusOK)
	return w.pw.Write(p)
}
func (w *pipeWriter) Flush() { w.send(http.StatusOK) }

// bubbleGateway is a gateway for synctest bubbles: virtual keys name
// in-memory hosts of pipeTransport, and requests are served directly.
func bubbleGateway(t *testing.T, mod func(*Options), hosts pipeTransport) *Gateway {
	t.Helper()
	st := &testStore{}
	st.AddAPIKey(APIKey{ID: "key-1", Digest: HashAPIKey(coreKey), WorkspaceID: "ws-1"})
	st.AddAPIKey(APIKey{ID: "key-2", Digest: HashAPIKey("gw-other-workspace"), WorkspaceID: "ws-2"})
	for host := range hosts {
		st.AddVirtualKey(VirtualKey{Slug: host, Provider: "openai", APIKey: "sk-" + host, BaseURL: "http://" + host + "/v1"})
	}
	opts := Options{Keys: st, VirtualKeys: st, Configs: st, Transport: hosts, RetryBaseDelay: 100 * time.Millisecond}
	if mod != nil {
		mod(&opts)
	}
	g := New(opts)
	t.Cleanup(func() { g.Close() })
	return g
}

// serve sends one request to g in memory.
func serve(ctx context.Context, g http.Handler, cfg, body string, headers ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(ctx, "POST", "/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("X-Gateway-Api-Key", coreKey)
	req.Header.Set("Content-Type", "application/json")
	var b bytes.Buffer
	json.Compact(&b, []byte(cfg))
	req.Header.Set(HeaderConfig, b.String())
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, req)
	return rec
}

// timedUp answers from a script and records when (in the bubble's fake
// time) each call arrived.
type timedUp struct {
	mu     sync.Mutex
	script []step
	at     []time.Time
}

func (u *timedUp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	u.mu.Lock()
	u.at = append(u.at, time.Now())
	var s step
	if len(u.script) > 0 {
		s, u.script = u.script[0], u.script[1:]
	}
	u.mu.Unlock()
	for k, v := range s.header {
		w.Header().Set(k, v)
	}
	if s.status == 0 {
		s.status = 200
	}
	w.WriteHeader(s.status)
	io.WriteString(w, s.body)
}

func (u *timedUp) gaps() []time.Duration {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []time.Duration
	for i := 1; i < len(u.at); i++ {
		out = append(out, u.at[i].Sub(u.at[i-1]))
	}
	return out
}

func TestRetryBackoff(t *testing.T) {
	half := func() float64 { return 0.5 } // jitter at its middle: 3/4 of each delay
	tests := []struct {
		name     string
		cfg      string
		script   []step
		budget   time.Duration
		wantGaps []time.Duration
		status   int
	}{
		{
			name:     "exponential from the base delay, with jitter",
			cfg:      `{"virtual_key":"up","retry":{"attempts":3}}`,
			script:   []step{{status: 503}, {status: 503}, {status: 503}},
			wantGaps: []time.Duration{75 * time.Millisecond, 150 * time.Millisecond, 300 * time.Millisecond},
			status:   200,
		},
		{
			name:     "Retry-After in seconds is honoured",
			cfg:      `{"virtual_key":"up","retry":{"attempts":1,"use_retry_after_header":true}}`,
			script:   []step{{status: 429, header: map[string]string{"Retry-After": "2"}}},
			wantGaps: []time.Duration{2 * time.Second},
			status:   200,
		},
		{
			name:     "retry-after-ms is honoured first",
			cfg:      `{"virtual_key":"up","retry":{"attempts":1,"use_retry_after_header":true}}`,
			script:   []step{{status: 429, header: map[string]string{"Retry-After": "2", "Retry-After-Ms": "1500"}}},
			wantGaps: []time.Duration{1500 * time.Millisecond},
			status:   200,
		},
		{
			name:     "Retry-After is ignored unless asked for",
			cfg:      `{"virtual_key":"up","retry":{"attempts":1}}`,
			script:   []step{{status: 429, header: map[string]string{"Retry-After": "2"}}},
			wantGaps: []time.Duration{75 * time.Millisecond},
			status:   200,
		},
		{
			name:     "a wait beyond the budget is not made",
			cfg:      `{"virtual_key":"up","retry":{"attempts":1,"use_retry_after_header":true}}`,
			script:   []step{{status: 429, header: map[string]string{"Retry-After": "60"}}},
			budget:   10 * time.Second,
			wantGaps: nil,
			status:   429,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				up := &timedUp{script: tt.script}
				g := bubbleGateway(t, func(o *Options) { o.Rand = half; o.RetryBudget = tt.budget }, pipeTransport{"up": up})
				rec := serve(t.Context(), g, tt.cfg, `{}`)
				if rec.Code != tt.status {
					t.Errorf("status %d, want %d", rec.Code, tt.status)
				}
				if d := cmp.Diff(tt.wantGaps, up.gaps()); d != "" {
					t.Errorf("waits between calls (-want +got):\n%s", d)
				}
			})
		})
	}
}

// TestClientGoneStopsBackoff: a caller that leaves during a backoff wait
// leaves at once, and no further attempt is made.
func TestClientGoneStopsBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		up := &timedUp{script: []step{{status: 503}, {status: 503}}}
		g := bubbleGateway(t, nil, pipeTransport{"up": up})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		start := time.Now()
		go func() {
			defer close(done)
			serve(ctx, g, `{"virtual_key":"up","retry":{"attempts":5}}`, `{}`)
		}()
		synctest.Wait() // the first attempt failed; the gateway waits
		cancel()
		<-done
		if took := time.Since(start); took != 0 {
			t.Errorf("the request took %v after the caller left, want no wait", took)
		}
		if n := len(up.gaps()) + 1; n != 1 {
			t.Errorf("%d upstream calls, want 1", n)
		}
	})
}

// TestStartedStreamNotCut: the timeout bounds the time to response
// headers; a stream that started runs to its end.
func TestStartedStreamNotCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: 1\n\n")
			w.(http.Flusher).Flush()
			time.Sleep(time.Second) // fake time: well past the timeout
			io.WriteString(w, "data: [DONE]\n\n")
		})
		g := bubbleGateway(t, nil, pipeTransport{"up": up})
		rec := serve(t.Context(), g, `{"virtual_key":"up"}`, `{"stream":true}`, "x-gateway-request-timeout: 50")
		if rec.Code != 200 || rec.Body.String() != "data: 1\n\ndata: [DONE]\n\n" {
			t.Errorf("got %d %q, want the whole stream", rec.Code, rec.Body)
		}
	})
}
