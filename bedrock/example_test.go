package bedrock_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/bedrock"
	"github.com/modelgateway/gateway/memstore"
)

// signedBy is a Transport standing in for Bedrock: it answers every request
// itself, saying where it was sent and how it was signed.
type signedBy struct{}

func (signedBy) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		r.Body.Close()
	}
	auth := r.Header.Get("Authorization")
	auth, _, _ = strings.Cut(auth, ", Signature=")
	body := r.Method + " " + r.URL.String() + "\n" + auth + "\nsession token sent: " + fmt.Sprint(r.Header.Get("X-Amz-Security-Token") != "") + "\n"
	return &http.Response{
		StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"text/plain"}}, ContentLength: int64(len(body)),
		Body: io.NopCloser(strings.NewReader(body)), Request: r,
	}, nil
}

// Registering the Bedrock provider on a gateway, and a request whose
// credentials come in the hostC headers.
func ExampleNew() {
	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "k", Digest: gateway.HashAPIKey("gw-secret"), WorkspaceID: "ws-1"})
	g := gateway.New(gateway.Options{
		Keys:      store,
		Transport: signedBy{},
		Providers: map[string]gateway.Provider{
			gateway.ProviderBedrock: bedrock.New(bedrock.Options{
				Now: func() time.Time { return time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC) },
			}),
		},
	})
	defer g.Close()

	req := httptest.NewRequest("POST", "/v1/model/amazon.nova-micro-v1:0/converse",
		strings.NewReader(`{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-gateway-api-key", "gw-secret")
	req.Header.Set("x-gateway-provider", "bedrock")
	req.Header.Set("x-gateway-hostc-access-key-id", "AKIAIOSFODNN7EXAMPLE")
	req.Header.Set("x-gateway-hostc-secret-access-key", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
	req.Header.Set("x-gateway-hostc-session-token", "session-token")
	req.Header.Set("x-gateway-hostc-region", "eu-central-1")
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, req)
	fmt.Print(rec.Code, " ", rec.Body.String())
	// Output:
	// 200 POST https://bedrock-runtime.eu-central-1.amazonaws.com/model/amazon.nova-micro-v1:0/converse
	// AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20250304/eu-central-1/bedrock/aws4_request, SignedHeaders=content-length;content-type;host;x-amz-date;x-amz-security-token
	// session token sent: true
}
