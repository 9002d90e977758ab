package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestSmoke(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Up", r.URL.String()+"|"+r.Header.Get("Authorization"))
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	}))
	defer up.Close()
	st := &MemoryStore{}
	st.AddAPIKey(APIKey{ID: "k1", Digest: HashAPIKey("gw-1"), WorkspaceID: "ws"})
	st.AddVirtualKey(VirtualKey{Slug: "vk", Provider: "openai", APIKey: "sk-up", BaseURL: up.URL + "/v1"})
	g := New(Options{Keys: st, VirtualKeys: st})
	srv := httptest.NewServer(g)
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions?x=1", strings.NewReader("hello"))
	req.Header.Set("x-gateway-api-key", "gw-1")
	req.Header.Set("x-gateway-virtual-key", "vk")
	req.Header.Set("Authorization", "Bearer caller")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	t.Logf("%d %q %v", res.StatusCode, b, res.Header)
	_ = url.URL{}
}
