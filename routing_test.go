package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestProviderSelection(t *testing.T) {
	up := newCoreUpstream(t, nil)
	e := newCoreEnv(t, up, nil)
	e.store.AddVirtualKey(VirtualKey{Slug: "vk-other-ws", Provider: "openai", APIKey: "sk-x", BaseURL: up.URL + "/v1", WorkspaceID: "ws-2"})
	e.store.AddVirtualKey(VirtualKey{Slug: "vk-bad-provider", Provider: "nope", APIKey: "sk-x", BaseURL: up.URL + "/v1", WorkspaceID: "ws-1"})
	e.store.AddConfig(SavedConfig{ID: "pc-vk", Config: json.RawMessage(`{"virtual_key":"vk-up"}`)})
	e.store.AddConfig(SavedConfig{ID: "pc-host", Config: json.RawMessage(`{"provider":"openai","api_key":"sk-from-config","custom_host":"` + up.URL + `/v1"}`)})
	e.store.AddConfig(SavedConfig{ID: "pc-other", WorkspaceID: "ws-2", Config: json.RawMessage(`{"virtual_key":"vk-up"}`)})
	e.store.AddConfig(SavedConfig{ID: "pc-provider-only", Config: json.RawMessage(`{"strategy":{"mode":"single"},"targets":[{"name":"a"}]}`)})
	e.store.AddAPIKey(APIKey{ID: "key-default", Digest: HashAPIKey("gw-default"), WorkspaceID: "ws-1", DefaultConfig: "pc-vk"})

	key := "x-gateway-api-key: " + coreKey
	inline := `x-gateway-config: {"provider":"openai","api_key":"sk-inline","custom_host":"` + up.URL + `/v1"}`
	tests := []struct {
		name    string
		headers []string
		status  int
		code    string
		param   string
		auth    string // Authorization the provider received
	}{
		{"virtual key", []string{key, "x-gateway-virtual-key: vk-up"}, 200, "", "", "Bearer sk-stored-secret"},
		{"virtual key drops caller auth", []string{key, "x-gateway-virtual-key: vk-up", "Authorization: Bearer caller"}, 200, "", "", "Bearer sk-stored-secret"},
		{"unknown virtual key", []string{key, "x-gateway-virtual-key: nope"}, 400, CodeUnknownVirtualKey, HeaderVirtualKey, ""},
		{"virtual key of another workspace", []string{key, "x-gateway-virtual-key: vk-other-ws"}, 403, CodePermissionDenied, HeaderVirtualKey, ""},
		{"virtual key with unknown provider", []string{key, "x-gateway-virtual-key: vk-bad-provider"}, 400, CodeUnknownProvider, HeaderVirtualKey, ""},
		{"virtual key beside provider", []string{key, "x-gateway-virtual-key: vk-up", "x-gateway-provider: openai"}, 400, CodeAmbiguousProvider, HeaderVirtualKey, ""},
		{"virtual key beside custom host", []string{key, "x-gateway-virtual-key: vk-up", "x-gateway-custom-host: " + up.URL}, 400, CodeAmbiguousProvider, HeaderVirtualKey, ""},
		{"virtual key beside config", []string{key, "x-gateway-virtual-key: vk-up", "x-gateway-config: pc-vk"}, 400, CodeAmbiguousProvider, HeaderVirtualKey, ""},
		{"custom host", []string{key, "x-gateway-custom-host: " + up.URL + "/v1", "x-gateway-provider: openai", "Authorization: Bearer sk-caller"}, 200, "", "", "Bearer sk-caller"},
		{"custom host without provider", []string{key, "x-gateway-custom-host: " + up.URL + "/v1"}, 400, CodeMissingProvider, HeaderProvider, ""},
		{"custom host with unknown provider", []string{key, "x-gateway-custom-host: " + up.URL + "/v1", "x-gateway-provider: nope"}, 400, CodeUnknownProvider, HeaderProvider, ""},
		{"custom host not a URL", []string{key, "x-gateway-custom-host: ftp://x", "x-gateway-provider: openai"}, 400, CodeInvalidCustomHost, HeaderCustomHost, ""},
		{"unknown provider", []string{key, "x-gateway-provider: nope", "Authorization: Bearer x"}, 400, CodeUnknownProvider, HeaderProvider, ""},
		{"nothing", []string{key}, 400, CodeMissingProvider, "", ""},
		{"saved config with virtual key", []string{key, "x-gateway-config: pc-vk"}, 200, "", "", "Bearer sk-stored-secret"},
		{"saved config with trusted host", []string{key, "x-gateway-config: pc-host"}, 200, "", "", "Bearer sk-from-config"},
		{"saved config of another workspace", []string{key, "x-gateway-config: pc-other"}, 403, CodePermissionDenied, HeaderConfig, ""},
		{"unknown config", []string{key, "x-gateway-config: pc-nope"}, 400, CodeUnknownConfig, HeaderConfig, ""},
		{"inline config", []string{key, inline}, 200, "", "", "Bearer sk-inline"},
		{"inline config invalid JSON", []string{key, `x-gateway-config: {"provider":`}, 400, CodeInvalidConfig, HeaderConfig, ""},
		{"inline config unknown field", []string{key, `x-gateway-config: {"providr":"openai"}`}, 400, CodeInvalidConfig, HeaderConfig, ""},
		{"config filled by headers", []string{key, "x-gateway-config: pc-provider-only", "x-gateway-provider: openai", "x-gateway-custom-host: " + up.URL + "/v1", "Authorization: Bearer sk-hdr"}, 200, "", "", "Bearer sk-hdr"},
		{"config without provider", []string{key, "x-gateway-config: pc-provider-only"}, 400, CodeMissingProvider, HeaderConfig, ""},
		{"default config of the key", []string{"x-gateway-api-key: gw-default"}, 200, "", "", "Bearer sk-stored-secret"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(up.received())
			res := e.do("POST", "/v1/chat/completions", strings.NewReader(`{"model":"m"}`), tc.headers...)
			if res.StatusCode != tc.status {
				b, _ := io.ReadAll(res.Body)
				t.Fatalf("status = %d, want %d; body %s", res.StatusCode, tc.status, b)
			}
			got := up.received()
			if tc.status != 200 {
				if len(got) != before {
					t.Error("a refused request reached the provider")
				}
				body := decodeError(t, res)
				if c := deref(body.Error.Code); c != tc.code {
					t.Errorf("code = %s, want %s (%s)", c, tc.code, body.Error.Message)
				}
				if tc.param != "" && deref(body.Error.Param) != tc.param {
					t.Errorf("param = %s, want %s", deref(body.Error.Param), tc.param)
				}
				if strings.Contains(body.Error.Message, "sk-") {
					t.Errorf("error message leaks a credential: %s", body.Error.Message)
				}
				return
			}
			if len(got) != before+1 {
				t.Fatalf("provider received %d requests, want 1", len(got)-before)
			}
			r := got[len(got)-1]
			if r.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != tc.auth {
				t.Errorf("provider got path %s auth %q; want /v1/chat/completions, %q", r.Path, r.Header.Get("Authorization"), tc.auth)
			}
			if res.Header.Get(HeaderProvider) != "openai" {
				t.Errorf("x-gateway-provider = %q, want openai", res.Header.Get(HeaderProvider))
			}
		})
	}
}

// A stored credential never follows a caller-supplied host: a config target
// naming a virtual key ignores the custom host header.
func TestStoredCredentialStaysHome(t *testing.T) {
	home := newCoreUpstream(t, nil)
	evil := newCoreUpstream(t, nil)
	e := newCoreEnv(t, home, nil)
	res := e.do("GET", "/v1/models", nil, "x-gateway-api-key: "+coreKey,
		`x-gateway-config: {"virtual_key":"vk-up"}`, "x-gateway-custom-host: "+evil.URL+"/v1")
	if res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	if len(evil.received()) != 0 || len(home.received()) != 1 {
		t.Fatalf("home got %d, custom host got %d requests; want 1 and 0", len(home.received()), len(evil.received()))
	}
	res = e.do("GET", "/v1/models", nil, "x-gateway-api-key: "+coreKey,
		`x-gateway-config: {"virtual_key":"vk-up","custom_host":"`+evil.URL+`"}`)
	if res.StatusCode != 400 || deref(decodeError(t, res).Error.Code) != CodeInvalidConfig {
		t.Errorf("virtual_key with custom_host: status %d, want 400 invalid_config", res.StatusCode)
	}
	if len(evil.received()) != 0 {
		t.Error("stored credential sent to a caller-supplied host")
	}
}

// transportFunc adapts a function to http.RoundTripper.
type transportFunc func(*http.Request) (*http.Response, error)

func (f transportFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A stored credential is never sent to a resource the caller names: the
// resource name and project of a virtual key or saved config come from the
// store, not from the caller's headers; a saved config's api_key never
// follows a caller's custom host; the caller's own token fills in an inline
// config without credentials.
func TestStoredCredentialNotRedirectedByHeaders(t *testing.T) {
	var mu sync.Mutex
	var sent []string // "host auth"
	rt := transportFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		sent = append(sent, r.URL.Host+" "+r.Header.Get("Api-Key")+r.Header.Get("Authorization"))
		mu.Unlock()
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
	})
	up := newCoreUpstream(t, nil)
	e := newCoreEnv(t, up, func(o *Options) { o.Transport = rt })
	e.store.AddVirtualKey(VirtualKey{Slug: "vk-azure", Provider: "azure-openai", APIKey: "sk-azure-stored", WorkspaceID: "ws-1",
		HostSettings: HostSettings{APIVersion: "2024-02-01"}})
	e.store.AddConfig(SavedConfig{ID: "pc-azure", Config: json.RawMessage(`{"provider":"azure-openai","api_key":"sk-azure-saved","api_version":"2024-02-01","deployment_id":"d"}`)})
	e.store.AddConfig(SavedConfig{ID: "pc-openai", Config: json.RawMessage(`{"provider":"openai","api_key":"sk-openai-saved"}`)})
	e.store.AddConfig(SavedConfig{ID: "pc-key-only", Config: json.RawMessage(`{"api_key":"sk-key-only-saved"}`)})
	e.store.AddConfig(SavedConfig{ID: "pc-pair-only", Config: json.RawMessage(`{"access_key_id":"AKIDSTORED","secret_access_key":"stored-secret","region":"us-east-1"}`)})
	key := "x-gateway-api-key: " + coreKey
	tests := []struct {
		name    string
		headers []string
		status  int
		sent    string // "" means nothing was sent
	}{
		{"virtual key ignores caller resource", []string{key, "x-gateway-virtual-key: vk-azure", "x-gateway-hosta-resource-name: evil", "x-gateway-hosta-deployment-id: d"}, 400, ""},
		{"saved config ignores caller resource", []string{key, "x-gateway-config: pc-azure", "x-gateway-hosta-resource-name: evil"}, 400, ""},
		{"saved key does not follow caller host", []string{key, "x-gateway-config: pc-openai", "x-gateway-custom-host: " + up.URL + "/v1"}, 200, strings.TrimPrefix(up.URL, "http://") + " "},
		{"saved key does not follow caller provider", []string{key, "x-gateway-config: pc-key-only", "x-gateway-provider: anthropic"}, 400, ""},
		{"saved key pair does not follow caller provider", []string{key, "x-gateway-config: pc-pair-only", "x-gateway-provider: openai", "Authorization: Bearer sk-caller"}, 400, ""},
		{"saved key goes to the provider its config names", []string{key, "x-gateway-config: pc-openai", "x-gateway-provider: anthropic"}, 200, "api.openai.com Bearer sk-openai-saved"},
		{"inline config takes caller token", []string{key, `x-gateway-config: {"provider":"openai"}`, "Authorization: Bearer sk-caller"}, 200, "api.openai.com Bearer sk-caller"},
		{"inline config with caller resource", []string{key, `x-gateway-config: {"provider":"azure-openai","api_version":"v1","deployment_id":"d"}`, "x-gateway-hosta-resource-name: mine", "Authorization: Bearer sk-caller"}, 200, "mine.openai.azure.com sk-caller"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			before := len(sent)
			mu.Unlock()
			res := e.do("POST", "/v1/chat/completions", strings.NewReader(`{}`), tc.headers...)
			if res.StatusCode != tc.status {
				b, _ := io.ReadAll(res.Body)
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, b)
			}
			mu.Lock()
			got := append([]string(nil), sent[before:]...)
			mu.Unlock()
			// Custom hosts go through the guarded transport, which
			// reaches the loopback upstream, not rt.
			if tc.status == 200 && strings.HasPrefix(tc.sent, "127.0.0.1") {
				r := up.received()
				if auth := r[len(r)-1].Header.Get("Authorization"); auth != "" {
					t.Errorf("caller's custom host received Authorization %q; want none", auth)
				}
				return
			}
			var want []string
			if tc.sent != "" {
				want = []string{tc.sent}
			}
			if diff := cmp.Diff(want, got, cmpEmptyNil); diff != "" {
				t.Errorf("sent (-want +got):\n%s", diff)
			}
		})
	}
}

func TestControlPlaneNamespaceNotPassedThrough(t *testing.T) {
	up := newCoreUpstream(t, nil)
	e := newCoreEnv(t, up, nil)
	for _, path := range []string{"/v1/policies/rate-limits/", "/v1/policies/rate-limits/a/b"} {
		res := e.do("GET", path, nil, "x-gateway-api-key: "+coreAdminKey, "x-gateway-virtual-key: vk-up")
		if res.StatusCode != 404 {
			t.Errorf("%s: status %d, want 404", path, res.StatusCode)
		}
	}
	if n := len(up.received()); n != 0 {
		t.Errorf("provider received %d control-plane requests", n)
	}
}
