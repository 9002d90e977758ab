package gateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var vkHeaders = []string{"x-gateway-api-key: " + coreKey, "x-gateway-virtual-key: vk-up"}

func TestPassThroughUnchanged(t *testing.T) {
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-custom")
		w.Header().Set("X-Provider-Request-Id", "req-123")
		w.Header().Add("Set-Cookie", "a=1")
		w.Header().Add("Set-Cookie", "b=2")
		w.Header().Set("Connection", "x-hop")
		w.Header().Set("X-Hop", "dropped")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "provider body for "+r.Method)
	})
	e := newCoreEnv(t, up, nil)
	for _, method := range []string{"GET", "POST", "PUT", "DELETE"} {
		t.Run(method, func(t *testing.T) {
			res := e.do(method, "/v1/assistants/asst%2F1/files?limit=2&order=asc", strings.NewReader("payload"),
				append(vkHeaders, "Content-Type: application/json", "X-Not-Forwarded: secret", "OpenAI-Beta: assistants=v2")...)
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != 201 || string(b) != "provider body for "+method {
				t.Fatalf("got %d %q; want 201 %q", res.StatusCode, b, "provider body for "+method)
			}
			if diff := cmp.Diff([]string{"a=1", "b=2"}, res.Header.Values("Set-Cookie")); diff != "" {
				t.Errorf("Set-Cookie (-want +got):\n%s", diff)
			}
			if res.Header.Get("X-Provider-Request-Id") != "req-123" || res.Header.Get("Content-Type") != "application/x-custom" {
				t.Errorf("provider headers not returned: %v", res.Header)
			}
			if res.Header.Get("X-Hop") != "" {
				t.Error("hop-by-hop header named in Connection was returned")
			}
			got := up.received()
			r := got[len(got)-1]
			want := coreReceived{Method: method, Path: "/v1/assistants/asst/1/files", RawPath: "/v1/assistants/asst%2F1/files", Query: "limit=2&order=asc", Body: "payload"}
			if diff := cmp.Diff(want, r, cmpIgnoreHeader); diff != "" {
				t.Errorf("provider received (-want +got):\n%s", diff)
			}
			if r.Header.Get("X-Not-Forwarded") != "" {
				t.Error("a header not in the forward list reached the provider")
			}
			if r.Header.Get("Openai-Beta") != "assistants=v2" || r.Header.Get("Content-Type") != "application/json" {
				t.Errorf("well-known headers missing: %v", r.Header)
			}
		})
	}
	res := e.do("PATCH", "/v1/anything", nil, vkHeaders...)
	if res.StatusCode != 405 || res.Header.Get("Allow") != "GET, POST, PUT, DELETE" {
		t.Errorf("PATCH: status %d Allow %q; want 405 with Allow", res.StatusCode, res.Header.Get("Allow"))
	}
	res = e.do("GET", "/outside", nil, vkHeaders...)
	if res.StatusCode != 404 || decodeError(t, res).Error.Type != TypeNotFound {
		t.Errorf("path outside the prefix: status %d, want 404", res.StatusCode)
	}
}

var cmpIgnoreHeader = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Header" }, cmp.Ignore())

func TestForwardHeaders(t *testing.T) {
	up := newCoreUpstream(t, nil)
	e := newCoreEnv(t, up, nil)
	e.do("POST", "/v1/chat/completions", strings.NewReader("{}"),
		append(vkHeaders, "x-gateway-forward-headers: x-trace, X-Team", "X-Trace: abc", "X-Team:  a  b ", "X-Other: no")...)
	r := up.received()[0]
	if r.Header.Get("X-Trace") != "abc" || r.Header.Get("X-Team") != "a  b" || r.Header.Get("X-Other") != "" {
		t.Errorf("forwarded headers = %v", r.Header)
	}

	// User-Agent goes only when named: by default the provider sees none,
	// neither the caller's nor Go's.
	e.do("POST", "/v1/chat/completions", strings.NewReader("{}"), append(vkHeaders, "User-Agent: internal-billing/2.3")...)
	e.do("POST", "/v1/chat/completions", strings.NewReader("{}"),
		append(vkHeaders, "User-Agent: internal-billing/2.3", "x-gateway-forward-headers: user-agent")...)
	got := up.received()
	if ua, ok := got[1].Header["User-Agent"]; ok {
		t.Errorf("User-Agent not forwarded reached the provider as %q", ua)
	}
	if ua := got[2].Header.Get("User-Agent"); ua != "internal-billing/2.3" {
		t.Errorf("forwarded User-Agent = %q, want the caller's", ua)
	}
}

func TestProviderErrorReturnedAsSent(t *testing.T) {
	body := `{"error":{"message":"The model does not exist","type":"invalid_request_error","param":"model","code":"model_not_found"}}`
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(404)
		io.WriteString(w, body)
	})
	e := newCoreEnv(t, up, nil)
	res := e.do("POST", "/v1/chat/completions", strings.NewReader("{}"), vkHeaders...)
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 404 || string(b) != body {
		t.Errorf("got %d %s; want the provider's 404 unchanged", res.StatusCode, b)
	}
}

func TestSSEIncrementalDelivery(t *testing.T) {
	release := make(chan struct{})
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"n\":1}\n\n")
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, "data: {\"n\":2}\n\ndata: [DONE]\n\n")
	})
	e := newCoreEnv(t, up, nil)
	res := e.do("POST", "/v1/chat/completions", strings.NewReader(`{"stream":true}`), vkHeaders...)
	br := bufio.NewReader(res.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "data: {\"n\":1}\n" {
		t.Fatalf("first event = %q, %v", line, err)
	}
	// The first event arrived while the provider is still holding the second.
	close(release)
	rest, _ := io.ReadAll(br)
	if string(rest) != "\ndata: {\"n\":2}\n\ndata: [DONE]\n\n" {
		t.Errorf("rest of stream = %q", rest)
	}
}

func TestClientGoneCancelsUpstream(t *testing.T) {
	cancelled := make(chan struct{})
	started := make(chan struct{})
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
		close(cancelled)
	})
	e := newCoreEnv(t, up, nil)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/v1/models", nil)
	req.Header.Set("x-gateway-api-key", coreKey)
	req.Header.Set("x-gateway-virtual-key", "vk-up")
	done := make(chan error, 1)
	go func() {
		res, err := e.srv.Client().Do(req)
		if err == nil {
			res.Body.Close()
		}
		done <- err
	}()
	<-started
	cancel()
	<-cancelled
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("client error = %v, want context.Canceled", err)
	}
}

func TestUpstreamFailureMidStreamAbortsClient(t *testing.T) {
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"n\":1}\n\n")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
	e := newCoreEnv(t, up, nil)
	res := e.do("POST", "/v1/chat/completions", strings.NewReader("{}"), vkHeaders...)
	b, err := io.ReadAll(res.Body)
	if err == nil {
		t.Fatalf("stream ended cleanly after %q; want the connection aborted", b)
	}
	if string(b) != "data: {\"n\":1}\n\n" {
		t.Errorf("received %q before the abort", b)
	}
	e.gw.Close()
	logs := e.logs.Query(LogFilter{})
	if len(logs) != 1 || !logs[0].Aborted {
		t.Errorf("log records = %+v; want one aborted record", logs)
	}
}

func TestUpstreamUnreachable(t *testing.T) {
	base := deadUpstream(t)
	addr := strings.TrimPrefix(base, "http://")
	e := newCoreEnv(t, nil, nil)
	e.store.AddVirtualKey(VirtualKey{Slug: "vk-dead", Provider: "openai", APIKey: "sk-dead", BaseURL: base + "/v1"})
	res := e.do("GET", "/v1/models", nil, "x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-dead")
	if res.StatusCode != 502 {
		t.Fatalf("status %d, want 502", res.StatusCode)
	}
	body := decodeError(t, res)
	if deref(body.Error.Code) != CodeUpstreamUnreachable || body.Error.Type != TypeGateway {
		t.Errorf("error = %+v", body.Error)
	}
	if strings.Contains(body.Error.Message, "127.0.0.1") || strings.Contains(body.Error.Message, addr) {
		t.Errorf("message leaks the internal address: %s", body.Error.Message)
	}
}

// TestLargeUploadStreams sends 1 GiB through the gateway and checks the
// heap stays within a few MiB: the body is streamed, never buffered.
func TestLargeUploadStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("1 GiB upload skipped in -short mode")
	}
	const size = 1 << 30
	var got int64
	upDone := make(chan struct{})
	up := newCoreUpstream(t, nil)
	up.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.Copy(io.Discard, r.Body)
		close(upDone)
		io.WriteString(w, "ok")
	})
	e := newCoreEnv(t, up, nil)
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)

	stop := make(chan struct{})
	var peak uint64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peak {
					peak = m.HeapInuse
				}
			}
		}
	}()
	res := e.do("POST", "/v1/files", io.LimitReader(zeroReader{}, size), append(vkHeaders, "Content-Type: application/octet-stream")...)
	io.Copy(io.Discard, res.Body)
	close(stop)
	wg.Wait()
	<-upDone
	if res.StatusCode != 200 || got != size {
		t.Fatalf("status %d, provider read %d bytes; want 200 and %d", res.StatusCode, got, size)
	}
	growth := int64(peak) - int64(base.HeapInuse)
	t.Logf("heap in use grew by %.1f MiB while streaming 1 GiB", float64(growth)/(1<<20))
	if growth > 16<<20 {
		t.Errorf("heap grew by %d MiB; the body was buffered", growth>>20)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// recordingNet is an injected resolver and dialer that never touches the
// network for names: it answers from a table and records every dial.
type recordingNet struct {
	mu    sync.Mutex
	hosts map[string][]netip.Addr
	dials []string
	real  bool // dial loopback addresses for real
}

func (n *recordingNet) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if a, ok := n.hosts[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (n *recordingNet) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	n.mu.Lock()
	n.dials = append(n.dials, addr)
	n.mu.Unlock()
	host, _, _ := net.SplitHostPort(addr)
	if a, err := netip.ParseAddr(host); n.real && err == nil && a == netip.MustParseAddr("127.0.0.1") {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	return nil, errors.New("test dialer: refused " + addr)
}

func (n *recordingNet) dialed() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.dials...)
}

func TestCustomHostGuard(t *testing.T) {
	up := newCoreUpstream(t, nil)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(up.URL, "http://"))
	rn := &recordingNet{real: true, hosts: map[string][]netip.Addr{
		"internal.test":   {netip.MustParseAddr("10.0.0.7")},
		"metadata.test":   {netip.MustParseAddr("169.254.169.254")},
		"mixed.test":      {netip.MustParseAddr("8.8.8.8"), netip.MustParseAddr("192.168.1.1")},
		"public.test":     {netip.MustParseAddr("8.8.8.8")},
		"mapped.test":     {netip.MustParseAddr("::ffff:127.0.0.1")},
		"allowed.test":    {netip.MustParseAddr("127.0.0.1")},
		"rebinding.test":  {netip.MustParseAddr("127.0.0.1")},
		"loopback6.test":  {netip.MustParseAddr("::1")},
		"cgnat.test":      {netip.MustParseAddr("100.64.1.1")},
		"unspecified.tst": {netip.MustParseAddr("0.0.0.0")},
	}}
	e := newCoreEnv(t, up, func(o *Options) {
		o.CustomHostAllow = []string{"allowed.test:" + port, "127.0.0.1"}
		o.Resolver = rn
		o.DialContext = rn.DialContext
	})
	tests := []struct {
		name   string
		host   string
		status int
		code   string
		dials  []string // addresses the guard dialed
	}{
		{"loopback literal not allowlisted", "http://127.0.0.2:" + port + "/v1", 400, CodeInvalidCustomHost, nil},
		{"private literal", "http://10.1.2.3/v1", 400, CodeInvalidCustomHost, nil},
		{"metadata literal", "http://169.254.169.254/latest", 400, CodeInvalidCustomHost, nil},
		{"mapped loopback literal", "http://[::ffff:127.0.0.2]:" + port, 400, CodeInvalidCustomHost, nil},
		{"ipv6 loopback literal", "http://[::1]:" + port, 400, CodeInvalidCustomHost, nil},
		{"name resolving to private", "http://internal.test/v1", 400, CodeInvalidCustomHost, nil},
		{"name resolving to metadata", "http://metadata.test/v1", 400, CodeInvalidCustomHost, nil},
		{"name with one private address", "https://mixed.test/v1", 400, CodeInvalidCustomHost, nil},
		{"name resolving to mapped loopback", "http://mapped.test:" + port, 400, CodeInvalidCustomHost, nil},
		{"name resolving to ipv6 loopback", "http://loopback6.test:" + port, 400, CodeInvalidCustomHost, nil},
		{"name resolving to CGNAT", "http://cgnat.test/v1", 400, CodeInvalidCustomHost, nil},
		{"name resolving to 0.0.0.0", "http://unspecified.tst/v1", 400, CodeInvalidCustomHost, nil},
		{"user info", "http://user:pass@public.test/v1", 400, CodeInvalidCustomHost, nil},
		{"scheme", "file:///etc/passwd", 400, CodeInvalidCustomHost, nil},
		{"public name dials the checked address", "https://public.test/v1", 502, CodeUpstreamUnreachable, []string{"8.8.8.8:443"}},
		{"allowlisted name", "http://allowed.test:" + port + "/v1", 200, "", []string{"127.0.0.1:" + port}},
		{"allowlisted literal", "http://127.0.0.1:" + port + "/v1", 200, "", []string{"127.0.0.1:" + port}},
		{"same address under another name", "http://rebinding.test:" + port + "/v1", 400, CodeInvalidCustomHost, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(rn.dialed())
			res := e.do("GET", "/v1/models", nil, "x-gateway-api-key: "+coreKey, "x-gateway-provider: openai",
				"x-gateway-custom-host: "+tc.host, "Authorization: Bearer sk-caller")
			if res.StatusCode != tc.status {
				b, _ := io.ReadAll(res.Body)
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, b)
			}
			if tc.code != "" {
				body := decodeError(t, res)
				if deref(body.Error.Code) != tc.code {
					t.Errorf("code %s, want %s", deref(body.Error.Code), tc.code)
				}
				for _, leak := range []string{"10.", "169.254", "127.0.0", "192.168", "::1"} {
					if strings.Contains(body.Error.Message, leak) {
						t.Errorf("message leaks an address: %s", body.Error.Message)
					}
				}
			}
			if diff := cmp.Diff(tc.dials, rn.dialed()[before:], cmpEmptyNil); diff != "" {
				t.Errorf("dials (-want +got):\n%s", diff)
			}
		})
	}
	// Inline configs are caller-supplied too.
	res := e.do("GET", "/v1/models", nil, "x-gateway-api-key: "+coreKey,
		`x-gateway-config: {"provider":"openai","custom_host":"http://internal.test/v1"}`)
	if res.StatusCode != 400 || deref(decodeError(t, res).Error.Code) != CodeInvalidCustomHost {
		t.Errorf("inline config with private custom host: status %d, want 400", res.StatusCode)
	}
}

var cmpEmptyNil = cmp.FilterValues(func(a, b []string) bool { return len(a) == 0 && len(b) == 0 }, cmp.Ignore())

func TestRequestLogs(t *testing.T) {
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "0123456789") })
	e := newCoreEnv(t, up, nil)
	e.do("POST", "/v1/chat/completions?api_key=sk-leak&x=1", strings.NewReader("hello"),
		append(vkHeaders, "x-gateway-trace-id: tr-1", `x-gateway-metadata: {"_user":"u1"}`)...)
	e.do("GET", "/v1/models", nil, "x-gateway-api-key: wrong", "x-gateway-trace-id: tr-2")
	e.gw.Close() // drains the log queue
	logs := e.logs.Query(LogFilter{TraceID: "tr-1"})
	if len(logs) != 1 {
		t.Fatalf("got %d records for tr-1, want 1", len(logs))
	}
	got := logs[0]
	if got.Latency <= 0 || got.Time.IsZero() {
		t.Errorf("latency %v time %v; want both set", got.Latency, got.Time)
	}
	if got.ID == "" {
		t.Error("the record has no id")
	}
	if got.TTFB <= 0 || got.TTFB > got.Latency {
		t.Errorf("ttfb %v, latency %v; want 0 < ttfb <= latency", got.TTFB, got.Latency)
	}
	got.Latency, got.Time, got.ID, got.TTFB = 0, time.Time{}, "", 0
	want := RequestLog{TraceID: "tr-1", Metadata: map[string]string{"_user": "u1"}, KeyID: "key-member", WorkspaceID: "ws-1",
		VirtualKey: "vk-up", Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Query: "api_key=REDACTED&x=1", Ingress: "chat_completions", Status: 200,
		BytesIn: 5, BytesOut: 10, CacheStatus: CacheDisabled}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log record (-want +got):\n%s", diff)
	}
	// A request that failed authentication is counted, not logged.
	if bad := e.logs.Query(LogFilter{TraceID: "tr-2"}); len(bad) != 0 {
		t.Errorf("401 records = %+v, want none", bad)
	}
	if f := e.gw.AuthFailures(); f.Invalid != 1 {
		t.Errorf("AuthFailures = %+v, want 1 invalid", f)
	}
	if n := len(e.logs.Query(LogFilter{Metadata: map[string]string{"_user": "u1"}})); n != 1 {
		t.Errorf("metadata filter matched %d records, want 1", n)
	}
	if n := len(e.logs.Query(LogFilter{Metadata: map[string]string{"_user": "u2"}})); n != 0 {
		t.Errorf("metadata filter for u2 matched %d records, want 0", n)
	}
}

func TestLogBufferRing(t *testing.T) {
	b := &LogBuffer{Size: 3}
	for i := 0; i < 5; i++ {
		b.Log(&RequestLog{TraceID: string(rune('a' + i))})
	}
	var ids []string
	for _, r := range b.Query(LogFilter{}) {
		ids = append(ids, r.TraceID)
	}
	if diff := cmp.Diff([]string{"c", "d", "e"}, ids); diff != "" {
		t.Errorf("kept records (-want +got):\n%s", diff)
	}
}

// answerFirst is a provider transport that behaves like http.Transport
// when a provider answers quickly: it reads the body up to its declared
// Content-Length and starts the answer, and only then reads the body once
// more to check that nothing follows; an error on that last read tears down
// the connection and cuts the answer. It makes that read after the client
// holds the first event (clientHasFirst), and reports it on read.
type answerFirst struct {
	clientHasFirst chan struct{}
	read           chan bodyRead
}

type bodyRead struct {
	n   int64
	err error
}

func (a *answerFirst) RoundTrip(req *http.Request) (*http.Response, error) {
	n, err := io.CopyN(io.Discard, req.Body, req.ContentLength)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	go func() {
		io.WriteString(pw, "data: {\"n\":1}\n\n")
		<-a.clientHasFirst
		m, err := io.Copy(io.Discard, req.Body) // nil err: io.EOF reached
		a.read <- bodyRead{n + m, err}
		if err != nil {
			pw.CloseWithError(err) // what http.Transport does: the connection is closed
			return
		}
		io.WriteString(pw, "data: {\"n\":2}\n\ndata: [DONE]\n\n")
		pw.Close()
	}()
	return &http.Response{StatusCode: 200, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: pr, ContentLength: -1, Request: req}, nil
}

// hiddenWriter hides the http.ResponseController methods of the writer it
// wraps, as some host middlewares do.
type hiddenWriter struct{ w http.ResponseWriter }

func (h hiddenWriter) Header() http.Header         { return h.w.Header() }
func (h hiddenWriter) Write(p []byte) (int, error) { return h.w.Write(p) }
func (h hiddenWriter) WriteHeader(code int)        { h.w.WriteHeader(code) }
func (h hiddenWriter) Flush()                      { h.w.(http.Flusher).Flush() }

// TestBodyStillReadableOnceAnswerStarted covers https://go.dev/issue/40747:
// an HTTP/1 server drains and closes a request body when the handler starts
// its answer, and http.Transport reads the body once more after that. The
// stream must come through whole, and the provider must get the whole body.
func TestBodyStillReadableOnceAnswerStarted(t *testing.T) {
	const size = 64
	for _, tc := range []struct {
		name string
		hide bool // the host wraps the writer without Unwrap
	}{
		{name: "gateway mounted as is"},
		{name: "behind a host wrapper", hide: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &answerFirst{clientHasFirst: make(chan struct{}), read: make(chan bodyRead, 1)}
			e := newCoreEnv(t, newCoreUpstream(t, nil), func(o *Options) { o.Transport = tr })
			if tc.hide {
				e.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					e.gw.ServeHTTP(hiddenWriter{w}, r)
				})
			}
			res := e.do("POST", "/v1/chat/completions", bytes.NewReader(make([]byte, size)), vkHeaders...)
			br := bufio.NewReader(res.Body)
			if ev, err := br.ReadString('\n'); err != nil || ev != "data: {\"n\":1}\n" {
				t.Fatalf("first event %q, %v", ev, err)
			}
			close(tr.clientHasFirst)
			got := <-tr.read
			if got.err != nil || got.n != size {
				t.Errorf("the provider read %d bytes of the body, then %v; want %d and io.EOF", got.n, got.err, size)
			}
			rest, err := io.ReadAll(br)
			if err != nil || string(rest) != "\ndata: {\"n\":2}\n\ndata: [DONE]\n\n" {
				t.Errorf("rest of the stream %q, %v; want the two last events and a clean end", rest, err)
			}
		})
	}
}

// TestUncleanPathsNotRedirected: a path with empty, . or .. segments, or
// the bare prefix, is an OpenAI-shaped 404 rather than the redirect of
// http.ServeMux, which clients follow with a GET and no body.
func TestUncleanPathsNotRedirected(t *testing.T) {
	up := newCoreUpstream(t, nil)
	e := newCoreEnv(t, up, nil)
	for _, p := range []string{"/v1//chat/completions", "/v1/./chat/completions", "/v1/x/../chat/completions", "/v1"} {
		t.Run(p, func(t *testing.T) {
			res := e.do("POST", p, strings.NewReader(`{}`), vkHeaders...)
			if res.StatusCode != 404 || decodeError(t, res).Error.Type != TypeNotFound {
				t.Errorf("status %d, want an OpenAI-shaped 404", res.StatusCode)
			}
		})
	}
	if n := len(up.received()); n != 0 {
		t.Errorf("the provider received %d requests, want none", n)
	}
}

func TestRootPrefix(t *testing.T) {
	up := newCoreUpstream(t, nil)
	e := newCoreEnv(t, up, func(o *Options) { o.Prefix = "/" })
	res := e.do("POST", "/chat/completions?x=1", strings.NewReader(`{}`), vkHeaders...)
	if res.StatusCode != 200 {
		t.Fatalf("status %d, want 200", res.StatusCode)
	}
	got := up.received()
	if len(got) != 1 || got[0].Path != "/v1/chat/completions" || got[0].Query != "x=1" {
		t.Errorf("provider received %+v, want POST /v1/chat/completions?x=1", got)
	}
}

// TestHeadOnTypedRoutes: http.ServeMux matches HEAD to GET patterns; the
// typed GET routes still refuse it, as every other path does.
func TestHeadOnTypedRoutes(t *testing.T) {
	up := newCoreUpstream(t, nil)
	e := newCoreEnv(t, up, nil)
	for _, p := range []string{"/v1/files", "/v1/fine_tuning/jobs", "/v1/fine_tuning/jobs/ftjob-1", "/v1/models"} {
		t.Run(p, func(t *testing.T) {
			res := e.do("HEAD", p, nil, vkHeaders...)
			if res.StatusCode != 405 || res.Header.Get("Allow") != "GET, POST, PUT, DELETE" {
				t.Errorf("status %d, Allow %q; want 405 with Allow: GET, POST, PUT, DELETE", res.StatusCode, res.Header.Get("Allow"))
			}
		})
	}
	if n := len(up.received()); n != 0 {
		t.Errorf("the provider received %d requests, want none", n)
	}
}
