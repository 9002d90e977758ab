package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The bounds the trust model puts on what one data-plane request may cost:
// conditions, upstream attempts, model and metadata.

// conditionalConfig is a conditional config whose queries route to target
// "a", else to "b".
func conditionalConfig(queries ...string) string {
	conds := make([]string, len(queries))
	for i, q := range queries {
		conds[i] = `{"query":` + q + `,"then":"a"}`
	}
	return `{"strategy":{"mode":"conditional","conditions":[` + strings.Join(conds, ",") + `],"default":"b"},
		"targets":[{"name":"a","virtual_key":"a"},{"name":"b","virtual_key":"b"}]}`
}

func repeatQuery(n int, q string) []string {
	qs := make([]string, n)
	for i := range qs {
		qs[i] = q
	}
	return qs
}

func TestConditionBounds(t *testing.T) {
	eq := `{"metadata.tier":"gold"}`
	nested := `{"strategy":{"mode":"conditional","conditions":[` + strings.TrimSuffix(strings.Repeat(`{"query":`+eq+`,"then":"x"},`, 20), ",") + `],"default":"y"},
		"targets":[{"name":"x","strategy":{"mode":"conditional","conditions":[` + strings.TrimSuffix(strings.Repeat(`{"query":`+eq+`,"then":"a"},`, 13), ",") + `],"default":"b"},
			"targets":[{"name":"a","virtual_key":"a"},{"name":"b","virtual_key":"b"}]},{"name":"y","virtual_key":"b"}]}`
	tests := []struct {
		name string
		cfg  string
		want string // in the message
	}{
		{"33 conditions", conditionalConfig(repeatQuery(33, eq)...), "strategy.conditions[32].query.metadata.tier: a config holds at most 32 conditions"},
		{"counted over the whole config", nested, "strategy.conditions[19].query.metadata.tier: a config holds at most 32 conditions"},
		{"each operator counts", conditionalConfig(repeatQuery(11, `{"params.n":{"$gt":1,"$lt":9,"$ne":5}}`)...),
			"strategy.conditions[10].query.params.n.$ne: a config holds at most 32 conditions"},
		{"$and members count", conditionalConfig(`{"$and":[` + strings.TrimSuffix(strings.Repeat(eq+",", 33), ",") + `]}`),
			"strategy.conditions[0].query.$and[32].metadata.tier: a config holds at most 32 conditions"},
		// 606 bytes that compile to 6,000 instructions: about 4 s of CPU over
		// a 4 KiB value before the bound.
		{"a $regex too complex", conditionalConfig(`{"params.model":{"$regex":"` + strings.Repeat(`(?:a?){999}`, 6) + `x"}}`),
			"strategy.conditions[0].query.params.model.$regex: is too complex"},
		{"$regex programs add up", conditionalConfig(repeatQuery(3, `{"params.model":{"$regex":"(?:a?){250}x"}}`)...),
			"strategy.conditions[2].query.params.model.$regex: is too complex"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := newFakeUp(t, "a"), newFakeUp(t, "b")
			e := routeEnv(t, nil, a, b)
			res := e.post(tt.cfg, `{"model":"m","n":5}`, `x-gateway-metadata: {"tier":"gold"}`)
			eb := decodeError(t, res)
			if res.StatusCode != 400 || deref(eb.Error.Code) != CodeInvalidConfig || deref(eb.Error.Param) != HeaderConfig ||
				!strings.Contains(eb.Error.Message, tt.want) {
				t.Errorf("got %d %s %s %q, want 400 invalid_config naming %q", res.StatusCode, deref(eb.Error.Code), deref(eb.Error.Param), eb.Error.Message, tt.want)
			}
			if n := a.calls.Load() + b.calls.Load(); n != 0 {
				t.Errorf("%d upstream calls, want none", n)
			}
		})
	}

	t.Run("32 conditions are accepted", func(t *testing.T) {
		a, b := newFakeUp(t, "a"), newFakeUp(t, "b")
		e := routeEnv(t, nil, a, b)
		qs := repeatQuery(31, `{"metadata.tier":"silver"}`)
		qs = append(qs, `{"params.model":{"$regex":"^(?:a?){450}m$"}}`)
		got := readAnswer(t, e.post(conditionalConfig(qs...), `{"model":"m"}`))
		if got.Status != 200 || got.Body != `{"from":"a"}` {
			t.Errorf("got %d %s, want 200 from a", got.Status, got.Body)
		}
	})
}

// TestRegexValueBound: a $regex is matched only against values of at most
// 4 KiB; a longer one is a 400 naming the field (the body's, or
// x-gateway-metadata), and no provider is called. Values that no $regex
// looks at are not bounded, but a string over 4 KiB is not read as a
// number (each numeric test would parse it again).
func TestRegexValueBound(t *testing.T) {
	long := strings.Repeat("a", 4<<10+1)
	ok := strings.Repeat("a", 4<<10)
	tests := []struct {
		name, cfg, body, metadata string
		status                    int
		param                     string
		from                      string
	}{
		{"a body field over 4 KiB", conditionalConfig(`{"params.user":{"$regex":"^a+$"}}`), `{"user":"` + long + `"}`, "", 400, "user", ""},
		{"a metadata value over 4 KiB", conditionalConfig(`{"metadata.user":{"$regex":"^a+$"}}`), `{}`, `{"user":"` + long + `"}`, 400, HeaderMetadata, ""},
		{"4 KiB is matched", conditionalConfig(`{"params.user":{"$regex":"^a+$"}}`), `{"user":"` + ok + `"}`, "", 200, "", "a"},
		{"a long field no $regex reads", conditionalConfig(`{"params.user":"m"}`), `{"user":"` + long + `"}`, "", 200, "", "b"},
		{"a numeric string over 4 KiB is no number", conditionalConfig(`{"params.n":{"$gt":1}}`), `{"n":"` + strings.Repeat("9", 4<<10+1) + `"}`, "", 200, "", "b"},
		{"an earlier condition matched", conditionalConfig(`{"params.n":1}`, `{"params.user":{"$regex":"^a+$"}}`), `{"n":1,"user":"` + long + `"}`, "", 200, "", "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := newFakeUp(t, "a"), newFakeUp(t, "b")
			e := routeEnv(t, nil, a, b)
			var h []string
			if tt.metadata != "" {
				h = append(h, "x-gateway-metadata: "+tt.metadata)
			}
			res := e.post(tt.cfg, tt.body, h...)
			if tt.status == 400 {
				eb := decodeError(t, res)
				if res.StatusCode != 400 || deref(eb.Error.Code) != CodeInvalidValue || deref(eb.Error.Param) != tt.param {
					t.Errorf("got %d %s %s %q, want 400 invalid_value naming %s", res.StatusCode, deref(eb.Error.Code), deref(eb.Error.Param), eb.Error.Message, tt.param)
				}
				if n := a.calls.Load() + b.calls.Load(); n != 0 {
					t.Errorf("%d upstream calls, want none", n)
				}
				return
			}
			got := readAnswer(t, res)
			if got.Status != tt.status || got.Body != `{"from":"`+tt.from+`"}` {
				t.Errorf("got %d %s, want %d from %s", got.Status, got.Body, tt.status, tt.from)
			}
		})
	}
}

// TestConditionsStopWhenCallerLeaves: a caller gone before its conditions
// are matched gets none matched, no target chosen and no provider called.
// (In memory: over a connection the server notices the caller left at a
// time no test can pin.)
func TestConditionsStopWhenCallerLeaves(t *testing.T) {
	a, b := newFakeUp(t, "a"), newFakeUp(t, "b")
	e := routeEnv(t, nil, a, b)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	serve(ctx, e.gw, conditionalConfig(`{"params.model":{"$regex":"^m"}}`), `{"model":"m"}`)
	e.gw.Close() // flushes the log sink
	recs := e.logs.Query(LogFilter{})
	if len(recs) != 1 {
		t.Fatalf("%d log records, want 1", len(recs))
	}
	if r := recs[0]; r.VirtualKey != "" || r.Provider != "" {
		t.Errorf("the log names target %q of %q: matching went on after the caller left", r.VirtualKey, r.Provider)
	}
	if n := a.calls.Load() + b.calls.Load(); n != 0 {
		t.Errorf("%d upstream calls, want none", n)
	}
}

// fallbackTargets is a fallback config over n targets, each with retries.
func fallbackTargets(names []string, retries int) string {
	ts := make([]string, len(names))
	for i, n := range names {
		ts[i] = fmt.Sprintf(`{"virtual_key":%q,"retry":{"attempts":%d}}`, n, retries)
	}
	return `{"strategy":{"mode":"fallback"},"targets":[` + strings.Join(ts, ",") + `]}`
}

// TestAttemptsBoundAtParse: a config through which a request could make
// more than 10 upstream attempts (targets × retries, nested fallbacks
// included) is a 400 naming the targets that exceed it. On the code before
// the bound, the 30-target config made 30 calls, 90 with two retries each.
func TestAttemptsBoundAtParse(t *testing.T) {
	ups := make([]*fakeUp, 30)
	names := make([]string, 30)
	for i := range ups {
		names[i] = fmt.Sprintf("u%d", i)
		ups[i] = newFakeUp(t, names[i], step{status: 503}, step{status: 503}, step{status: 503})
	}
	e := routeEnv(t, nil, ups...)
	tests := []struct {
		name, cfg, want string
	}{
		{"30 targets", fallbackTargets(names, 0), "targets: a request may make up to 30 upstream attempts"},
		{"30 targets retried twice", fallbackTargets(names, 2), "targets: a request may make up to 90 upstream attempts"},
		{"4 targets × 3 attempts", fallbackTargets(names[:4], 2), "targets: a request may make up to 12 upstream attempts"},
		{"retries inherited", `{"strategy":{"mode":"fallback"},"retry":{"attempts":5},"targets":[{"virtual_key":"u0"},{"virtual_key":"u1"}]}`,
			"targets: a request may make up to 12"},
		{"the smallest node that exceeds is named", `{"strategy":{"mode":"loadbalance"},"targets":[{"virtual_key":"u0"},` + fallbackTargets(names[:11], 0) + `]}`,
			"targets[1].targets: a request may make up to 11"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := e.post(tt.cfg, `{}`)
			eb := decodeError(t, res)
			if res.StatusCode != 400 || deref(eb.Error.Code) != CodeInvalidConfig || !strings.Contains(eb.Error.Message, tt.want) {
				t.Errorf("got %d %s %q, want 400 invalid_config with %q", res.StatusCode, deref(eb.Error.Code), eb.Error.Message, tt.want)
			}
		})
	}
	total := 0
	for _, n := range callCounts(ups...) {
		total += n
	}
	if total != 0 {
		t.Errorf("%d upstream calls, want none", total)
	}

	t.Run("10 attempts are accepted and made", func(t *testing.T) {
		got := readAnswer(t, e.post(fallbackTargets(names[20:25], 1), `{}`))
		calls := 0
		for _, n := range callCounts(ups[20:25]...) {
			calls += n
		}
		if got.Status != 503 || calls != 10 {
			t.Errorf("got %d after %d calls, want the last 503 after 10 (each target tried twice)", got.Status, calls)
		}
	})
}

// TestAttemptsCountedByRateLimits: every upstream attempt after the first
// takes a unit of the requests policies that admitted the request; when
// one refuses, the request stops trying and answers the last provider
// failure. On the code before, the 9 attempts were made and 1 unit taken.
func TestAttemptsCountedByRateLimits(t *testing.T) {
	a := newFakeUp(t, "a", step{status: 503}, step{status: 503}, step{status: 503})
	b := newFakeUp(t, "b", step{status: 502}, step{status: 502}, step{status: 502})
	c := newFakeUp(t, "c", step{status: 500}, step{status: 500}, step{status: 500})
	e := routeEnv(t, nil, a, b, c)
	if err := e.store.PutPolicy(t.Context(), &RateLimitsPolicy{ID: "7d1e0000-0000-4000-8000-0000000000aa",
		Conditions: []PolicyCondition{{Key: "workspace_id", Value: "ws-1"}}, GroupBy: []PolicyGroupBy{{Key: "api_key"}},
		Type: PolicyRequests, Unit: PolicyPerHour, Value: 5, Status: PolicyActive, WorkspaceID: "ws-1"}); err != nil {
		t.Fatal(err)
	}
	got := readAnswer(t, e.post(fallbackTargets([]string{"a", "b", "c"}, 2), `{}`))
	calls := callCounts(a, b, c)
	if want := map[string]int{"a": 3, "b": 2, "c": 0}; calls["a"] != want["a"] || calls["b"] != want["b"] || calls["c"] != want["c"] {
		t.Errorf("upstream calls %v, want %v: the policy allows 5 requests an hour, one per attempt", calls, want)
	}
	if got.Status != 502 || got.Body != `{"from":"b"}` {
		t.Errorf("got %d %s, want the last failure, 502 from b", got.Status, got.Body)
	}
	res := e.post(`{"virtual_key":"c"}`, `{}`)
	if res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the next request got %d, want 429: the attempts used the policy's 5 units", res.StatusCode)
	}
}

// TestModelBound: a model over 256 bytes is a 400 naming model wherever
// the gateway reads it (the typed /completions, a body read on the OpenAI
// routes, for the cache key or a translation), and is clipped to 256 bytes
// in the log of a pass-through body only peeked at. On the code before,
// each reached the provider, and the log carried the whole model.
func TestModelBound(t *testing.T) {
	long := strings.Repeat("m", 257)
	for _, path := range []string{"/v1/completions", "/v1/chat/completions", "/v1/embeddings"} {
		t.Run(path, func(t *testing.T) {
			a := newFakeUp(t, "a")
			e := routeEnv(t, nil, a)
			body := `{"model":"` + long + `","prompt":"hi","input":"hi","messages":[{"role":"user","content":"hi"}]}`
			res := e.do("POST", path, strings.NewReader(body), "x-gateway-api-key: "+coreKey, "content-type: application/json", "x-gateway-virtual-key: a")
			eb := decodeError(t, res)
			if res.StatusCode != 400 || deref(eb.Error.Param) != "model" || deref(eb.Error.Code) != CodeInvalidValue {
				t.Errorf("got %d %s %s %q, want 400 invalid_value naming model", res.StatusCode, deref(eb.Error.Code), deref(eb.Error.Param), eb.Error.Message)
			}
			if n := a.calls.Load(); n != 0 {
				t.Errorf("%d upstream calls, want none", n)
			}
			e.gw.Close()
			for _, r := range e.logs.Query(LogFilter{}) {
				if len(r.Model) > maxModelBytes {
					t.Errorf("the log carries a model of %d bytes", len(r.Model))
				}
			}
		})
	}
	t.Run("256 bytes pass", func(t *testing.T) {
		a := newFakeUp(t, "a")
		e := routeEnv(t, nil, a)
		res := e.do("POST", "/v1/completions", strings.NewReader(`{"model":"`+long[:256]+`","prompt":"hi"}`),
			"x-gateway-api-key: "+coreKey, "content-type: application/json", "x-gateway-virtual-key: a")
		if got := readAnswer(t, res); got.Status != 200 {
			t.Errorf("got %d %s, want 200", got.Status, got.Body)
		}
	})
	t.Run("a pass-through body's model is clipped in the log", func(t *testing.T) {
		a := newFakeUp(t, "a")
		e := routeEnv(t, nil, a)
		model := strings.Repeat("é", 1<<19) // 1 MiB
		res := e.do("POST", "/v1/responses", strings.NewReader(`{"model":"`+model+`"}`),
			"x-gateway-api-key: "+coreKey, "content-type: application/json",
			"x-gateway-config: "+`{"virtual_key":"a","retry":{"attempts":1}}`)
		if got := readAnswer(t, res); got.Status != 200 {
			t.Fatalf("got %d %s, want 200: pass-through routes are the provider's to refuse", got.Status, got.Body)
		}
		e.gw.Close()
		recs := e.logs.Query(LogFilter{})
		if len(recs) != 1 || recs[0].Model != model[:maxModelBytes] {
			t.Errorf("logged model of %d bytes, want the first %d bytes", len(recs[0].Model), maxModelBytes)
		}
	})
}

// TestMergedMetadataBound: the metadata a request carries, its
// x-gateway-metadata merged over its API key's defaults, keeps the bounds
// of the header (64 keys, 8 KiB), even when the stored defaults do not
// (written before their bound, or by another store): a 400 naming
// x-gateway-metadata, so that they never reach a log record. On the code
// before, the merge went to the provider and the log.
func TestMergedMetadataBound(t *testing.T) {
	keys := func(prefix string, n int) map[string]string {
		m := make(map[string]string, n)
		for i := range n {
			m[fmt.Sprintf("%s%d", prefix, i)] = "v"
		}
		return m
	}
	tests := []struct {
		name     string
		defaults map[string]string
		header   string
		status   int
	}{
		{"40 defaults and 30 keys sent", keys("d", 40), `{"h":"v"` + headerKeys(30) + `}`, 400},
		{"defaults of 2 MB", map[string]string{"big": strings.Repeat("x", 2<<20)}, ``, 400},
		{"100 stored defaults", keys("d", 100), ``, 400},
		{"overridden keys count once", keys("k", 64), `{"k0":"w","k1":"w"}`, 200},
		{"4 KiB of each", map[string]string{"a": strings.Repeat("x", 4<<10-1)}, `{"b":"` + strings.Repeat("y", 4<<10-1) + `"}`, 200},
		{"8 KiB and one byte", map[string]string{"a": strings.Repeat("x", 4<<10)}, `{"b":"` + strings.Repeat("y", 4<<10-1) + `"}`, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newFakeUp(t, "a")
			e := routeEnv(t, nil, a)
			e.store.AddAPIKey(APIKey{ID: "key-defaults", Digest: HashAPIKey("gw-defaults"), WorkspaceID: "ws-1", Role: RoleMember, Metadata: tt.defaults})
			h := []string{"x-gateway-api-key: gw-defaults", "content-type: application/json", "x-gateway-virtual-key: a"}
			if tt.header != "" {
				h = append(h, "x-gateway-metadata: "+tt.header)
			}
			res := e.do("POST", "/v1/chat/completions", strings.NewReader(`{}`), h...)
			if tt.status == 200 {
				if got := readAnswer(t, res); got.Status != 200 {
					t.Errorf("got %d %s, want 200", got.Status, got.Body)
				}
				return
			}
			eb := decodeError(t, res)
			if res.StatusCode != 400 || deref(eb.Error.Param) != HeaderMetadata {
				t.Errorf("got %d %s %q, want 400 naming %s", res.StatusCode, deref(eb.Error.Param), eb.Error.Message, HeaderMetadata)
			}
			if n := a.calls.Load(); n != 0 {
				t.Errorf("%d upstream calls, want none", n)
			}
			e.gw.Close()
			for _, r := range e.logs.Query(LogFilter{}) {
				if len(r.Metadata) > maxMetadataKeys || len(r.Metadata["big"]) > 0 {
					t.Errorf("the log carries %d metadata keys", len(r.Metadata))
				}
			}
		})
	}
}

// headerKeys returns n more members for a metadata object: ,"h0":"v"...
func headerKeys(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `,"h%d":"v"`, i)
	}
	return b.String()
}

// TestAttemptsBoundAtRunTime: whatever the plan (here one ParseConfig
// refuses, built in Go), execution stops at 10 upstream attempts and
// answers with the last failure. On the code before, the 30 targets with
// two retries each made 90 calls.
func TestAttemptsBoundAtRunTime(t *testing.T) {
	ups := make([]*fakeUp, 30)
	cfg := &Config{Strategy: &Strategy{Mode: ModeFallback}}
	for i := range ups {
		ups[i] = newFakeUp(t, fmt.Sprintf("u%d", i), step{status: 503}, step{status: 503}, step{status: 502, body: fmt.Sprintf(`{"last":%d}`, i)})
		cfg.Targets = append(cfg.Targets, &Config{VirtualKey: ups[i].name, Retry: &RetryConfig{Attempts: 2}})
	}
	e := routeEnv(t, nil, ups...)
	plan, err := e.gw.buildNode(t.Context(), Identity{WorkspaceID: "ws-1"}, cfg, "config", inherited{}, true)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, st := withState(w, r)
		e.gw.execute(w, r, st, plan, nil)
	}))
	defer srv.Close()
	res, err := srv.Client().Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	got := readAnswer(t, res)
	calls := callCounts(ups...)
	total := 0
	for _, n := range calls {
		total += n
	}
	if total != 10 || calls["u0"] != 3 || calls["u3"] != 1 || calls["u4"] != 0 {
		t.Errorf("%d upstream calls (%v), want 10: u0 to u2 three times each, then u3 once", total, calls)
	}
	if got.Status != 503 || got.Provider != "openai" || got.Retries != "6" {
		t.Errorf("got %d %s (retries %s), want the last failure, u3's 503, after 6 retries", got.Status, got.Body, got.Retries)
	}
}

// TestAttemptsCountedThroughTheCache: the attempts of a shared cache fill,
// made on a goroutine of its own, count for the request that started it;
// a refusal there stops the fallback too. On the code before, a was tried
// three times and b answered.
func TestAttemptsCountedThroughTheCache(t *testing.T) {
	a := newFakeUp(t, "a", step{status: 503}, step{status: 503}, step{status: 503})
	b := newFakeUp(t, "b")
	e := routeEnv(t, nil, a, b)
	if err := e.store.PutPolicy(t.Context(), &RateLimitsPolicy{ID: "7d1e0000-0000-4000-8000-0000000000ab",
		Conditions: []PolicyCondition{{Key: "workspace_id", Value: "ws-1"}}, GroupBy: []PolicyGroupBy{{Key: "api_key"}},
		Type: PolicyRequests, Unit: PolicyPerHour, Value: 2, Status: PolicyActive, WorkspaceID: "ws-1"}); err != nil {
		t.Fatal(err)
	}
	got := readAnswer(t, e.post(`{"strategy":{"mode":"fallback"},"cache":{"mode":"simple"},
		"targets":[{"virtual_key":"a","retry":{"attempts":2}},{"virtual_key":"b"}]}`, `{"model":"m"}`))
	if calls := callCounts(a, b); calls["a"] != 2 || calls["b"] != 0 {
		t.Errorf("upstream calls %v, want a twice and b never: the policy allows 2 requests an hour", calls)
	}
	if got.Status != 503 || got.Body != `{"from":"a"}` || got.Cache != string(CacheMiss) {
		t.Errorf("got %d %s (cache %s), want a's 503, a MISS", got.Status, got.Body, got.Cache)
	}
}
