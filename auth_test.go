package gateway

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAuthenticate(t *testing.T) {
	up := newCoreUpstream(t, nil)
	e := newCoreEnv(t, up, nil)
	e.store.AddAPIKey(APIKey{ID: "key-off", Digest: HashAPIKey("gw-disabled"), WorkspaceID: "ws-1", Disabled: true})
	tests := []struct {
		name    string
		headers []string
		status  int
		code    string
	}{
		{"missing", nil, 401, CodeMissingAPIKey},
		{"empty", []string{"x-gateway-api-key: "}, 401, CodeMissingAPIKey},
		{"unknown", []string{"x-gateway-api-key: gw-nope"}, 401, CodeInvalidAPIKey},
		{"disabled", []string{"x-gateway-api-key: gw-disabled"}, 401, CodeInvalidAPIKey},
		{"sent twice", []string{"x-gateway-api-key: " + coreKey, "x-gateway-api-key: " + coreKey}, 401, CodeInvalidAPIKey},
		{"valid", []string{"x-gateway-api-key: " + coreKey}, 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/v1/models", "/v1/completions", "/v1/policies/rate-limits", "/elsewhere"} {
				res := e.do("GET", path, nil, append(tc.headers, "x-gateway-virtual-key: vk-up")...)
				if tc.status == 200 {
					if res.StatusCode == 401 {
						t.Errorf("%s: valid key refused", path)
					}
					continue
				}
				if res.StatusCode != tc.status {
					t.Fatalf("%s: status = %d, want %d", path, res.StatusCode, tc.status)
				}
				if got := deref(decodeError(t, res).Error.Code); got != tc.code {
					t.Errorf("%s: code = %s, want %s", path, got, tc.code)
				}
			}
		})
	}
	// The gateway key never reaches the provider.
	for _, r := range up.received() {
		if r.Header.Get(HeaderAPIKey) != "" {
			t.Error("provider received the gateway API key")
		}
	}
}

func TestAuthenticateMiddleware(t *testing.T) {
	st := &testStore{}
	st.AddAPIKey(APIKey{ID: "k1", Digest: HashAPIKey("gw-1"), WorkspaceID: "ws", Role: RoleAdmin,
		Metadata: map[string]string{"_environment": "prod"}, DefaultConfig: "pc-1"})
	var got Identity
	var gotTrace string
	h := Trace(Authenticate(st)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = IdentityFrom(r.Context())
		gotTrace, _ = TraceIDFrom(r.Context())
	})))
	req := httptest.NewRequest("GET", "/x", nil)
	req.Header.Set("x-gateway-api-key", "gw-1")
	req.Header.Set("x-gateway-trace-id", "t-1")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	want := Identity{KeyID: "k1", WorkspaceID: "ws", Role: RoleAdmin, Scopes: RoleScopes(RoleAdmin), Metadata: map[string]string{"_environment": "prod"}, DefaultConfig: "pc-1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("identity mismatch (-want +got):\n%s", diff)
	}
	if gotTrace != "t-1" || rec.Header().Get(HeaderTraceID) != "t-1" {
		t.Errorf("trace id = %q, response header %q; want t-1", gotTrace, rec.Header().Get(HeaderTraceID))
	}
	if _, ok := IdentityFrom(context.Background()); ok {
		t.Error("IdentityFrom(empty context) reported an identity")
	}
	// A nil KeyStore refuses everything.
	rec = httptest.NewRecorder()
	Authenticate(nil)(http.NotFoundHandler()).ServeHTTP(rec, req)
	if rec.Code != 401 {
		t.Errorf("nil KeyStore: status %d, want 401", rec.Code)
	}
}

func TestParseKeyDigest(t *testing.T) {
	d := HashAPIKey("gw-1")
	got, err := ParseKeyDigest(hex.EncodeToString(d[:]))
	if err != nil || got != d {
		t.Fatalf("ParseKeyDigest(hex of digest) = %x, %v; want %x", got, err, d)
	}
	for _, bad := range []string{"", "zz", "f0e8", hex.EncodeToString(d[:]) + "00"} {
		if _, err := ParseKeyDigest(bad); err == nil {
			t.Errorf("ParseKeyDigest(%q) accepted", bad)
		}
	}
}

// downKeys is a KeyStore that is down.
type downKeys struct{}

func (downKeys) APIKey(context.Context, [32]byte) (*APIKey, error) {
	return nil, errors.New("key store down at 10.0.0.9:5432")
}

// TestKeyStoreDown: a failing KeyStore is a 500 that names no internal
// address, and the failure reaches Options.ErrorLog.
func TestKeyStoreDown(t *testing.T) {
	var logged bytes.Buffer
	g := New(Options{Keys: downKeys{}, ErrorLog: slog.New(slog.NewTextHandler(&logged, nil))})
	defer g.Close()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/v1/models", nil)
	req.Header.Set(HeaderAPIKey, coreKey)
	g.ServeHTTP(rec, req)
	if rec.Code != 500 || strings.Contains(rec.Body.String(), "10.0.0.9") {
		t.Errorf("got %d %s; want a 500 without the store's address", rec.Code, rec.Body)
	}
	if !strings.Contains(logged.String(), "key store down") {
		t.Errorf("ErrorLog got %q; want the store's failure", logged.String())
	}
}

// downStores is a VirtualKeyStore and ConfigStore that are down.
type downStores struct{}

func (downStores) VirtualKey(context.Context, string) (*VirtualKey, error) {
	return nil, errors.New("virtual key store down at 10.0.0.9:5432")
}

func (downStores) Config(context.Context, string) (*SavedConfig, error) {
	return nil, errors.New("config store down at 10.0.0.9:5432")
}

// TestSelectionStoreDown: a failing VirtualKeyStore or ConfigStore is a 500
// that names no internal address, and the failure reaches Options.ErrorLog.
func TestSelectionStoreDown(t *testing.T) {
	for _, tc := range []struct{ header, value, want string }{
		{HeaderVirtualKey, "vk-1", "virtual key store down"},
		{HeaderConfig, "pc-1", "config store down"},
	} {
		t.Run(tc.header, func(t *testing.T) {
			var logged bytes.Buffer
			store := &testStore{}
			store.AddAPIKey(APIKey{ID: "k", Digest: HashAPIKey(coreKey), WorkspaceID: "ws-1"})
			g := New(Options{Keys: store, VirtualKeys: downStores{}, Configs: downStores{},
				ErrorLog: slog.New(slog.NewTextHandler(&logged, nil))})
			defer g.Close()
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("GET", "/v1/models", nil)
			req.Header.Set(HeaderAPIKey, coreKey)
			req.Header.Set(tc.header, tc.value)
			g.ServeHTTP(rec, req)
			if rec.Code != 500 || strings.Contains(rec.Body.String(), "10.0.0.9") {
				t.Errorf("got %d %s; want a 500 without the store's address", rec.Code, rec.Body)
			}
			if !strings.Contains(logged.String(), tc.want) {
				t.Errorf("ErrorLog got %q; want the store's failure", logged.String())
			}
		})
	}
}
