package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/memstore"
)

// hostsStoreJSON is the store every host test loads: virtual keys and
// saved configs carrying each host's settings, as an operator writes them.
const hostsStoreJSON = `{
  "api_keys": [{"id": "key-1", "key": "gw-hosts", "workspace_id": "ws-1"}],
  "virtual_keys": [
    {"slug": "azure-prod", "provider": "azure-openai", "api_key": "az-stored",
     "resource_name": "vk-res", "deployment_id": "vk-dep", "api_version": "2024-10-21", "model_name": "gpt-4o"},
    {"slug": "azure-proxy", "provider": "azure-openai", "api_key": "az-stored",
     "base_url": "https://azure-proxy.example.com/tenant", "deployment_id": "vk-dep", "api_version": "2024-10-21"},
    {"slug": "azure-nodeploy", "provider": "azure-openai", "api_key": "az-stored",
     "resource_name": "vk-res", "api_version": "2024-10-21"},
    {"slug": "vertex-prod", "provider": "vertex-ai", "api_key": "ya29.stored",
     "project_id": "vk-proj", "region": "europe-west4"},
    {"slug": "anthropic-prod", "provider": "anthropic", "api_key": "sk-ant-stored"}
  ],
  "configs": [
    {"id": "pc-azure", "config": {"strategy": {"mode": "single"}, "targets": [
      {"provider": "azure-openai", "api_key": "az-config", "resource_name": "cfg-res",
       "deployment_id": "cfg-dep", "api_version": "2024-06-01"}]}},
    {"id": "pc-vertex", "config": {"provider": "vertex-ai", "api_key": "ya29.config",
      "project_id": "cfg-proj", "region": "global"}},
    {"id": "pc-anthropic", "config": {"targets": [{"virtual_key": "anthropic-prod"}]}}
  ]
}`

// hostsSeen is what the injected transport saw of one outbound request:
// exactly what the gateway asked the host for.
type hostsSeen struct {
	Method string
	URL    string
	Header http.Header
}

// hostsRecorder is the gateway's Transport in these tests. It records each
// outbound request, then delivers it to a loopback fake host, keeping the
// original Host header so the fake sees the host the gateway aimed at.
type hostsRecorder struct {
	fake *httptest.Server
	mu   sync.Mutex // guards seen
	seen []hostsSeen
}

func (rt *hostsRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	h := req.Header.Clone()
	for k, v := range h {
		if len(v) == 0 {
			delete(h, k) // a nil entry is never sent
		}
	}
	rt.mu.Lock()
	rt.seen = append(rt.seen, hostsSeen{Method: req.Method, URL: req.URL.String(), Header: h})
	rt.mu.Unlock()
	fu, _ := url.Parse(rt.fake.URL)
	out := req.Clone(req.Context())
	out.Host = req.Host
	if out.Host == "" {
		out.Host = req.URL.Host
	}
	out.URL.Scheme, out.URL.Host = fu.Scheme, fu.Host
	return rt.fake.Client().Transport.RoundTrip(out)
}

func (rt *hostsRecorder) requests() []hostsSeen {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]hostsSeen(nil), rt.seen...)
}

// hostsLogs is a LogSink handing records to the test.
type hostsLogs chan *gateway.RequestLog

func (c hostsLogs) Log(rec *gateway.RequestLog) { c <- rec }

// hostsEnv is a gateway over real HTTP whose providers are reached through
// a hostsRecorder.
type hostsEnv struct {
	srv  *httptest.Server
	rt   *hostsRecorder
	logs hostsLogs
}

// newHostsEnv starts a fake host answering with fake (nil: 200 {"ok":true})
// and a gateway in front of it.
func newHostsEnv(t *testing.T, fake http.HandlerFunc) *hostsEnv {
	t.Helper()
	if fake == nil {
		fake = func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"ok":true}`)
		}
	}
	up := httptest.NewServer(fake)
	t.Cleanup(up.Close)
	f, err := admin.Decode(strings.NewReader(hostsStoreJSON))
	if err != nil {
		t.Fatal(err)
	}
	st := memstore.New()
	if err := admin.Apply(context.Background(), f, st); err != nil {
		t.Fatal(err)
	}
	env := &hostsEnv{rt: &hostsRecorder{fake: up}, logs: make(hostsLogs, 16)}
	g := gateway.New(gateway.Options{Keys: st, VirtualKeys: st, Configs: st, Transport: env.rt, LogSink: env.logs})
	env.srv = httptest.NewServer(g)
	t.Cleanup(func() {
		env.srv.Close()
		g.Close()
	})
	return env
}

// do sends method path with the gateway key and hdr (name, value pairs)
// and returns the response with its body read.
func (e *hostsEnv) do(t *testing.T, method, path, body string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Gateway-Api-Key", "gw-hosts")
	req.Header.Set("User-Agent", "hosts-test")
	req.Header.Set("Accept-Encoding", "gzip")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}

// nextLog returns the next request log record.
func (e *hostsEnv) nextLog(t *testing.T) *gateway.RequestLog {
	t.Helper()
	select {
	case rec := <-e.logs:
		return rec
	case <-time.After(10 * time.Second):
		t.Fatal("no request log record")
		return nil
	}
}

// hostsCase is one request through the gateway and what the host must see.
type hostsCase struct {
	name   string
	method string
	path   string
	hdr    []string
	want   hostsSeen
}

// runHostsCases checks that each case reaches the host exactly as wanted
// and that the host's answer comes back.
func runHostsCases(t *testing.T, cases []hostsCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newHostsEnv(t, nil)
			body := ""
			if tc.method == http.MethodPost {
				body = `{"model":"m","prompt":"hi"}`
			}
			res, b := env.do(t, tc.method, tc.path, body, tc.hdr...)
			if res.StatusCode != http.StatusOK || string(b) != `{"ok":true}` {
				t.Fatalf("status %d body %s, want the host's 200 answer", res.StatusCode, b)
			}
			// The caller's Accept-Encoding always passes; its User-Agent
			// only when forwarded.
			tc.want.Header.Set("Accept-Encoding", "gzip")
			if diff := cmp.Diff([]hostsSeen{tc.want}, env.rt.requests()); diff != "" {
				t.Errorf("request seen by the host (-want +got):\n%s", diff)
			}
		})
	}
}

func hostsHeader(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// azureHeaders are a complete hostA header set.
var azureHeaders = []string{
	gateway.HeaderProvider, "azure-openai",
	"Authorization", "Bearer az-token",
	gateway.HeaderHostAResourceName, "my-res",
	gateway.HeaderHostADeploymentID, "gpt4o-prod",
	gateway.HeaderHostAAPIVersion, "2024-10-21",
}

// hostsWith returns the header pairs of base with those of kv added, replacing
// any of the same name.
func hostsWith(base []string, kv ...string) []string {
	var names []string
	for i := 0; i+1 < len(kv); i += 2 {
		names = append(names, kv[i])
	}
	return append(hostsWithout(base, names...), kv...)
}

func TestAzureOpenAI(t *testing.T) {
	ctJSON := "application/json"
	runHostsCases(t, []hostsCase{
		{
			name: "chat completions by headers", method: "POST", path: "/v1/chat/completions",
			hdr: hostsWith(azureHeaders, "Content-Type", ctJSON, "X-Ms-Client-Request-Id", "req-1", "OpenAI-Organization", "org-1"),
			want: hostsSeen{"POST", "https://my-res.openai.azure.com/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21",
				hostsHeader("Content-Type", ctJSON, "Api-Key", "az-token", "X-Ms-Client-Request-Id", "req-1")},
		},
		{
			name: "completions typed route", method: "POST", path: "/v1/completions",
			hdr: hostsWith(azureHeaders, "Content-Type", ctJSON),
			want: hostsSeen{"POST", "https://my-res.openai.azure.com/openai/deployments/gpt4o-prod/completions?api-version=2024-10-21",
				hostsHeader("Content-Type", ctJSON, "Api-Key", "az-token")},
		},
		{
			name: "embeddings keep the caller's query", method: "POST", path: "/v1/embeddings?user=u%201&dims=3",
			hdr: hostsWith(azureHeaders, "Content-Type", ctJSON),
			want: hostsSeen{"POST", "https://my-res.openai.azure.com/openai/deployments/gpt4o-prod/embeddings?user=u%201&dims=3&api-version=2024-10-21",
				hostsHeader("Content-Type", ctJSON, "Api-Key", "az-token")},
		},
		{
			name: "images", method: "POST", path: "/v1/images/generations",
			hdr: azureHeaders,
			want: hostsSeen{"POST", "https://my-res.openai.azure.com/openai/deployments/gpt4o-prod/images/generations?api-version=2024-10-21",
				hostsHeader("Api-Key", "az-token")},
		},
		{
			name: "audio", method: "POST", path: "/v1/audio/transcriptions",
			hdr: azureHeaders,
			want: hostsSeen{"POST", "https://my-res.openai.azure.com/openai/deployments/gpt4o-prod/audio/transcriptions?api-version=2024-10-21",
				hostsHeader("Api-Key", "az-token")},
		},
		{
			name: "files is resource-scoped and needs no deployment", method: "GET", path: "/v1/files?purpose=fine-tune",
			hdr: []string{gateway.HeaderProvider, "azure-openai", "Authorization", "Bearer az-token",
				gateway.HeaderHostAResourceName, "my-res", gateway.HeaderHostAAPIVersion, "2024-10-21"},
			want: hostsSeen{"GET", "https://my-res.openai.azure.com/openai/files?purpose=fine-tune&api-version=2024-10-21",
				hostsHeader("Api-Key", "az-token")},
		},
		{
			name: "fine-tuning job", method: "GET", path: "/v1/fine_tuning/jobs/ftjob-abc",
			hdr: azureHeaders,
			want: hostsSeen{"GET", "https://my-res.openai.azure.com/openai/fine_tuning/jobs/ftjob-abc?api-version=2024-10-21",
				hostsHeader("Api-Key", "az-token")},
		},
		{
			name: "fine-tuning job list", method: "GET", path: "/v1/fine_tuning/jobs?after=ftjob-1&limit=2",
			hdr: azureHeaders,
			want: hostsSeen{"GET", "https://my-res.openai.azure.com/openai/fine_tuning/jobs?after=ftjob-1&limit=2&api-version=2024-10-21",
				hostsHeader("Api-Key", "az-token")},
		},
		{
			name: "batches", method: "DELETE", path: "/v1/batches/batch_1",
			hdr: azureHeaders,
			want: hostsSeen{"DELETE", "https://my-res.openai.azure.com/openai/batches/batch_1?api-version=2024-10-21",
				hostsHeader("Api-Key", "az-token")},
		},
		{
			name: "caller's api-version query when no header gives one", method: "GET", path: "/v1/models?api-version=2024-06-01",
			hdr: []string{gateway.HeaderProvider, "azure-openai", "Authorization", "Bearer az-token", gateway.HeaderHostAResourceName, "my-res"},
			want: hostsSeen{"GET", "https://my-res.openai.azure.com/openai/models?api-version=2024-06-01",
				hostsHeader("Api-Key", "az-token")},
		},
		{
			name: "the api-version header replaces the caller's query", method: "GET", path: "/v1/models?api-version=old&x=1",
			hdr: azureHeaders,
			want: hostsSeen{"GET", "https://my-res.openai.azure.com/openai/models?x=1&api-version=2024-10-21",
				hostsHeader("Api-Key", "az-token")},
		},
		{
			name: "resource name is case-insensitive", method: "GET", path: "/v1/models",
			hdr: hostsWith(azureHeaders, gateway.HeaderHostAResourceName, "My-Res"),
			want: hostsSeen{"GET", "https://my-res.openai.azure.com/openai/models?api-version=2024-10-21",
				hostsHeader("Api-Key", "az-token")},
		},
		{
			name: "virtual key: stored key wins over the caller's Authorization", method: "POST", path: "/v1/chat/completions",
			hdr: []string{gateway.HeaderVirtualKey, "azure-prod", "Authorization", "Bearer caller-token", "Content-Type", ctJSON},
			want: hostsSeen{"POST", "https://vk-res.openai.azure.com/openai/deployments/vk-dep/chat/completions?api-version=2024-10-21",
				hostsHeader("Content-Type", ctJSON, "Api-Key", "az-stored")},
		},
		{
			name: "virtual key base_url replaces the resource host", method: "POST", path: "/v1/chat/completions",
			hdr: []string{gateway.HeaderVirtualKey, "azure-proxy"},
			want: hostsSeen{"POST", "https://azure-proxy.example.com/tenant/openai/deployments/vk-dep/chat/completions?api-version=2024-10-21",
				hostsHeader("Api-Key", "az-stored")},
		},
		{
			name: "virtual key completed by a header", method: "POST", path: "/v1/chat/completions",
			hdr: []string{gateway.HeaderVirtualKey, "azure-nodeploy", gateway.HeaderHostADeploymentID, "hdr-dep"},
			want: hostsSeen{"POST", "https://vk-res.openai.azure.com/openai/deployments/hdr-dep/chat/completions?api-version=2024-10-21",
				hostsHeader("Api-Key", "az-stored")},
		},
		{
			name: "saved config target", method: "POST", path: "/v1/embeddings",
			hdr: []string{gateway.HeaderConfig, "pc-azure", "Authorization", "Bearer caller-token"},
			want: hostsSeen{"POST", "https://cfg-res.openai.azure.com/openai/deployments/cfg-dep/embeddings?api-version=2024-06-01",
				hostsHeader("Api-Key", "az-config")},
		},
		{
			name: "inline config target", method: "POST", path: "/v1/chat/completions",
			hdr: []string{gateway.HeaderConfig, `{"provider":"azure-openai","api_key":"az-token","resource_name":"inl-res","deployment_id":"inl-dep","api_version":"2024-10-21"}`},
			want: hostsSeen{"POST", "https://inl-res.openai.azure.com/openai/deployments/inl-dep/chat/completions?api-version=2024-10-21",
				hostsHeader("Api-Key", "az-token")},
		},
	})
}

func TestVertexAI(t *testing.T) {
	vertexHeaders := []string{
		gateway.HeaderProvider, "vertex-ai",
		"Authorization", "Bearer ya29.token",
		gateway.HeaderHostBProjectID, "my-proj",
		gateway.HeaderHostBRegion, "us-central1",
	}
	runHostsCases(t, []hostsCase{
		{
			name: "chat completions maps to the OpenAI-compatible endpoint", method: "POST", path: "/v1/chat/completions",
			hdr: hostsWith(vertexHeaders, "Content-Type", "application/json", "X-Vertex-AI-LLM-Request-Type", "dedicated"),
			want: hostsSeen{"POST", "https://us-central1-aiplatform.googleapis.com/v1/projects/my-proj/locations/us-central1/endpoints/openapi/chat/completions",
				hostsHeader("Content-Type", "application/json", "Authorization", "Bearer ya29.token", "X-Vertex-Ai-Llm-Request-Type", "dedicated")},
		},
		{
			name: "global region", method: "POST", path: "/v1/chat/completions",
			hdr: hostsWith(vertexHeaders, gateway.HeaderHostBRegion, "global"),
			want: hostsSeen{"POST", "https://aiplatform.googleapis.com/v1/projects/my-proj/locations/global/endpoints/openapi/chat/completions",
				hostsHeader("Authorization", "Bearer ya29.token")},
		},
		{
			name: "native path appended as sent, query kept", method: "POST", path: "/v1/publishers/google/models/gemini-2.0-flash:streamGenerateContent?alt=sse",
			hdr: vertexHeaders,
			want: hostsSeen{"POST", "https://us-central1-aiplatform.googleapis.com/v1/projects/my-proj/locations/us-central1/publishers/google/models/gemini-2.0-flash:streamGenerateContent?alt=sse",
				hostsHeader("Authorization", "Bearer ya29.token")},
		},
		{
			name: "project number", method: "GET", path: "/v1/batchPredictionJobs",
			hdr: hostsWith(vertexHeaders, gateway.HeaderHostBProjectID, "123456789012"),
			want: hostsSeen{"GET", "https://us-central1-aiplatform.googleapis.com/v1/projects/123456789012/locations/us-central1/batchPredictionJobs",
				hostsHeader("Authorization", "Bearer ya29.token")},
		},
		{
			name: "virtual key", method: "POST", path: "/v1/chat/completions",
			hdr: []string{gateway.HeaderVirtualKey, "vertex-prod", "Authorization", "Bearer caller-token"},
			want: hostsSeen{"POST", "https://europe-west4-aiplatform.googleapis.com/v1/projects/vk-proj/locations/europe-west4/endpoints/openapi/chat/completions",
				hostsHeader("Authorization", "Bearer ya29.stored")},
		},
		{
			name: "inline config completed by headers", method: "POST", path: "/v1/chat/completions",
			hdr: []string{gateway.HeaderConfig, `{"provider":"vertex-ai","api_key":"ya29.inline","project_id":"inl-proj"}`,
				gateway.HeaderHostBRegion, "asia-southeast1"},
			want: hostsSeen{"POST", "https://asia-southeast1-aiplatform.googleapis.com/v1/projects/inl-proj/locations/asia-southeast1/endpoints/openapi/chat/completions",
				hostsHeader("Authorization", "Bearer ya29.inline")},
		},
		{
			name: "saved config", method: "POST", path: "/v1/chat/completions",
			hdr: []string{gateway.HeaderConfig, "pc-vertex"},
			want: hostsSeen{"POST", "https://aiplatform.googleapis.com/v1/projects/cfg-proj/locations/global/endpoints/openapi/chat/completions",
				hostsHeader("Authorization", "Bearer ya29.config")},
		},
	})
}

func TestAnthropic(t *testing.T) {
	anthropicHeaders := []string{gateway.HeaderProvider, "anthropic", "Authorization", "Bearer sk-ant-token", "Content-Type", "application/json"}
	runHostsCases(t, []hostsCase{
		{
			name: "token becomes x-api-key, version defaulted", method: "POST", path: "/v1/messages",
			hdr: anthropicHeaders,
			want: hostsSeen{"POST", "https://api.anthropic.com/v1/messages",
				hostsHeader("Content-Type", "application/json", "X-Api-Key", "sk-ant-token", "Anthropic-Version", "2023-06-01")},
		},
		{
			name: "caller's version and beta pass", method: "POST", path: "/v1/messages?beta=true",
			hdr: hostsWith(anthropicHeaders, "Anthropic-Version", "2024-10-22", "Anthropic-Beta", "prompt-caching-2024-07-31"),
			want: hostsSeen{"POST", "https://api.anthropic.com/v1/messages?beta=true",
				hostsHeader("Content-Type", "application/json", "X-Api-Key", "sk-ant-token", "Anthropic-Version", "2024-10-22",
					"Anthropic-Beta", "prompt-caching-2024-07-31")},
		},
		{
			name: "virtual key", method: "GET", path: "/v1/models",
			hdr: []string{gateway.HeaderVirtualKey, "anthropic-prod", "Authorization", "Bearer caller-token"},
			want: hostsSeen{"GET", "https://api.anthropic.com/v1/models",
				hostsHeader("X-Api-Key", "sk-ant-stored", "Anthropic-Version", "2023-06-01")},
		},
		{
			name: "saved config through a virtual key", method: "POST", path: "/v1/complete",
			hdr: []string{gateway.HeaderConfig, "pc-anthropic"},
			want: hostsSeen{"POST", "https://api.anthropic.com/v1/complete",
				hostsHeader("X-Api-Key", "sk-ant-stored", "Anthropic-Version", "2023-06-01")},
		},
	})
}

// hostsError is the decoded error body of a gateway answer.
type hostsError struct {
	Error struct {
		Type  string  `json:"type"`
		Code  *string `json:"code"`
		Param *string `json:"param"`
	} `json:"error"`
}

// badHostCase is a request the gateway must refuse with a 400 naming
// param, without sending anything to any host.
type badHostCase struct {
	name  string
	path  string
	hdr   []string
	param string
}

func runBadHostCases(t *testing.T, cases []badHostCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newHostsEnv(t, nil)
			res, b := env.do(t, http.MethodPost, tc.path, `{"model":"m","prompt":"x"}`, tc.hdr...)
			if res.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d body %s, want 400", res.StatusCode, b)
			}
			var e hostsError
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatalf("error body %s: %v", b, err)
			}
			got := []string{e.Error.Type, hostsDeref(e.Error.Code), hostsDeref(e.Error.Param)}
			want := []string{"invalid_request_error", "invalid_header", tc.param}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("error type, code, param (-want +got):\n%s", diff)
			}
			if seen := env.rt.requests(); len(seen) != 0 {
				t.Errorf("the gateway sent %d request(s), first to %s; want none", len(seen), seen[0].URL)
			}
		})
	}
}

func hostsDeref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// hostsWithout returns the header pairs of base minus those named.
func hostsWithout(base []string, names ...string) []string {
	var out []string
	for i := 0; i+1 < len(base); i += 2 {
		drop := false
		for _, n := range names {
			drop = drop || strings.EqualFold(base[i], n)
		}
		if !drop {
			out = append(out, base[i], base[i+1])
		}
	}
	return out
}

func TestAzureOpenAIIncompleteHeaders(t *testing.T) {
	const (
		res = gateway.HeaderHostAResourceName
		dep = gateway.HeaderHostADeploymentID
		ver = gateway.HeaderHostAAPIVersion
	)
	runBadHostCases(t, []badHostCase{
		{"inference without resource", "/v1/chat/completions", hostsWithout(azureHeaders, res), res},
		{"inference without deployment", "/v1/chat/completions", hostsWithout(azureHeaders, dep), dep},
		{"completions without deployment", "/v1/completions", hostsWithout(azureHeaders, dep), dep},
		{"inference without api version", "/v1/embeddings", hostsWithout(azureHeaders, ver), ver},
		{"resource-scoped without resource", "/v1/files", hostsWithout(azureHeaders, res, dep), res},
		{"resource-scoped without api version", "/v1/batches", hostsWithout(azureHeaders, ver, dep), ver},
		{"virtual key without deployment", "/v1/chat/completions", []string{gateway.HeaderVirtualKey, "azure-nodeploy"}, dep},
	})
}

func TestVertexAIIncompleteHeaders(t *testing.T) {
	all := []string{gateway.HeaderProvider, "vertex-ai", "Authorization", "Bearer t",
		gateway.HeaderHostBProjectID, "p-1", gateway.HeaderHostBRegion, "us-east1"}
	runBadHostCases(t, []badHostCase{
		{"without project", "/v1/chat/completions", hostsWithout(all, gateway.HeaderHostBProjectID), gateway.HeaderHostBProjectID},
		{"without region", "/v1/chat/completions", hostsWithout(all, gateway.HeaderHostBRegion), gateway.HeaderHostBRegion},
	})
}

// TestHostURLInjection sends settings that would move the request to
// another host or path if they were pasted into the URL: each is refused
// before anything is sent.
func TestHostURLInjection(t *testing.T) {
	const (
		res     = gateway.HeaderHostAResourceName
		dep     = gateway.HeaderHostADeploymentID
		ver     = gateway.HeaderHostAAPIVersion
		project = gateway.HeaderHostBProjectID
		region  = gateway.HeaderHostBRegion
	)
	vertexHeaders := []string{gateway.HeaderProvider, "vertex-ai", "Authorization", "Bearer t",
		gateway.HeaderHostBProjectID, "p-1", gateway.HeaderHostBRegion, "us-east1"}
	var cases []badHostCase
	add := func(base []string, name string, values ...string) {
		for _, v := range values {
			cases = append(cases, badHostCase{name + " " + v, "/v1/chat/completions", hostsWith(base, name, v), name})
		}
	}
	add(azureHeaders, res, "evil.com/x", "evil.com#", "x@evil.com", "..", "a%2Fb", "evil.com:443", "a.b", "-a", "a b", "a?b=1",
		strings.Repeat("a", 64))
	add(azureHeaders, dep, "a/b", "../x", "..", ".", "a%2Fb", "a#b", "a@b", "a?b", "a b", "a:b", "a\\b")
	add(azureHeaders, ver, "2024-10-21&api-key=x", "a/b", "a#b", "%2F", "a b", "..")
	add(vertexHeaders, project, "evil.com/", "a@b", "a#b", "..", "a%2Fb", "p:q", "example.com:proj", "My-Proj", "p/../q")
	add(vertexHeaders, region, "us-central1.evil.com", "evil.com/", "a@b", "a#", "..", "a%2F", "us:443", "1us", "US-EAST1")
	runBadHostCases(t, cases)
}

func TestAzureOpenAIModelNameLogged(t *testing.T) {
	cases := []struct {
		name string
		hdr  []string
		want string
	}{
		{"header", hostsWith(azureHeaders, gateway.HeaderHostAModelName, "gpt-4o-mini"), "gpt-4o-mini"},
		{"virtual key", []string{gateway.HeaderVirtualKey, "azure-prod"}, "gpt-4o"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newHostsEnv(t, nil)
			res, b := env.do(t, http.MethodPost, "/v1/chat/completions", `{}`, tc.hdr...)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d body %s", res.StatusCode, b)
			}
			rec := env.nextLog(t)
			got := []string{rec.Provider, rec.Model}
			if diff := cmp.Diff([]string{"azure-openai", tc.want}, got); diff != "" {
				t.Errorf("logged provider, model (-want +got):\n%s", diff)
			}
			line, _ := json.Marshal(rec)
			for _, secret := range []string{"az-token", "az-stored"} {
				if strings.Contains(string(line), secret) {
					t.Errorf("request log holds the provider token: %s", line)
				}
			}
		})
	}
}
