package gateway

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestConnectionListedHeadersNotForwarded: a header the caller's
// Connection header names is hop-by-hop (RFC 9110, section 7.6.1), so it
// never reaches the provider, though the forward-headers list names it,
// though it is one of the provider's well-known headers, and though it is
// one of the headers that always go.
func TestConnectionListedHeadersNotForwarded(t *testing.T) {
	up := newCoreUpstream(t, nil)
	e := newCoreEnv(t, up, nil)
	sent := []string{"x-gateway-forward-headers: X-Fwd-A, X-Fwd-B", "X-Fwd-A: a", "X-Fwd-B: b",
		"OpenAI-Beta: assistants=v2", "OpenAI-Organization: org-1", "Idempotency-Key: idem-1"}
	tests := []struct {
		name       string
		connection []string // the caller's Connection lines
		want       []string // of the headers sent, those that reach the provider
	}{
		{"no Connection header", nil,
			[]string{"Idempotency-Key", "Openai-Beta", "Openai-Organization", "X-Fwd-A", "X-Fwd-B"}},
		{"a forwarded header", []string{"close, X-Fwd-A"},
			[]string{"Idempotency-Key", "Openai-Beta", "Openai-Organization", "X-Fwd-B"}},
		{"a provider's well-known header", []string{"OpenAI-Beta"},
			[]string{"Idempotency-Key", "Openai-Organization", "X-Fwd-A", "X-Fwd-B"}},
		{"a header that always goes", []string{"idempotency-key"},
			[]string{"Openai-Beta", "Openai-Organization", "X-Fwd-A", "X-Fwd-B"}},
		{"several lines, any case, empty elements", []string{"keep-alive", " ,x-fwd-b ,,\tOPENAI-ORGANIZATION"},
			[]string{"Idempotency-Key", "Openai-Beta", "X-Fwd-A"}},
		{"options that name no header sent", []string{"close", "X-Fwd"},
			[]string{"Idempotency-Key", "Openai-Beta", "Openai-Organization", "X-Fwd-A", "X-Fwd-B"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := append(append([]string(nil), vkHeaders...), sent...)
			for _, c := range tt.connection {
				h = append(h, "Connection: "+c)
			}
			res := e.do("POST", "/v1/chat/completions", strings.NewReader("{}"), h...)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d, want 200", res.StatusCode)
			}
			got := up.received()
			r := got[len(got)-1]
			var reached []string
			for _, n := range []string{"Idempotency-Key", "Openai-Beta", "Openai-Organization", "X-Fwd-A", "X-Fwd-B"} {
				if _, ok := r.Header[n]; ok {
					reached = append(reached, n)
				}
			}
			if d := cmp.Diff(tt.want, reached); d != "" {
				t.Errorf("headers that reached the provider (-want +got):\n%s", d)
			}
		})
	}
}

// TestUpstreamHeaderAllocs: honouring the caller's Connection header costs
// upstreamHeader, on the hot path, no allocation.
func TestUpstreamHeaderAllocs(t *testing.T) {
	forward := []string{"X-Fwd-A", "X-Fwd-B"}
	plain := http.Header{"Content-Type": {"application/json"}, "Accept": {"*/*"}, "X-Fwd-A": {"a"}, "X-Fwd-B": {"b"}}
	withConn := plain.Clone()
	withConn["Connection"] = []string{"keep-alive, X-Fwd-A", "te"}
	base := testing.AllocsPerRun(100, func() { upstreamHeader(plain, forward) })
	if n := testing.AllocsPerRun(100, func() { upstreamHeader(withConn, forward) }); n != base {
		t.Errorf("upstreamHeader allocates %v times with a Connection header, %v without; want no more", n, base)
	}
	if _, ok := upstreamHeader(withConn, forward)["X-Fwd-A"]; ok {
		t.Error("upstreamHeader kept X-Fwd-A, which the Connection header lists")
	}
}
