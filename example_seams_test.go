package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
)

// A product contributes its control routes with Handle: they run behind
// the gateway's key check, see the caller's identity, and are never
// rate-limited, routed or request-logged.
func ExampleGateway_Handle() {
	store := memstore.New()
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

// quota is an Admission that refuses the requests of a key whose body
// asks for more than its max_tokens allows, and counts the tokens of the
// others once they are answered.
type quota struct {
	mu   sync.Mutex
	used map[string]int64
}

func (q *quota) Admit(r *http.Request) (func(*gateway.RequestLog), error) {
	k, _ := gateway.APIKeyFrom(r.Context())
	body, err := gateway.RequestBody(r, 1<<20) // read once, handed on to the provider
	if err != nil {
		return nil, err
	}
	var req struct {
		MaxTokens int `json:"max_tokens"`
	}
	json.Unmarshal(body, &req)
	if req.MaxTokens > 100 {
		return nil, &gateway.Error{Status: http.StatusPreconditionFailed, Type: "usage_limit_exceeded",
			Code: "budget_exhausted", Message: k.ID + " may ask for 100 tokens at most"}
	}
	return func(rec *gateway.RequestLog) {
		q.mu.Lock()
		defer q.mu.Unlock()
		q.used[k.ID] += rec.TotalTokens
	}, nil
}

// An Admission decides, after the key check and before routing, whether
// a request goes on; it reads the body and the key's record through
// RequestBody and APIKeyFrom, and is settled from the request's final
// record.
func ExampleAdmission() {
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`)
	}))
	defer provider.Close()
	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "team-a", Digest: gateway.HashAPIKey("gw-secret"), WorkspaceID: "ws-1"})
	store.AddVirtualKey(gateway.VirtualKey{Slug: "up", Provider: "openai", APIKey: "sk-x", BaseURL: provider.URL + "/v1"})
	q := &quota{used: map[string]int64{}}
	g := gateway.New(gateway.Options{Keys: store, VirtualKeys: store, Admissions: []gateway.Admission{q}})

	for _, body := range []string{`{"model":"m","max_tokens":50}`, `{"model":"m","max_tokens":500}`} {
		req := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("x-gateway-api-key", "gw-secret")
		req.Header.Set("x-gateway-virtual-key", "up")
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		fmt.Println(rec.Code)
	}
	g.Close()
	fmt.Println("team-a used", q.used["team-a"], "tokens")
	// Output:
	// 200
	// 412
	// team-a used 7 tokens
}
