package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/modelgateway/gateway"
)

// A product contributes its control routes with Handle: they run behind
// the gateway's key check, see the caller's identity, and are never
// rate-limited, routed or request-logged.
func ExampleGateway_Handle() {
	store := &gateway.MemoryStore{}
	store.AddAPIKey(gateway.APIKey{ID: "team-a", Digest: gateway.HashAPIKey("gw-secret"), WorkspaceID: "ws-1"})
	g := gateway.New(gateway.Options{Keys: store})
	defer g.Close()
	g.Handle("GET /whoami", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := gateway.IdentityFrom(r.Context())
		fmt.Fprintf(w, "%s of %s\n", id.KeyID, id.WorkspaceID)
	}))

	for _, key := range []string{"gw-secret", "gw-wrong"} {
		req := httptest.NewRequest("GET", "/v1/whoami", nil)
		req.Header.Set("x-gateway-api-key", key)
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		body, _ := io.ReadAll(rec.Body)
		if rec.Code != http.StatusOK {
			body = []byte(http.StatusText(rec.Code) + "\n")
		}
		fmt.Print(rec.Code, " ", string(body))
	}
	// Output:
	// 200 team-a of ws-1
	// 401 Unauthorized
}
