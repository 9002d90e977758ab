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

// benchStreamAnswer is a streamed chat completion of 100 chunks and a
// final usage chunk.
var benchStreamAnswer = func() string {
	var sb strings.Builder
	for range 100 {
		sb.WriteString("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"token\"},\"finish_reason\":null}],\"usage\":null}\n\n")
	}
	sb.WriteString("data: {\"id\":\"chatcmpl-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":100,\"total_tokens\":109}}\n\ndata: [DONE]\n\n")
	return sb.String()
}()

// BenchmarkStream compares a streamed answer (100 events written as the
// provider sends them, each flushed) through the whole gateway chain,
// whose request log reads the answer's usage, with the same answer
// through a bare httputil.ReverseProxy.
func BenchmarkStream(b *testing.B) {
	events := strings.SplitAfter(benchStreamAnswer, "\n\n")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		for _, ev := range events {
			io.WriteString(w, ev)
			f.Flush()
		}
	}))
	b.Cleanup(up.Close)
	target, _ := url.Parse(up.URL)
	serve := func(b *testing.B, h http.Handler, headers http.Header) {
		b.ReportAllocs()
		b.SetBytes(int64(len(benchStreamAnswer)))
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				req := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(benchBody))
				for k, v := range headers {
					req.Header[k] = v
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 || rec.Body.Len() != len(benchStreamAnswer) {
					b.Fatalf("status %d, %d bytes", rec.Code, rec.Body.Len())
				}
			}
		})
	}
	b.Run("bare-reverseproxy", func(b *testing.B) {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 1024
		rp := &httputil.ReverseProxy{Transport: tr, FlushInterval: -1, Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
		}}
		serve(b, rp, http.Header{"Content-Type": {"application/json"}})
	})
	b.Run("gateway", func(b *testing.B) {
		st := &testStore{}
		st.AddAPIKey(APIKey{ID: "k", Digest: HashAPIKey("gw-bench"), WorkspaceID: "ws"})
		st.AddVirtualKey(VirtualKey{Slug: "vk", Provider: "openai", APIKey: "sk-up", BaseURL: up.URL + "/v1"})
		g := New(Options{Keys: st, VirtualKeys: st, Configs: st, Policies: st, LogSink: discardSink{}})
		defer g.Close()
		serve(b, g, http.Header{
			"Content-Type":          {"application/json"},
			"X-Gateway-Api-Key":     {"gw-bench"},
			"X-Gateway-Virtual-Key": {"vk"},
		})
	})
}
