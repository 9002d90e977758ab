package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
)

const benchBody = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello"}]}`

func benchUpstream(b *testing.B) *httptest.Server {
	b.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}`)
	}))
	b.Cleanup(up.Close)
	return up
}

func benchServe(b *testing.B, h http.Handler, headers http.Header) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(benchBody))
			for k, v := range headers {
				req.Header[k] = v
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 {
				b.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
		}
	})
}

// discardSink is a LogSink that drops every record: the gateway still
// builds and hands over one per request, and the sink's own cost is left
// out of the comparison.
type discardSink struct{}

func (discardSink) Log(*RequestLog) {}

// BenchmarkPassThrough compares a non-streaming request through the whole
// gateway chain (trace, auth, headers, selection, policies lookup,
// pass-through over the gateway's default transport, request logs handed
// to a sink) with the same request through a bare httputil.ReverseProxy,
// on the same instant upstream.
// Compare the ns/op of the sub-benchmarks. "gateway" hands its logs to a
// sink that drops them; "gateway+LogBuffer" keeps them in the in-memory
// LogBuffer, whose 1,000 kept records the garbage collector scans, a cost
// that shows on this benchmark's tiny heap.
func BenchmarkPassThrough(b *testing.B) {
	up := benchUpstream(b)
	target, _ := url.Parse(up.URL)
	b.Run("bare-reverseproxy", func(b *testing.B) {
		// As scripts/bench/benchd's proxy: a pool sized for the load, and
		// ReverseProxy's own buffers.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 1024
		rp := &httputil.ReverseProxy{Transport: tr, Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Header.Set("Authorization", "Bearer sk-up")
		}}
		benchServe(b, rp, http.Header{"Content-Type": {"application/json"}})
	})
	for _, sink := range []struct {
		name string
		sink LogSink
	}{{"gateway", discardSink{}}, {"gateway+LogBuffer", &LogBuffer{}}} {
		b.Run(sink.name, func(b *testing.B) {
			st := &testStore{}
			st.AddAPIKey(APIKey{ID: "k", Digest: HashAPIKey("gw-bench"), WorkspaceID: "ws"})
			st.AddVirtualKey(VirtualKey{Slug: "vk", Provider: "openai", APIKey: "sk-up", BaseURL: up.URL + "/v1"})
			g := New(Options{Keys: st, VirtualKeys: st, Configs: st, Policies: st, LogSink: sink.sink})
			defer g.Close()
			benchServe(b, g, http.Header{
				"Content-Type":          {"application/json"},
				"X-Gateway-Api-Key":     {"gw-bench"},
				"X-Gateway-Virtual-Key": {"vk"},
				"X-Gateway-Metadata":    {`{"_user":"u1"}`},
			})
		})
	}
}
