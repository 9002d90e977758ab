package gatewaytest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelgateway/gateway/gatewaytest"
)

func TestNotFound(t *testing.T) {
	tests := []struct{ method, path, message string }{
		{"GET", "/nope", "Invalid URL (GET /v1/nope)"},
		{"DELETE", "/completions", "Invalid URL (DELETE /v1/completions)"},
		{"PUT", "/assistants/asst_1", "Invalid URL (PUT /v1/assistants/asst_1)"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			s := newServer(t)
			e := errorOf(t, do(t, s, tt.method, tt.path, ""), 404)
			want := map[string]any{"message": tt.message, "type": "invalid_request_error", "param": nil, "code": nil}
			if d := cmp.Diff(want, e); d != "" {
				t.Errorf("404 body (-want +got):\n%s", d)
			}
		})
	}
}

func TestRequestsRecorded(t *testing.T) {
	s := newServer(t)
	do(t, s, "POST", "/completions?api-version=1", `{"model":"m","prompt":"x"}`, "Authorization", "Bearer sk-1", "X-Custom", "v")
	do(t, s, "GET", "/models", "")
	do(t, s, "GET", "/models", "")
	got := s.Requests()
	type rec struct {
		Method, Path, RawQuery, Auth, Custom, Body string
	}
	var recs []rec
	for _, r := range got {
		recs = append(recs, rec{r.Method, r.Path, r.RawQuery, r.Header.Get("Authorization"), r.Header.Get("X-Custom"), string(r.Body)})
	}
	want := []rec{
		{"POST", "/v1/completions", "api-version=1", "Bearer sk-1", "v", `{"model":"m","prompt":"x"}`},
		{"GET", "/v1/models", "", "", "", ""},
		{"GET", "/v1/models", "", "", "", ""},
	}
	if d := cmp.Diff(want, recs); d != "" {
		t.Errorf("requests (-want +got):\n%s", d)
	}
	for path, want := range map[string]int{"/v1/completions": 1, "/v1/models": 2, "/v1/nope": 0} {
		if n := s.Count(path); n != want {
			t.Errorf("Count(%q) = %d, want %d", path, n, want)
		}
	}
	// The record is a copy: changing it does not change the server's.
	got[0].Body[0] = 'X'
	got[0].Header.Set("Authorization", "changed")
	again := s.Requests()[0]
	if again.Body[0] != '{' || again.Header.Get("Authorization") != "Bearer sk-1" {
		t.Errorf("Requests returned shared memory: %q %q", again.Body, again.Header.Get("Authorization"))
	}
}

func TestConcurrentRequests(t *testing.T) {
	s := newServer(t)
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body := fmt.Sprintf(`{"model":"m","prompt":"p%d","stream":%v}`, i, i%2 == 0)
			res, err := http.Post(s.URL+"/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != 200 {
				t.Errorf("status %d", res.StatusCode)
			}
		})
		wg.Go(func() { s.Requests() })
	}
	wg.Wait()
	if got := s.Count("/v1/completions"); got != n {
		t.Errorf("Count = %d, want %d", got, n)
	}
	if got := len(s.Requests()); got != n {
		t.Errorf("len(Requests()) = %d, want %d", got, n)
	}
}

func TestRequireToken(t *testing.T) {
	tests := []struct {
		name   string
		auth   string
		status int
		code   any
	}{
		{"missing", "", 401, nil},
		{"not bearer", "Basic abc", 401, nil},
		{"wrong", "Bearer sk-wrong", 401, "invalid_api_key"},
		{"right", "Bearer sk-good", 200, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			s.RequireToken("sk-good")
			s.Script("/v1/models", gatewaytest.Response{Status: 503})
			var hdr []string
			if tt.auth != "" {
				hdr = []string{"Authorization", tt.auth}
			}
			res := do(t, s, "GET", "/models", "", hdr...)
			if tt.status == 200 {
				// The script was not used up by refused requests; this is its turn.
				errorOf(t, res, 503)
				readJSON(t, do(t, s, "GET", "/models", "", hdr...), 200)
				return
			}
			e := errorOf(t, res, tt.status)
			if e["code"] != tt.code || e["type"] != "invalid_request_error" {
				t.Errorf("error = %v, want code %v", e, tt.code)
			}
			if s.Count("/v1/models") != 1 {
				t.Errorf("refused request not counted")
			}
		})
	}
	t.Run("empty token turns the check off", func(t *testing.T) {
		s := newServer(t)
		s.RequireToken("sk-good")
		s.RequireToken("")
		readJSON(t, do(t, s, "GET", "/models", ""), 200)
	})
}

func TestScript(t *testing.T) {
	s := newServer(t)
	s.Script("/v1/chat/completions",
		gatewaytest.Response{Status: 429, Header: http.Header{"Retry-After": {"2"}, "Retry-After-Ms": {"20"}}},
		gatewaytest.Response{Status: 500, Body: `{"custom":true}`, Header: http.Header{"Content-Type": {"application/x-custom"}}},
		gatewaytest.Response{Status: 201},
	)
	body := `{"model":"m","messages":[{"role":"user","content":"x"}]}`

	res := do(t, s, "POST", "/chat/completions", body)
	e := errorOf(t, res, 429)
	if d := cmp.Diff(map[string]any{"message": "Rate limit reached. Please try again later.", "type": "requests", "param": nil, "code": "rate_limit_exceeded"}, e); d != "" {
		t.Errorf("429 body (-want +got):\n%s", d)
	}
	if res.Header.Get("Retry-After") != "2" || res.Header.Get("Retry-After-Ms") != "20" {
		t.Errorf("retry headers = %v", res.Header)
	}

	res = do(t, s, "POST", "/chat/completions", body)
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 500 || string(b) != `{"custom":true}` || res.Header.Get("Content-Type") != "application/x-custom" {
		t.Errorf("got %d %q %q", res.StatusCode, res.Header.Get("Content-Type"), b)
	}

	res = do(t, s, "POST", "/chat/completions", body)
	b, _ = io.ReadAll(res.Body)
	if res.StatusCode != 201 || len(b) != 0 {
		t.Errorf("got %d %q, want 201 and no body", res.StatusCode, b)
	}

	// Script used up: normal behaviour again, and other paths never scripted.
	readJSON(t, do(t, s, "POST", "/chat/completions", body), 200)
	readJSON(t, do(t, s, "POST", "/completions", `{"model":"m","prompt":"x"}`), 200)
	if n := s.Count("/v1/chat/completions"); n != 4 {
		t.Errorf("Count = %d, want 4", n)
	}
}

func TestScriptDefaultErrorBodies(t *testing.T) {
	tests := []struct {
		status int
		typ    string
		code   any
	}{
		{400, "invalid_request_error", nil},
		{401, "invalid_request_error", "invalid_api_key"},
		{404, "invalid_request_error", nil},
		{429, "requests", "rate_limit_exceeded"},
		{500, "server_error", nil},
		{503, "server_error", nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			s := newServer(t)
			s.Script("/v1/anything", gatewaytest.Response{Status: tt.status})
			res := do(t, s, "POST", "/anything", `{}`)
			e := errorOf(t, res, tt.status)
			if e["type"] != tt.typ || e["code"] != tt.code || e["param"] != nil {
				t.Errorf("error = %v", e)
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
		})
	}
}

func TestScriptRelease(t *testing.T) {
	s := newServer(t)
	release := make(chan struct{})
	s.Script("/v1/models", gatewaytest.Response{Serve: true, Release: release, Header: http.Header{"X-Slow": {"yes"}}})
	type result struct {
		res *http.Response
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := http.Get(s.URL + "/models")
		done <- result{res, err}
	}()
	// Other requests are answered while the first is still held.
	readJSON(t, do(t, s, "POST", "/completions", `{"model":"m","prompt":"x"}`), 200)
	select {
	case r := <-done:
		t.Fatalf("held response arrived before release: %v %v", r.res, r.err)
	default:
	}
	close(release)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.res.Body.Close()
	v := readJSON(t, r.res, 200)
	if v["object"] != "list" || r.res.Header.Get("X-Slow") != "yes" {
		t.Errorf("served response = %v, headers %v", v, r.res.Header)
	}
}

func TestScriptReleaseCancelled(t *testing.T) {
	s := newServer(t)
	s.Script("/v1/models", gatewaytest.Response{Release: make(chan struct{})})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+"/models", nil)
	done := make(chan error, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	// Close must not hang on the abandoned handler.
	s.Close()
}

func TestScriptDelaySynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := gatewaytest.NewUnstartedServer()
		defer s.Close()
		s.Script("/v1/completions", gatewaytest.Response{Delay: time.Minute, Status: 503, Header: http.Header{"Retry-After": {"1"}}})
		start := time.Now()
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/completions", strings.NewReader(`{}`)))
		if got := time.Since(start); got != time.Minute {
			t.Errorf("answered after %v, want %v", got, time.Minute)
		}
		if rec.Code != 503 || rec.Header().Get("Retry-After") != "1" {
			t.Errorf("got %d %v", rec.Code, rec.Header())
		}
		// The next request is no longer delayed.
		start = time.Now()
		rec = httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/completions", strings.NewReader(`{"model":"m","prompt":"x"}`)))
		if got := time.Since(start); got != 0 || rec.Code != 200 {
			t.Errorf("second answer: %d after %v", rec.Code, got)
		}
	})
}

func TestScriptEventsThenAbort(t *testing.T) {
	s := newServer(t)
	s.Script("/v1/completions", gatewaytest.Response{Events: []string{`{"n":1}`, `{"n":2}`}, Abort: true})
	res := do(t, s, "POST", "/completions", `{}`)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("got %d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	events, err := newSSE(res.Body).all()
	if d := cmp.Diff([]string{`{"n":1}`, `{"n":2}`}, events); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("err = %v, want unexpected EOF from the aborted connection", err)
	}
}

func TestScriptEventsComplete(t *testing.T) {
	s := newServer(t)
	s.Script("/v1/completions", gatewaytest.Response{Events: []string{`{"n":1}`}})
	events, err := newSSE(do(t, s, "POST", "/completions", `{}`).Body).all()
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{`{"n":1}`, "[DONE]"}, events); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

func TestScriptServeAbort(t *testing.T) {
	t.Run("stream after 2 events", func(t *testing.T) {
		s := newServer(t)
		s.Script("/v1/chat/completions", gatewaytest.Response{Serve: true, Abort: true, AbortAfter: 2})
		res := do(t, s, "POST", "/chat/completions", `{"model":"m","messages":[{"role":"user","content":"a b c"}],"stream":true}`)
		events, err := newSSE(res.Body).all()
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("err = %v, want unexpected EOF", err)
		}
		if len(events) != 2 {
			t.Fatalf("got %d events before the abort, want 2: %q", len(events), events)
		}
		if c := decode(t, events[1]); c["object"] != "chat.completion.chunk" {
			t.Errorf("second event = %v", c)
		}
	})
	t.Run("non-streamed answer after headers", func(t *testing.T) {
		s := newServer(t)
		s.Script("/v1/completions", gatewaytest.Response{Serve: true, Abort: true})
		res := do(t, s, "POST", "/completions", `{"model":"m","prompt":"x"}`)
		if res.StatusCode != 200 {
			t.Fatalf("status = %d", res.StatusCode)
		}
		if _, err := io.ReadAll(res.Body); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("err = %v, want unexpected EOF", err)
		}
	})
}

func TestStreamGate(t *testing.T) {
	s := newServer(t)
	gate := s.HoldStream("/v1/completions", 1)
	res := do(t, s, "POST", "/completions", `{"model":"m","prompt":"one two","stream":true}`)
	r := newSSE(res.Body)
	first, err := r.next()
	if err != nil {
		t.Fatal(err)
	}
	// The first event reached the client while the server holds the rest.
	<-gate.Held()
	if c := decode(t, first); c["choices"].([]any)[0].(map[string]any)["text"] != "Echo:" {
		t.Errorf("first event = %s", first)
	}
	gate.Release()
	gate.Release() // idempotent
	rest, err := r.all()
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) != 4 || rest[3] != "[DONE]" {
		t.Errorf("rest of the stream = %q", rest)
	}
	// The gate was for one stream only.
	events, err := newSSE(do(t, s, "POST", "/completions", `{"model":"m","prompt":"x","stream":true}`).Body).all()
	if err != nil || len(events) != 4 {
		t.Errorf("second stream: %q %v", events, err)
	}
}

func TestStreamGateAfterHeaders(t *testing.T) {
	s := newServer(t)
	gate := s.HoldStream("/v1/chat/completions", 0)
	res := do(t, s, "POST", "/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true}`)
	// Headers arrived while the server is held before its first event.
	<-gate.Held()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("got %d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	gate.Release()
	events, err := newSSE(res.Body).all()
	if err != nil || events[len(events)-1] != "[DONE]" {
		t.Errorf("events %q, err %v", events, err)
	}
}

func TestStreamGateScriptedEvents(t *testing.T) {
	s := newServer(t)
	s.Script("/v1/completions", gatewaytest.Response{Events: []string{"a", "b"}})
	gate := s.HoldStream("/v1/completions", 1)
	r := newSSE(do(t, s, "POST", "/completions", `{}`).Body)
	if e, err := r.next(); err != nil || e != "a" {
		t.Fatalf("first event %q, %v", e, err)
	}
	<-gate.Held()
	gate.Release()
	rest, err := r.all()
	if d := cmp.Diff([]string{"b", "[DONE]"}, rest); d != "" || err != nil {
		t.Errorf("rest (-want +got):\n%s err %v", d, err)
	}
}

func TestCloseReleasesHeldStream(t *testing.T) {
	s := gatewaytest.NewServer()
	gate := s.HoldStream("/v1/completions", 1)
	res, err := http.Post(s.URL+"/completions", "application/json", strings.NewReader(`{"model":"m","prompt":"x y","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	<-gate.Held()
	s.Close() // returns although the gate is never released
	events, err := newSSE(res.Body).all()
	if err == nil || len(events) != 1 {
		t.Errorf("stream after Close: %q, err %v; want one event then an error", events, err)
	}
}

func TestHoldStreamNegativePanics(t *testing.T) {
	s := newServer(t)
	defer func() {
		if recover() == nil {
			t.Error("HoldStream(-1) did not panic")
		}
	}()
	s.HoldStream("/v1/completions", -1)
}

func TestSetClock(t *testing.T) {
	s := newServer(t)
	s.SetClock(func() time.Time { return time.Unix(42, 0) })
	v := readJSON(t, do(t, s, "POST", "/completions", `{"model":"m","prompt":"x"}`), 200)
	if v["created"] != float64(42) {
		t.Errorf("created = %v, want 42", v["created"])
	}
}
