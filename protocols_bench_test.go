package gateway

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkIngressRequest: the gateway's cost of sending one agents'
// request to a chat target (the translation and its wiring), per
// direction.
func BenchmarkIngressRequest(b *testing.B) {
	t := &Target{Provider: "groq", APIKey: "k"}
	prov := OpenAICompatible("https://example.com/v1")
	for _, c := range []struct {
		name string
		in   *ingress
		body string
	}{
		{"messages", &ingress{kind: ingressMessage}, claudeCodeBody},
		{"responses", &ingress{kind: ingressResponse, respID: "resp_1"}, codexBody},
	} {
		b.Run(c.name, func(b *testing.B) {
			body := []byte(c.body)
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := c.in.translate(prov, t, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkIngressStreamEvent: the cost of one chat chunk of a streamed
// answer translated back to Messages or Responses events, read as the
// caller's proxy reads it.
func BenchmarkIngressStreamEvent(b *testing.B) {
	const chunk = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi"}}]}` + "\n\n"
	t := &Target{Provider: "groq", APIKey: "k"}
	prov := OpenAICompatible("https://example.com/v1")
	for _, c := range []struct {
		name string
		in   *ingress
		body string
	}{
		{"messages", &ingress{kind: ingressMessage}, strings.Replace(claudeCodeBody, `"max_tokens":1024`, `"max_tokens":1024,"stream":true`, 1)},
		{"responses", &ingress{kind: ingressResponse, respID: "resp_1"}, `{"model":"m","stream":true,"store":false,"input":"hi"}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			tl, _, err := c.in.translate(prov, t, []byte(c.body))
			if err != nil {
				b.Fatal(err)
			}
			const per = 1024
			src := bytes.Repeat([]byte(chunk), per)
			buf := make([]byte, 32<<10)
			var body io.ReadCloser
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if n%(per-1) == 0 {
					b.StopTimer()
					res := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
						Body: io.NopCloser(bytes.NewReader(src)), Request: &http.Request{}}
					if err := tl.Response(res); err != nil {
						b.Fatal(err)
					}
					// The first reads carry the stream's opening events.
					res.Body.Read(buf)
					b.StartTimer()
					body = res.Body
				}
				if _, err := body.Read(buf); err != nil {
					b.Fatal(err)
				}
				n++
			}
		})
	}
}
