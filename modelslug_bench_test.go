package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkModelSlug compares a chat completion whose provider is named
// by a virtual key in x-gateway-virtual-key with the same request naming
// it in its model, "@vk/gpt-4o-mini", which the gateway resolves through
// the same lookup and strips in place: the allocations per request
// should be the same.
func BenchmarkModelSlug(b *testing.B) {
	up := benchUpstream(b)
	st := &testStore{}
	st.AddAPIKey(APIKey{ID: "k", Digest: HashAPIKey("gw-bench"), WorkspaceID: "ws"})
	st.AddVirtualKey(VirtualKey{Slug: "vk", Provider: "openai", APIKey: "sk-up", BaseURL: up.URL + "/v1", WorkspaceID: "ws",
		Models: []string{"gpt-4o", "gpt-4o-mini"}})
	g := New(Options{Keys: st, VirtualKeys: st, Configs: st, Policies: st, LogSink: discardSink{}})
	b.Cleanup(func() { g.Close() })
	for _, tc := range []struct {
		name, body string
		header     http.Header
	}{
		{"virtual-key-header", benchBody, http.Header{"X-Gateway-Virtual-Key": {"vk"}}},
		{"model-slug", strings.Replace(benchBody, `"gpt-4o-mini"`, `"@vk/gpt-4o-mini"`, 1), http.Header{}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(tc.body))
					for k, v := range tc.header {
						req.Header[k] = v
					}
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("X-Gateway-Api-Key", "gw-bench")
					rec := httptest.NewRecorder()
					g.ServeHTTP(rec, req)
					if rec.Code != 200 {
						b.Fatalf("status %d: %s", rec.Code, rec.Body)
					}
				}
			})
		})
	}
}
