package gateway

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The deprecated Transport.DialTLS of an operator's transport must not
// carry over to the custom-host transport: it would dial https custom hosts
// without the guard.
func TestCustomHostTransportIgnoresDialTLS(t *testing.T) {
	rn := &recordingNet{hosts: map[string][]netip.Addr{"internal.test": {netip.MustParseAddr("10.0.0.7")}}}
	var mu sync.Mutex
	var tlsDials []string
	//lint:ignore SA1019 an operator's transport may still set the deprecated field
	base := &http.Transport{DialTLS: func(network, addr string) (net.Conn, error) {
		mu.Lock()
		tlsDials = append(tlsDials, addr)
		mu.Unlock()
		return nil, errors.New("test: DialTLS refused " + addr)
	}}
	e := newCoreEnv(t, nil, func(o *Options) {
		o.Transport = base
		o.Resolver = rn
		o.DialContext = rn.DialContext
	})
	res := e.do("GET", "/v1/models", nil, "x-gateway-api-key: "+coreKey, "x-gateway-provider: openai",
		"x-gateway-custom-host: https://internal.test/v1", "Authorization: Bearer sk-caller")
	if res.StatusCode != http.StatusBadRequest || deref(decodeError(t, res).Error.Code) != CodeInvalidCustomHost {
		t.Errorf("status %d, want 400 invalid_custom_host", res.StatusCode)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(tlsDials) > 0 {
		t.Errorf("the operator's DialTLS dialed %v for a caller-supplied host, bypassing the guard", tlsDials)
	}
}

// A provider answering with its own x-gateway-trace-id (e.g. another
// gateway behind a custom host) must not add a second trace id to ours.
func TestUpstreamTraceIDNotDuplicated(t *testing.T) {
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Gateway-Trace-Id", "upstream-trace")
		io.WriteString(w, "{}")
	})
	e := newCoreEnv(t, up, nil)
	res := e.do("GET", "/v1/models", nil, append(vkHeaders, "x-gateway-trace-id: tr-own")...)
	if got := res.Header.Values(HeaderTraceID); len(got) != 1 || got[0] != "tr-own" {
		t.Errorf("x-gateway-trace-id = %q, want [tr-own]", got)
	}
}

// ParseHeaders promises to remove the gateway's headers and the caller's
// Authorization from the request, so that a host's own handler behind it
// cannot forward them (x-gateway-hostc-secret-access-key is a secret).
func TestParseHeadersRemovesGatewayHeaders(t *testing.T) {
	store := &testStore{}
	store.AddAPIKey(APIKey{ID: "k", Digest: HashAPIKey(coreKey), WorkspaceID: "ws-1"})
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(Trace(Authenticate(store)(ParseHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
	})))))
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/x", nil)
	req.Header.Set("x-gateway-api-key", coreKey)
	req.Header.Set("x-gateway-provider", "bedrock")
	req.Header.Set("x-gateway-hostc-secret-access-key", "aws-secret")
	req.Header.Set("x-gateway-metadata", `{"_user":"u"}`)
	req.Header.Set("Authorization", "Bearer sk-caller")
	req.Header.Set("X-Other", "kept")
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	h := <-got
	for k := range h {
		if strings.HasPrefix(k, "X-Gateway-") || k == "Authorization" {
			t.Errorf("header %s still on the request behind ParseHeaders", k)
		}
	}
	if h.Get("X-Other") != "kept" {
		t.Errorf("X-Other = %q, want kept", h.Get("X-Other"))
	}
}

// The key's default metadata must not be shared with the request log: a
// LogSink owns the record it is given and may change it.
func TestLogSinkCannotChangeKeyDefaults(t *testing.T) {
	up := newCoreUpstream(t, nil)
	sink := &mutatingSink{logged: make(chan struct{}, 4)}
	e := newCoreEnv(t, up, func(o *Options) { o.LogSink = sink })
	e.store.AddAPIKey(APIKey{ID: "key-md", Digest: HashAPIKey("gw-md"), WorkspaceID: "ws-1",
		Metadata: map[string]string{MetadataEnvironment: "prod"}})
	hdr := []string{"x-gateway-api-key: gw-md", "x-gateway-virtual-key: vk-up"}
	e.do("GET", "/v1/models", nil, hdr...).Body.Close()
	<-sink.logged
	e.do("GET", "/v1/models", nil, hdr...).Body.Close()
	<-sink.logged
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if len(sink.seen) != 2 || sink.seen[1] != "prod" {
		t.Errorf("_environment seen by the sink = %q, want [prod prod]", sink.seen)
	}
}

type mutatingSink struct {
	mu     sync.Mutex
	seen   []string
	logged chan struct{}
}

func (s *mutatingSink) Log(rec *RequestLog) {
	s.mu.Lock()
	s.seen = append(s.seen, rec.Metadata[MetadataEnvironment])
	s.mu.Unlock()
	delete(rec.Metadata, MetadataEnvironment) // the record is the sink's
	s.logged <- struct{}{}
}

// A key-like query parameter whose name is not a valid escape is still
// redacted from the request log, though ReverseProxy does not forward it.
func TestRequestLogRedactsMalformedKeyParam(t *testing.T) {
	up := newCoreUpstream(t, nil)
	e := newCoreEnv(t, up, nil)
	e.do("GET", "/v1/models?key%=sk-secret-1&api_key%zz=sk-secret-2&x=1", nil,
		append(vkHeaders, "x-gateway-trace-id: tr-q")...).Body.Close()
	e.gw.Close()
	recs := e.logs.Query(LogFilter{TraceID: "tr-q"})
	if len(recs) != 1 {
		t.Fatalf("got %d records, want 1", len(recs))
	}
	if strings.Contains(recs[0].Query, "sk-secret") {
		t.Errorf("logged query %q holds a secret", recs[0].Query)
	}
}

// The exported stages run in front of a Gateway (a host protecting its
// whole mux) hand it what they found: the key they authenticated (whose
// header they removed) and the trace id they echoed.
func TestStagesComposedInFrontOfGateway(t *testing.T) {
	up := newCoreUpstream(t, nil)
	e := newCoreEnv(t, up, nil)
	outer := make(chan string, 1)
	srv := httptest.NewServer(Trace(Authenticate(e.store)(ParseHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := TraceIDFrom(r.Context())
		outer <- id
		e.gw.ServeHTTP(w, r)
	})))))
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/v1/models", nil)
	req.Header.Set(HeaderAPIKey, coreKey)
	req.Header.Set(HeaderVirtualKey, "vk-up")
	req.Header.Set(HeaderMetadata, `{"_user":"u1"}`)
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	id := <-outer
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", res.StatusCode)
	}
	if got := res.Header.Values(HeaderTraceID); len(got) != 1 || got[0] != id {
		t.Errorf("x-gateway-trace-id = %q, want [%s] as the host saw it", got, id)
	}
	e.gw.Close()
	recs := e.logs.Query(LogFilter{TraceID: id})
	if len(recs) != 1 || recs[0].KeyID != "key-member" || recs[0].Metadata["_user"] != "u1" || recs[0].Path != "/v1/models" {
		t.Errorf("log records for %s = %+v, want one of key-member, _user u1, /v1/models", id, recs)
	}
}

// An in-process call made with the context of a request the gateway's
// stages already saw is a request of its own: its own key is checked.
func TestInProcessCallInsideRequestAuthenticatesItself(t *testing.T) {
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"object":"list","data":[]}`)
	})
	e := newCoreEnv(t, up, nil)
	errs := make(chan error, 2)
	srv := httptest.NewServer(Trace(Authenticate(e.store)(ParseHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := e.gw.ListFiles(r.Context(), "", Caller{APIKey: "gw-wrong", VirtualKey: "vk-up"})
		errs <- err
		_, err = e.gw.ListFiles(r.Context(), "", Caller{APIKey: coreKey, VirtualKey: "vk-up"})
		errs <- err
	})))))
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/anything", nil)
	req.Header.Set(HeaderAPIKey, coreAdminKey)
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var ge *Error
	if err := <-errs; !errors.As(err, &ge) || ge.Code != CodeInvalidAPIKey {
		t.Errorf("call with a wrong key: error %v, want invalid_api_key", err)
	}
	if err := <-errs; err != nil {
		t.Errorf("call with a valid key: %v", err)
	}
}

// ParseHeaders alone in front of a Gateway leaves the gateway key for the
// Gateway's own authentication.
func TestParseHeadersAloneInFrontOfGateway(t *testing.T) {
	up := newCoreUpstream(t, nil)
	e := newCoreEnv(t, up, nil)
	srv := httptest.NewServer(Trace(ParseHeaders(e.gw)))
	defer srv.Close()
	for key, want := range map[string]int{coreKey: http.StatusOK, "gw-wrong": http.StatusUnauthorized} {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/models", nil)
		req.Header.Set(HeaderAPIKey, key)
		req.Header.Set(HeaderVirtualKey, "vk-up")
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("key %s: status %d, want %d", key, res.StatusCode, want)
		}
	}
}

// TestLimitsInFrontOfGateway composes the stages by hand, Limits included,
// in front of a Gateway that has the same policies: each request counts
// once (the Gateway does not apply the policies again), the Gateway's own
// refusals are refunded to the host's Limits stage, and the 429 comes from
// that stage.
func TestLimitsInFrontOfGateway(t *testing.T) {
	up := newCoreUpstream(t, nil)
	store := &testStore{}
	store.AddAPIKey(APIKey{ID: "k", Digest: HashAPIKey(coreKey), WorkspaceID: "ws-1"})
	store.AddVirtualKey(VirtualKey{Slug: "vk-up", Provider: "openai", APIKey: "sk", BaseURL: up.URL + "/v1", WorkspaceID: "ws-1"})
	store.PutPolicy(t.Context(), &RateLimitsPolicy{ID: "7d1e0000-0000-4000-8000-000000000009", WorkspaceID: "ws-1",
		GroupBy: []PolicyGroupBy{{Key: "api_key"}}, Type: PolicyRequests, Unit: PolicyPerHour, Value: 2, Status: PolicyActive})
	limiter := &MemoryLimiter{}
	g := New(Options{Keys: store, VirtualKeys: store, Policies: store, Limiter: limiter})
	t.Cleanup(func() { g.Close() })
	h := Chain(Trace, Authenticate(store), ParseHeaders, Limits(store, limiter, nil))(g)

	send := func(vk string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
		req.Header.Set(HeaderAPIKey, coreKey)
		req.Header.Set(HeaderVirtualKey, vk)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	var got []int
	for _, vk := range []string{"no-such-key", "no-such-key", "vk-up", "vk-up", "vk-up"} {
		got = append(got, send(vk).Code)
	}
	want := []int{400, 400, 200, 200, 429}
	if !slices.Equal(got, want) {
		t.Errorf("statuses %v, want %v: two refunded refusals, then a policy of 2 per hour counted once per request", got, want)
	}
	if n := len(up.received()); n != 2 {
		t.Errorf("the provider saw %d requests, want 2", n)
	}
}
