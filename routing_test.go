package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

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
		{"virtual key of another workspace", []string{key, "x-gateway-virtual-key: vk-other-ws"}, 400, CodeUnknownVirtualKey, HeaderVirtualKey, ""},
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
		{"saved config of another workspace", []string{key, "x-gateway-config: pc-other"}, 400, CodeUnknownConfig, HeaderConfig, ""},
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

// TestConfigWithoutTargets: a config with empty or absent targets is the
// single target of its own top level whatever its mode (the server's
// sample config among them), filled from the request's headers when it
// names no provider. A conditional config without targets is refused, and
// the error names x-gateway-config.
func TestConfigWithoutTargets(t *testing.T) {
	var mu sync.Mutex
	var sent []string // "host auth"
	rt := transportFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		sent = append(sent, r.URL.Host+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
	})
	e := newCoreEnv(t, newCoreUpstream(t, nil), func(o *Options) { o.Transport = rt })
	for id, cfg := range map[string]string{
		"pc-fallback-empty":   `{"strategy":{"mode":"fallback"},"targets":[]}`,
		"pc-loadbalance-none": `{"strategy":{"mode":"loadbalance"}}`,
		"pc-single-empty":     `{"targets":[]}`,
		"pc-fallback-openai":  `{"strategy":{"mode":"fallback","on_status_codes":[503]},"provider":"openai","api_key":"sk-saved","targets":[]}`,
		"pc-conditional":      `{"strategy":{"mode":"conditional","default":"a"},"provider":"openai","api_key":"sk-saved"}`,
	} {
		e.store.AddConfig(SavedConfig{ID: id, Config: json.RawMessage(cfg)})
	}
	key := "x-gateway-api-key: " + coreKey
	caller := []string{"x-gateway-provider: openai", "Authorization: Bearer sk-caller"}
	tests := []struct {
		name    string
		headers []string
		status  int
		code    string
		sent    string // "" means nothing was sent
	}{
		{"saved fallback with empty targets", append([]string{key, "x-gateway-config: pc-fallback-empty"}, caller...), 200, "", "api.openai.com Bearer sk-caller"},
		{"saved loadbalance without targets", append([]string{key, "x-gateway-config: pc-loadbalance-none"}, caller...), 200, "", "api.openai.com Bearer sk-caller"},
		{"saved single with empty targets", append([]string{key, "x-gateway-config: pc-single-empty"}, caller...), 200, "", "api.openai.com Bearer sk-caller"},
		{"inline fallback with empty targets", append([]string{key, `x-gateway-config: {"strategy":{"mode":"fallback"},"targets":[]}`}, caller...), 200, "", "api.openai.com Bearer sk-caller"},
		{"saved fallback naming its provider", []string{key, "x-gateway-config: pc-fallback-openai", "Authorization: Bearer sk-caller"}, 200, "", "api.openai.com Bearer sk-saved"},
		{"saved fallback without provider", []string{key, "x-gateway-config: pc-fallback-empty", "Authorization: Bearer sk-caller"}, 400, CodeMissingProvider, ""},
		{"saved conditional without targets", append([]string{key, "x-gateway-config: pc-conditional"}, caller...), 400, CodeInvalidConfig, ""},
		{"inline conditional without targets", append([]string{key, `x-gateway-config: {"strategy":{"mode":"conditional","default":"a"}}`}, caller...), 400, CodeInvalidConfig, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			before := len(sent)
			mu.Unlock()
			res := e.do("POST", "/v1/chat/completions", strings.NewReader(`{"model":"m"}`), tc.headers...)
			if res.StatusCode != tc.status {
				b, _ := io.ReadAll(res.Body)
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, b)
			}
			mu.Lock()
			got := append([]string(nil), sent[before:]...)
			mu.Unlock()
			var want []string
			if tc.sent != "" {
				want = []string{tc.sent}
			}
			if diff := cmp.Diff(want, got, cmpEmptyNil); diff != "" {
				t.Errorf("sent (-want +got):\n%s", diff)
			}
			if tc.status == 200 {
				if p := res.Header.Get(HeaderProvider); p != "openai" {
					t.Errorf("x-gateway-provider = %q, want openai", p)
				}
				return
			}
			body := decodeError(t, res)
			if c := deref(body.Error.Code); c != tc.code {
				t.Errorf("code = %s, want %s (%s)", c, tc.code, body.Error.Message)
			}
			if p := deref(body.Error.Param); p != HeaderConfig {
				t.Errorf("param = %q, want %s", p, HeaderConfig)
			}
			if tc.code == CodeInvalidConfig && body.Error.Message != "invalid config: targets: must not be empty for strategy mode conditional" {
				t.Errorf("message = %q", body.Error.Message)
			}
		})
	}
}

// TestInheritedVirtualKeyRefusesChildCredential: a target under a parent
// whose virtual key it inherits may not carry a credential or host of its
// own, which the virtual key would silently override; the request is
// refused before anything is sent, naming the target's path.
func TestInheritedVirtualKeyRefusesChildCredential(t *testing.T) {
	up := newCoreUpstream(t, nil)
	e := newCoreEnv(t, up, nil)
	key := "x-gateway-api-key: " + coreKey
	tests := []struct {
		name, config, msg string
	}{
		{"child api key", `{"strategy":{"mode":"fallback"},"targets":[{"virtual_key":"vk-up","targets":[{},{"api_key":"sk-child"}]}]}`,
			"invalid config: targets[0].targets[1].api_key: cannot be combined with virtual_key inherited from targets[0]"},
		{"child key pair", `{"virtual_key":"vk-up","targets":[{"access_key_id":"AKIDCHILD","secret_access_key":"child"}]}`,
			"invalid config: targets[0].access_key_id: cannot be combined with virtual_key inherited from the top level"},
		{"child custom host", `{"virtual_key":"vk-up","targets":[{"custom_host":"https://other.example/v1"}]}`,
			"invalid config: targets[0].custom_host: cannot be combined with virtual_key inherited from the top level"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := e.do("POST", "/v1/chat/completions", strings.NewReader(`{}`), key, "x-gateway-config: "+tc.config)
			body := decodeError(t, res)
			if res.StatusCode != 400 || deref(body.Error.Code) != CodeInvalidConfig || body.Error.Message != tc.msg || deref(body.Error.Param) != HeaderConfig {
				t.Errorf("got %d %s %q (%s); want 400 invalid_config %q (%s)", res.StatusCode, deref(body.Error.Code), body.Error.Message, deref(body.Error.Param), tc.msg, HeaderConfig)
			}
		})
	}
	if n := len(up.received()); n != 0 {
		t.Errorf("provider received %d requests, want none", n)
	}
}

// TestConfigInheritanceNested: a grandchild target inherits cache,
// request_timeout, custom_host, forward_headers and retry from the top
// level through a child that sets none; a child that sets its own
// overrides them for itself and its children; override_params merge down
// the tree, the nearer target winning.
func TestConfigInheritanceNested(t *testing.T) {
	st := &testStore{}
	st.AddConfig(SavedConfig{ID: "pc-tree", Config: json.RawMessage(`{
		"strategy": {"mode": "fallback"},
		"provider": "openai", "api_key": "sk-top", "custom_host": "https://top.example/v1",
		"cache": {"mode": "simple", "max_age": 60}, "request_timeout": 1000, "forward_headers": ["x-top"],
		"retry": {"attempts": 1}, "override_params": {"model": "top", "temperature": 0},
		"targets": [
			{"targets": [{"override_params": {"seed": 1}}]},
			{"cache": {"mode": "simple", "max_age": 120}, "request_timeout": 2000, "custom_host": "https://child.example/v1",
			 "forward_headers": ["x-child"], "retry": {"attempts": 2}, "override_params": {"model": "child"}},
			{"cache": {"mode": "simple", "max_age": 300}, "request_timeout": 3000, "custom_host": "https://child2.example/v1",
			 "forward_headers": ["x-child2"], "override_params": {"temperature": 1},
			 "targets": [{"override_params": {"model": "grandchild"}}]}
		]}`)})
	g := New(Options{Configs: st})
	defer g.Close()
	plan, err := g.selectPlan(context.Background(), Identity{WorkspaceID: "ws-1"}, &RequestOptions{Config: "pc-tree"})
	if err != nil {
		t.Fatal(err)
	}
	leaves := map[string]*routedTarget{}
	var walk func(n *planNode)
	walk = func(n *planNode) {
		if n.target != nil {
			leaves[n.target.Index] = n.target
		}
		for _, c := range n.children {
			walk(c)
		}
	}
	walk(plan)

	type settings struct {
		BaseURL        string
		APIKey         string
		Cache          *CacheConfig
		RequestTimeout time.Duration
		ForwardHeaders []string
		Retry          *RetryConfig
		OverrideParams map[string]any
	}
	tests := []struct {
		name, index string
		want        settings
	}{
		{"grandchild inherits the top level", "config.targets[0].targets[0]", settings{
			"https://top.example/v1", "sk-top", &CacheConfig{Mode: "simple", MaxAge: 60}, time.Second, []string{"X-Top"},
			&RetryConfig{Attempts: 1}, map[string]any{"model": "top", "temperature": json.Number("0"), "seed": json.Number("1")}}},
		{"child overrides", "config.targets[1]", settings{
			"https://child.example/v1", "sk-top", &CacheConfig{Mode: "simple", MaxAge: 120}, 2 * time.Second, []string{"X-Child"},
			&RetryConfig{Attempts: 2}, map[string]any{"model": "child", "temperature": json.Number("0")}}},
		{"grandchild inherits the overriding child", "config.targets[2].targets[0]", settings{
			"https://child2.example/v1", "sk-top", &CacheConfig{Mode: "simple", MaxAge: 300}, 3 * time.Second, []string{"X-Child2"},
			&RetryConfig{Attempts: 1}, map[string]any{"model": "grandchild", "temperature": json.Number("1")}}},
	}
	if len(leaves) != len(tests) {
		t.Fatalf("plan has %d leaves, want %d", len(leaves), len(tests))
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, ok := leaves[tc.index]
			if !ok {
				t.Fatalf("no target %s in the plan", tc.index)
			}
			got := settings{"", l.APIKey, l.cache, l.requestTimeout, l.forwardHeaders, l.retry, l.overrideParams}
			if l.BaseURL != nil {
				got.BaseURL = l.BaseURL.String()
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("target %s (-want +got):\n%s", tc.index, d)
			}
		})
	}
}
