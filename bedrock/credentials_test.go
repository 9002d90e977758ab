package bedrock_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/bedrock"
	"github.com/modelgateway/gateway/memstore"
)

// TestStoredKeyPairNeverFollowsCallerHost: a saved config's AWS key pair
// and session token are a stored credential, so a caller's
// x-gateway-custom-host must not receive a request signed with them (nor
// the session token itself). The caller's own key pair may still be used
// there.
func TestStoredKeyPairNeverFollowsCallerHost(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []http.Header
	)
	caller := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(caller.Close)

	f, err := admin.Decode(strings.NewReader(storeJSON))
	if err != nil {
		t.Fatal(err)
	}
	st := memstore.New()
	if err := admin.Apply(context.Background(), f, st); err != nil {
		t.Fatal(err)
	}
	g := gateway.New(gateway.Options{
		Keys: st, VirtualKeys: st, Configs: st, CustomHostAllow: []string{"127.0.0.1"},
		Providers: map[string]gateway.Provider{gateway.ProviderBedrock: bedrock.New(bedrock.Options{Now: func() time.Time { return signTime }})},
	})
	srv := httptest.NewServer(g)
	t.Cleanup(func() {
		srv.Close()
		g.Close()
	})
	e := &env{srv: srv}

	t.Run("stored pair", func(t *testing.T) {
		res, b := e.do(t, http.MethodPost, "/v1"+modelPath, reqBody,
			gateway.HeaderConfig, "pc-bedrock", gateway.HeaderCustomHost, caller.URL)
		mu.Lock()
		got := append([]http.Header(nil), seen...)
		seen = nil
		mu.Unlock()
		for _, h := range got {
			if strings.Contains(h.Get("Authorization"), testStored) || h.Get("X-Amz-Security-Token") != "" {
				t.Fatalf("the caller's host got a request signed with the stored credential: Authorization %q, X-Amz-Security-Token %q",
					h.Get("Authorization"), h.Get("X-Amz-Security-Token"))
			}
		}
		if res.StatusCode != http.StatusBadRequest || len(got) != 0 {
			t.Errorf("status %d body %s, %d request(s) sent; want a 400 asking for the caller's own key pair, nothing sent", res.StatusCode, b, len(got))
		}
	})

	t.Run("caller's own pair", func(t *testing.T) {
		res, b := e.do(t, http.MethodPost, "/v1"+modelPath, reqBody,
			gateway.HeaderConfig, "pc-bedrock", gateway.HeaderCustomHost, caller.URL,
			gateway.HeaderHostCAccessKeyID, testKeyID, gateway.HeaderHostCSecretKey, testSecret)
		mu.Lock()
		got := append([]http.Header(nil), seen...)
		seen = nil
		mu.Unlock()
		if res.StatusCode != http.StatusOK || len(got) != 1 {
			t.Fatalf("status %d body %s, %d request(s) sent; want the caller's host's 200", res.StatusCode, b, len(got))
		}
		if auth := got[0].Get("Authorization"); !strings.Contains(auth, "Credential="+testKeyID+"/") {
			t.Errorf("Authorization %q, want a signature by the caller's own key", auth)
		}
		if tok := got[0].Get("X-Amz-Security-Token"); tok != "" {
			t.Errorf("X-Amz-Security-Token %q sent, want the stored token kept back", tok)
		}
	})
}
