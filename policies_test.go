package gateway_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/memstore"
)

// Gateway API keys of the policy tests. Admin and member keys of ws-1 and
// an admin of ws-2.
const (
	polAdmin   = "gw-pol-admin"
	polMember  = "gw-pol-member"
	polMember2 = "gw-pol-member-2"
	polAdmin2  = "gw-pol-admin-ws2"
)

// Policies stored before each test: one active and one archived in ws-1,
// one in ws-2.
const (
	polIDActive   = "11111111-1111-4111-8111-111111111111"
	polIDArchived = "22222222-2222-4222-8222-222222222222"
	polIDOther    = "33333333-3333-4333-8333-333333333333"
	polIDUnknown  = "99999999-9999-4999-8999-999999999999"
)

// polEnv is a gateway over real HTTP whose virtual key "vk" (workspace
// ws-1) points at a fake provider that counts the requests it serves.
type polEnv struct {
	t     *testing.T
	store *memstore.Store
	srv   *httptest.Server
	gw    *gateway.Gateway
	logs  *gateway.LogBuffer
	calls atomic.Int64 // requests the provider served
}

// newPolEnv starts the provider (answering with up, or a small JSON body
// when up is nil) and the gateway. mod may change the options.
func newPolEnv(t *testing.T, up http.HandlerFunc, mod func(*gateway.Options)) *polEnv {
	t.Helper()
	return newPolEnvAdmin(t, up, mod, nil)
}

// newPolEnvAdmin is newPolEnv whose admin.Options adminMod may change
// after they are taken from the gateway's options.
func newPolEnvAdmin(t *testing.T, up http.HandlerFunc, mod func(*gateway.Options), adminMod func(*admin.Options)) *polEnv {
	t.Helper()
	e := &polEnv{t: t, store: memstore.New(), logs: &gateway.LogBuffer{}}
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		e.calls.Add(1)
		if up != nil {
			up(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(provider.Close)
	for _, k := range []struct {
		id, key, ws string
		role        gateway.Role
	}{
		{"key-admin", polAdmin, "ws-1", gateway.RoleAdmin},
		{"key-member", polMember, "ws-1", gateway.RoleMember},
		{"key-member-2", polMember2, "ws-1", gateway.RoleMember},
		{"key-admin-2", polAdmin2, "ws-2", gateway.RoleAdmin},
	} {
		e.store.AddAPIKey(gateway.APIKey{ID: k.id, Digest: gateway.HashAPIKey(k.key), WorkspaceID: k.ws, Role: k.role})
	}
	e.store.AddVirtualKey(gateway.VirtualKey{Slug: "vk", Provider: "openai", APIKey: "sk-test", BaseURL: provider.URL + "/v1", WorkspaceID: "ws-1"})
	opts := gateway.Options{Keys: e.store, VirtualKeys: e.store, Policies: e.store, LogSink: e.logs}
	if mod != nil {
		mod(&opts)
	}
	e.gw = gateway.New(opts)
	mountAdmin(e.gw, opts, adminMod)
	e.srv = httptest.NewServer(e.gw)
	t.Cleanup(func() { e.srv.Close(); e.gw.Close() })
	return e
}

// put stores a policy directly, as a store file or another replica would.
func (e *polEnv) put(p gateway.RateLimitsPolicy) {
	e.t.Helper()
	if p.Status == "" {
		p.Status = gateway.PolicyActive
	}
	if p.WorkspaceID == "" {
		p.WorkspaceID = "ws-1"
	}
	if err := p.Validate(); err != nil {
		e.t.Fatal(err)
	}
	if err := e.store.PutPolicy(context.Background(), &p); err != nil {
		e.t.Fatal(err)
	}
}

// seed stores the policies every control-plane test starts with.
func (e *polEnv) seed() {
	e.put(gateway.RateLimitsPolicy{ID: polIDActive, Name: "per key", Conditions: []gateway.PolicyCondition{{Key: "workspace_id", Value: "ws-1"}},
		GroupBy: []gateway.PolicyGroupBy{{Key: "api_key"}}, Type: "requests", Unit: "rph", Value: 1000, CreatedAt: "2025-01-01T00:00:00.000Z", LastUpdatedAt: "2025-01-01T00:00:00.000Z"})
	e.put(gateway.RateLimitsPolicy{ID: polIDArchived, Conditions: []gateway.PolicyCondition{{Key: "metadata._user", Value: "u"}},
		GroupBy: []gateway.PolicyGroupBy{{Key: "metadata._user"}}, Type: "tokens", Unit: "rpd", Value: 5000, Status: gateway.PolicyArchived, CreatedAt: "2025-01-02T00:00:00.000Z"})
	e.put(gateway.RateLimitsPolicy{ID: polIDOther, Conditions: []gateway.PolicyCondition{{Key: "workspace_id", Value: "ws-2"}},
		GroupBy: []gateway.PolicyGroupBy{{Key: "api_key"}}, Type: "requests", Unit: "rpm", Value: 10, WorkspaceID: "ws-2"})
}

// do sends a request with a gateway key and "Name: value" headers.
func (e *polEnv) do(key, method, path, body string, headers ...string) *http.Response {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("x-gateway-api-key", key)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { res.Body.Close() })
	return res
}

// complete sends a chat completion through the virtual key.
func (e *polEnv) complete(key string, headers ...string) *http.Response {
	e.t.Helper()
	return e.do(key, "POST", "/v1/chat/completions", `{"model":"m","messages":[]}`, append([]string{"x-gateway-virtual-key: vk", "Content-Type: application/json"}, headers...)...)
}

// statuses sends n completions and returns their statuses.
func (e *polEnv) statuses(n int, key string, headers ...string) []int {
	e.t.Helper()
	var out []int
	for range n {
		res := e.complete(key, headers...)
		io.Copy(io.Discard, res.Body)
		out = append(out, res.StatusCode)
	}
	return out
}

// polError is an OpenAI-shaped error body, all four keys required.
type polError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func polReadError(t *testing.T, res *http.Response) polError {
	t.Helper()
	var raw struct {
		Error map[string]json.RawMessage `json:"error"`
	}
	b, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("error body %q: %v", b, err)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := raw.Error[k]; !ok {
			t.Fatalf("error body %s lacks %q", b, k)
		}
	}
	var e struct{ Error polError }
	json.Unmarshal(b, &e)
	return e.Error
}

func polReadJSON[T any](t *testing.T, res *http.Response) T {
	t.Helper()
	var v T
	b, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	return v
}

func polPtr(s string) *string { return &s }

// polWant is the error expected from a control-plane call; nil fields are
// null in the body.
type polWant struct {
	Type  string
	Code  *string
	Param *string
}

const validCreate = `{"name":"100 RPM per API key","conditions":[{"key":"workspace_id","value":"ws-1"}],"group_by":[{"key":"api_key"}],"type":"requests","unit":"rpm","value":100}`

func TestPolicyControlPlaneStatuses(t *testing.T) {
	invalid := func(param string) *polWant {
		w := &polWant{Type: "invalid_request_error", Code: polPtr("invalid_parameter")}
		if param != "" {
			w.Param = polPtr(param)
		}
		return w
	}
	notFound := &polWant{Type: "not_found_error", Code: polPtr("not_found")}
	forbidden := &polWant{Type: "permission_error", Code: polPtr("permission_denied")}
	coll := "/v1/policies/rate-limits"
	one := func(id string) string { return coll + "/" + id }

	tests := []struct {
		name         string
		key          string
		method, path string
		body         string
		noStore      bool
		status       int
		err          *polWant
		allow        string
	}{
		{name: "create", key: polAdmin, method: "POST", path: coll, body: validCreate, status: 200},
		{name: "create tokens per metadata", key: polAdmin, method: "POST", path: coll, body: `{"conditions":[{"key":"metadata.team","value":"a"}],"group_by":[{"key":"metadata._user"}],"type":"tokens","unit":"rpd","value":0.5,"workspace_id":"ws-1"}`, status: 200},
		{name: "create by member", key: polMember, method: "POST", path: coll, body: validCreate, status: 403, err: forbidden},
		{name: "create in another workspace", key: polAdmin, method: "POST", path: coll, body: strings.Replace(validCreate, `"value":100`, `"value":100,"workspace_id":"ws-2"`, 1), status: 403, err: &polWant{Type: "permission_error", Code: polPtr("permission_denied"), Param: polPtr("workspace_id")}},
		{name: "create not JSON", key: polAdmin, method: "POST", path: coll, body: `{"name":`, status: 400, err: invalid("")},
		{name: "create empty body", key: polAdmin, method: "POST", path: coll, status: 400, err: invalid("")},
		{name: "create array", key: polAdmin, method: "POST", path: coll, body: `[]`, status: 400, err: invalid("")},
		{name: "create two objects", key: polAdmin, method: "POST", path: coll, body: validCreate + validCreate, status: 400, err: invalid("")},
		{name: "create unknown field", key: polAdmin, method: "POST", path: coll, body: strings.Replace(validCreate, `"value":100`, `"value":100,"status":"archived"`, 1), status: 400, err: invalid("status")},
		{name: "create no conditions", key: polAdmin, method: "POST", path: coll, body: strings.Replace(validCreate, `[{"key":"workspace_id","value":"ws-1"}]`, `[]`, 1), status: 400, err: invalid("conditions")},
		{name: "create no group_by", key: polAdmin, method: "POST", path: coll, body: strings.Replace(validCreate, `[{"key":"api_key"}]`, `[]`, 1), status: 400, err: invalid("group_by")},
		{name: "create bad condition key", key: polAdmin, method: "POST", path: coll, body: strings.Replace(validCreate, `"key":"workspace_id"`, `"key":"model"`, 1), status: 400, err: invalid("conditions[0].key")},
		{name: "create bad group key", key: polAdmin, method: "POST", path: coll, body: strings.Replace(validCreate, `"key":"api_key"`, `"key":"metadata."`, 1), status: 400, err: invalid("group_by[0].key")},
		{name: "create bad type", key: polAdmin, method: "POST", path: coll, body: strings.Replace(validCreate, `"requests"`, `"cost"`, 1), status: 400, err: invalid("type")},
		{name: "create bad unit", key: polAdmin, method: "POST", path: coll, body: strings.Replace(validCreate, `"rpm"`, `"rps"`, 1), status: 400, err: invalid("unit")},
		{name: "create zero value", key: polAdmin, method: "POST", path: coll, body: strings.Replace(validCreate, `"value":100`, `"value":0`, 1), status: 400, err: invalid("value")},
		{name: "create negative value", key: polAdmin, method: "POST", path: coll, body: strings.Replace(validCreate, `"value":100`, `"value":-3`, 1), status: 400, err: invalid("value")},
		{name: "create string value", key: polAdmin, method: "POST", path: coll, body: strings.Replace(validCreate, `"value":100`, `"value":"100"`, 1), status: 400, err: invalid("value")},
		{name: "create requests below one", key: polAdmin, method: "POST", path: coll, body: strings.Replace(validCreate, `"value":100`, `"value":0.5`, 1), status: 400, err: invalid("value")},
		{name: "create without value", key: polAdmin, method: "POST", path: coll, body: strings.Replace(validCreate, `,"value":100`, ``, 1), status: 400, err: invalid("value")},
		{name: "create long name", key: polAdmin, method: "POST", path: coll, body: strings.Replace(validCreate, `"100 RPM per API key"`, `"`+strings.Repeat("n", 256)+`"`, 1), status: 400, err: invalid("name")},
		{name: "create bad organisation", key: polAdmin, method: "POST", path: coll, body: strings.Replace(validCreate, `"value":100`, `"value":100,"organisation_id":"org-1"`, 1), status: 400, err: invalid("organisation_id")},
		{name: "create too large", key: polAdmin, method: "POST", path: coll, body: `{"name":"` + strings.Repeat("x", 5000) + `"}`, status: 413, err: &polWant{Type: "invalid_request_error", Code: polPtr("payload_too_large")}},

		{name: "list", key: polAdmin, method: "GET", path: coll, status: 200},
		{name: "list by member", key: polMember, method: "GET", path: coll, status: 403, err: forbidden},
		{name: "list own workspace", key: polAdmin, method: "GET", path: coll + "?workspace_id=ws-1", status: 200},
		{name: "list other workspace", key: polAdmin, method: "GET", path: coll + "?workspace_id=ws-2", status: 403,
			err: &polWant{Type: "permission_error", Param: polPtr("workspace_id"), Code: polPtr("permission_denied")}},
		{name: "list bad status", key: polAdmin, method: "GET", path: coll + "?status=deleted", status: 400, err: invalid("status")},
		{name: "list bad type", key: polAdmin, method: "GET", path: coll + "?type=cost", status: 400, err: invalid("type")},
		{name: "list bad unit", key: polAdmin, method: "GET", path: coll + "?unit=rps", status: 400, err: invalid("unit")},
		{name: "list negative page_size", key: polAdmin, method: "GET", path: coll + "?page_size=-1", status: 400, err: invalid("page_size")},
		{name: "list huge page_size", key: polAdmin, method: "GET", path: coll + "?page_size=1001", status: 400, err: invalid("page_size")},
		{name: "list word current_page", key: polAdmin, method: "GET", path: coll + "?current_page=two", status: 400, err: invalid("current_page")},
		{name: "list no store", key: polAdmin, method: "GET", path: coll, noStore: true, status: 404, err: notFound},
		{name: "collection PATCH", key: polAdmin, method: "PATCH", path: coll, status: 405, allow: "GET, POST"},
		{name: "collection DELETE", key: polAdmin, method: "DELETE", path: coll, status: 405, allow: "GET, POST"},
		{name: "no gateway key", method: "GET", path: coll, status: 401, err: &polWant{Type: "invalid_request_error", Code: polPtr("missing_api_key")}},

		{name: "get", key: polAdmin, method: "GET", path: one(polIDActive), status: 200},
		{name: "get archived", key: polAdmin, method: "GET", path: one(polIDArchived) + "?status=archived", status: 200},
		{name: "get archived by default", key: polAdmin, method: "GET", path: one(polIDArchived), status: 404, err: notFound},
		{name: "get archived as active", key: polAdmin, method: "GET", path: one(polIDArchived) + "?status=active", status: 404, err: notFound},
		{name: "get active as archived", key: polAdmin, method: "GET", path: one(polIDActive) + "?status=archived", status: 404, err: notFound},
		{name: "get by member", key: polMember, method: "GET", path: one(polIDActive), status: 403, err: forbidden},
		{name: "get other workspace", key: polAdmin, method: "GET", path: one(polIDOther), status: 404, err: notFound},
		{name: "get from other workspace", key: polAdmin2, method: "GET", path: one(polIDActive), status: 404, err: notFound},
		{name: "get unknown", key: polAdmin, method: "GET", path: one(polIDUnknown), status: 404, err: notFound},
		{name: "get malformed id", key: polAdmin, method: "GET", path: one("not-a-uuid"), status: 400, err: invalid("rateLimitsPolicyId")},
		{name: "item POST", key: polAdmin, method: "POST", path: one(polIDActive), body: `{}`, status: 405, allow: "GET, PUT, DELETE"},

		{name: "put value and unit", key: polAdmin, method: "PUT", path: one(polIDActive), body: `{"value":200,"unit":"rph"}`, status: 200},
		{name: "put name", key: polAdmin, method: "PUT", path: one(polIDActive), body: `{"name":"renamed"}`, status: 200},
		{name: "put null name", key: polAdmin, method: "PUT", path: one(polIDActive), body: `{"name":null}`, status: 200},
		{name: "put by member", key: polMember, method: "PUT", path: one(polIDActive), body: `{"value":1}`, status: 403, err: forbidden},
		{name: "put type", key: polAdmin, method: "PUT", path: one(polIDActive), body: `{"value":5,"type":"tokens"}`, status: 400, err: invalid("type")},
		{name: "put status", key: polAdmin, method: "PUT", path: one(polIDActive), body: `{"status":"archived"}`, status: 400, err: invalid("status")},
		{name: "put conditions", key: polAdmin, method: "PUT", path: one(polIDActive), body: `{"conditions":[]}`, status: 400, err: invalid("conditions")},
		{name: "put bad unit", key: polAdmin, method: "PUT", path: one(polIDActive), body: `{"unit":"rpw"}`, status: 400, err: invalid("unit")},
		{name: "put zero value", key: polAdmin, method: "PUT", path: one(polIDActive), body: `{"value":0}`, status: 400, err: invalid("value")},
		{name: "put negative value", key: polAdmin, method: "PUT", path: one(polIDActive), body: `{"value":-1}`, status: 400, err: invalid("value")},
		{name: "put requests value below one", key: polAdmin, method: "PUT", path: one(polIDActive), body: `{"value":0.5}`, status: 400, err: invalid("value")},
		{name: "put tokens value below one", key: polAdmin, method: "PUT", path: one(polIDArchived), body: `{"value":0.5}`, status: 200},
		{name: "put null value", key: polAdmin, method: "PUT", path: one(polIDActive), body: `{"value":null}`, status: 400, err: invalid("value")},
		{name: "put string value", key: polAdmin, method: "PUT", path: one(polIDActive), body: `{"value":"5"}`, status: 400, err: invalid("value")},
		{name: "put numeric name", key: polAdmin, method: "PUT", path: one(polIDActive), body: `{"name":5}`, status: 400, err: invalid("name")},
		{name: "put empty object", key: polAdmin, method: "PUT", path: one(polIDActive), body: `{}`, status: 400, err: invalid("")},
		{name: "put not an object", key: polAdmin, method: "PUT", path: one(polIDActive), body: `[1]`, status: 400, err: invalid("")},
		{name: "put malformed id", key: polAdmin, method: "PUT", path: one("7d1e"), body: `{"value":1}`, status: 400, err: invalid("rateLimitsPolicyId")},
		{name: "put unknown", key: polAdmin, method: "PUT", path: one(polIDUnknown), body: `{"value":1}`, status: 404, err: notFound},
		{name: "put other workspace", key: polAdmin, method: "PUT", path: one(polIDOther), body: `{"value":1}`, status: 404, err: notFound},
		{name: "put too large", key: polAdmin, method: "PUT", path: one(polIDActive), body: `{"name":"` + strings.Repeat("x", 5000) + `"}`, status: 413, err: &polWant{Type: "invalid_request_error", Code: polPtr("payload_too_large")}},

		{name: "delete", key: polAdmin, method: "DELETE", path: one(polIDActive), status: 200},
		{name: "delete by member", key: polMember, method: "DELETE", path: one(polIDActive), status: 403, err: forbidden},
		{name: "delete unknown", key: polAdmin, method: "DELETE", path: one(polIDUnknown), status: 404, err: notFound},
		{name: "delete other workspace", key: polAdmin, method: "DELETE", path: one(polIDOther), status: 404, err: notFound},
		{name: "delete malformed id", key: polAdmin, method: "DELETE", path: one("x"), status: 400, err: invalid("rateLimitsPolicyId")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newPolEnv(t, nil, func(o *gateway.Options) {
				o.MaxBodyBytes = 4096
				if tt.noStore {
					o.Policies = nil
				}
			})
			e.seed()
			res := e.do(tt.key, tt.method, tt.path, tt.body, "Content-Type: application/json")
			if res.StatusCode != tt.status {
				b, _ := io.ReadAll(res.Body)
				t.Fatalf("status %d, want %d; body %s", res.StatusCode, tt.status, b)
			}
			if tt.allow != "" {
				if got := res.Header.Get("Allow"); got != tt.allow {
					t.Errorf("Allow = %q, want %q", got, tt.allow)
				}
				return
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			if tt.err == nil {
				return
			}
			got := polReadError(t, res)
			want := polError{Type: tt.err.Type, Code: tt.err.Code, Param: tt.err.Param}
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(polError{}, "Message")); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if got.Message == "" {
				t.Error("empty error message")
			}
		})
	}
}

// wirePolicy is a policy as a client decodes it, plus the "object" of a
// single-policy response.
type wirePolicy struct {
	gateway.RateLimitsPolicy
	Object string `json:"object"`
}

type wireList struct {
	Object string                     `json:"object"`
	Data   []gateway.RateLimitsPolicy `json:"data"`
	Total  int                        `json:"total"`
}

func TestPolicyLifecycle(t *testing.T) {
	e := newPolEnv(t, nil, nil)
	e.seed()

	// Create: the server picks the id and timestamps.
	res := e.do(polAdmin, "POST", "/v1/policies/rate-limits", validCreate)
	if res.StatusCode != 200 {
		t.Fatalf("create: status %d", res.StatusCode)
	}
	created := polReadJSON[struct{ ID, Object string }](t, res)
	if created.Object != "policy_rate_limits" || len(created.ID) != 36 {
		t.Fatalf("create answered %+v", created)
	}
	got := polReadJSON[wirePolicy](t, e.do(polAdmin, "GET", "/v1/policies/rate-limits/"+created.ID, ""))
	want := wirePolicy{Object: "policy_rate_limits", RateLimitsPolicy: gateway.RateLimitsPolicy{
		ID: created.ID, Name: "100 RPM per API key",
		Conditions: []gateway.PolicyCondition{{Key: "workspace_id", Value: "ws-1"}},
		GroupBy:    []gateway.PolicyGroupBy{{Key: "api_key"}},
		Type:       "requests", Unit: "rpm", Value: 100, Status: "active", WorkspaceID: "ws-1",
	}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(gateway.RateLimitsPolicy{}, "CreatedAt", "LastUpdatedAt")); diff != "" {
		t.Fatalf("created policy (-want +got):\n%s", diff)
	}
	if got.CreatedAt == "" || got.LastUpdatedAt != got.CreatedAt {
		t.Fatalf("timestamps created_at %q, last_updated_at %q", got.CreatedAt, got.LastUpdatedAt)
	}

	// PUT of each field changes that field only.
	for _, step := range []struct {
		body string
		edit func(*gateway.RateLimitsPolicy)
	}{
		{`{"value":250}`, func(p *gateway.RateLimitsPolicy) { p.Value = 250 }},
		{`{"unit":"rpd"}`, func(p *gateway.RateLimitsPolicy) { p.Unit = "rpd" }},
		{`{"name":"daily"}`, func(p *gateway.RateLimitsPolicy) { p.Name = "daily" }},
		{`{"name":"both","value":7.5,"unit":"rph"}`, func(p *gateway.RateLimitsPolicy) { p.Name, p.Value, p.Unit = "both", 7.5, "rph" }},
	} {
		res := e.do(polAdmin, "PUT", "/v1/policies/rate-limits/"+created.ID, step.body)
		if b, _ := io.ReadAll(res.Body); res.StatusCode != 200 || string(bytes.TrimSpace(b)) != "{}" {
			t.Fatalf("PUT %s: %d %s", step.body, res.StatusCode, b)
		}
		step.edit(&want.RateLimitsPolicy)
		got := polReadJSON[wirePolicy](t, e.do(polAdmin, "GET", "/v1/policies/rate-limits/"+created.ID, ""))
		if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(gateway.RateLimitsPolicy{}, "CreatedAt", "LastUpdatedAt")); diff != "" {
			t.Fatalf("after PUT %s (-want +got):\n%s", step.body, diff)
		}
		if got.LastUpdatedAt < got.CreatedAt {
			t.Fatalf("last_updated_at %q before created_at %q", got.LastUpdatedAt, got.CreatedAt)
		}
	}

	// The list shows active policies of the caller's workspace by default.
	ids := func(l wireList) []string {
		var out []string
		for _, p := range l.Data {
			out = append(out, p.ID)
		}
		return out
	}
	lists := []struct {
		query string
		ids   []string
		total int
	}{
		{"", []string{polIDActive, created.ID}, 2},
		{"?status=archived", []string{polIDArchived}, 1},
		{"?type=tokens&status=archived", []string{polIDArchived}, 1},
		{"?type=tokens", nil, 0},
		{"?unit=rph", []string{polIDActive, created.ID}, 2},
		{"?unit=rpm", nil, 0},
		{"?page_size=1", []string{polIDActive}, 2},
		{"?page_size=1&current_page=1", []string{created.ID}, 2},
		{"?page_size=1&current_page=2", nil, 2},
		{"?page_size=0", nil, 2},
	}
	for _, l := range lists {
		got := polReadJSON[wireList](t, e.do(polAdmin, "GET", "/v1/policies/rate-limits"+l.query, ""))
		if got.Object != "list" || got.Total != l.total || !cmp.Equal(l.ids, ids(got), cmpopts.EquateEmpty()) {
			t.Errorf("list %q: object %q total %d ids %v; want total %d ids %v", l.query, got.Object, got.Total, ids(got), l.total, l.ids)
		}
		if got.Data == nil {
			t.Errorf("list %q: data is null, want []", l.query)
		}
	}
	// Workspace isolation: ws-2 sees only its own.
	other := polReadJSON[wireList](t, e.do(polAdmin2, "GET", "/v1/policies/rate-limits?unit=rpm", ""))
	if diff := cmp.Diff([]string{polIDOther}, ids(other)); diff != "" {
		t.Errorf("ws-2 list (-want +got):\n%s", diff)
	}

	// Delete: gone for GET, PUT, DELETE and the list.
	if res := e.do(polAdmin, "DELETE", "/v1/policies/rate-limits/"+created.ID, ""); res.StatusCode != 200 {
		t.Fatalf("delete: %d", res.StatusCode)
	}
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		if res := e.do(polAdmin, m, "/v1/policies/rate-limits/"+created.ID, `{"value":1}`); res.StatusCode != 404 {
			t.Errorf("%s after delete: %d, want 404", m, res.StatusCode)
		}
	}
	if got := polReadJSON[wireList](t, e.do(polAdmin, "GET", "/v1/policies/rate-limits", "")); got.Total != 1 {
		t.Errorf("list after delete: total %d, want 1", got.Total)
	}
}

// perKey3 is a policy of 3 requests per hour per API key in ws-1.
var perKey3 = gateway.RateLimitsPolicy{
	ID:         "7d1e0000-0000-4000-8000-000000000001",
	Conditions: []gateway.PolicyCondition{{Key: "workspace_id", Value: "ws-1"}},
	GroupBy:    []gateway.PolicyGroupBy{{Key: "api_key"}},
	Type:       "requests", Unit: "rph", Value: 3,
}

func TestPolicyEnforcedPerKey(t *testing.T) {
	e := newPolEnv(t, nil, nil)
	e.put(perKey3)

	var remaining []string
	for range 3 {
		res := e.complete(polMember)
		if res.StatusCode != 200 {
			t.Fatalf("status %d, want 200", res.StatusCode)
		}
		if got := res.Header.Get("x-ratelimit-limit-requests"); got != "3" {
			t.Errorf("x-ratelimit-limit-requests = %q, want 3", got)
		}
		remaining = append(remaining, res.Header.Get("x-ratelimit-remaining-requests"))
	}
	if diff := cmp.Diff([]string{"2", "1", "0"}, remaining); diff != "" {
		t.Errorf("x-ratelimit-remaining-requests (-want +got):\n%s", diff)
	}

	res := e.complete(polMember)
	if res.StatusCode != 429 {
		t.Fatalf("4th request: status %d, want 429", res.StatusCode)
	}
	ra, err := strconv.Atoi(res.Header.Get("Retry-After"))
	if err != nil || ra < 1 || ra > 3600 {
		t.Errorf("Retry-After = %q, want whole seconds from 1 to 3600", res.Header.Get("Retry-After"))
	}
	got := polReadError(t, res)
	if diff := cmp.Diff(polError{Type: "requests", Code: polPtr("rate_limit_exceeded")}, got, cmpopts.IgnoreFields(polError{}, "Message")); diff != "" {
		t.Errorf("429 body (-want +got):\n%s", diff)
	}
	if res.Header.Get("x-gateway-trace-id") == "" {
		t.Error("429 without x-gateway-trace-id")
	}

	// Another key has its own bucket; other routes count too.
	if got := e.statuses(1, polMember2); got[0] != 200 {
		t.Fatalf("another key: %d, want 200", got[0])
	}
	if res := e.do(polMember, "GET", "/v1/models", "", "x-gateway-virtual-key: vk"); res.StatusCode != 429 {
		t.Fatalf("pass-through GET of the limited key: %d, want 429", res.StatusCode)
	}
	// The control plane is not rate-limited, even for a limited key.
	for range 5 {
		if res := e.do(polAdmin, "GET", "/v1/policies/rate-limits", ""); res.StatusCode != 200 {
			t.Fatalf("control plane: %d", res.StatusCode)
		}
	}
	if n := e.calls.Load(); n != 4 {
		t.Fatalf("provider served %d requests, want 4 (3 + 1 of another key)", n)
	}

	// The refusals are in the request log.
	e.gw.Close()
	var refused int
	for _, rec := range e.logs.Query(gateway.LogFilter{}) {
		if rec.Status == 429 && rec.ErrorCode == "rate_limit_exceeded" && rec.KeyID == "key-member" {
			refused++
		}
	}
	if refused != 2 {
		t.Errorf("%d refusals logged with rate_limit_exceeded, want 2", refused)
	}
}

func TestPolicyChangeTakesEffect(t *testing.T) {
	e := newPolEnv(t, nil, nil)
	e.put(perKey3)
	path := "/v1/policies/rate-limits/" + perKey3.ID
	put := func(body string) {
		t.Helper()
		if res := e.do(polAdmin, "PUT", path, body); res.StatusCode != 200 {
			t.Fatalf("PUT %s: %d", body, res.StatusCode)
		}
	}
	if got := e.statuses(2, polMember); !cmp.Equal(got, []int{200, 200}) {
		t.Fatalf("first two: %v", got)
	}
	put(`{"value":1}`) // below the 2 consumed: refused at once
	if got := e.statuses(1, polMember); got[0] != 429 {
		t.Fatalf("after lowering to 1: %d, want 429", got[0])
	}
	put(`{"value":5}`) // 2 used of 5: exactly 3 more
	if got := e.statuses(4, polMember); !cmp.Equal(got, []int{200, 200, 200, 429}) {
		t.Fatalf("after raising to 5: %v, want 3 admitted then 429", got)
	}
	put(`{"unit":"rpd"}`) // a longer unit drains more slowly; consumption stays
	res := e.complete(polMember)
	if ra, _ := strconv.Atoi(res.Header.Get("Retry-After")); res.StatusCode != 429 || ra < 3600 {
		t.Fatalf("per day: %d with Retry-After %q, want 429 after hours", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if res := e.do(polAdmin, "DELETE", path, ""); res.StatusCode != 200 {
		t.Fatalf("delete: %d", res.StatusCode)
	}
	if got := e.statuses(1, polMember); got[0] != 200 {
		t.Fatalf("after delete: %d, want 200", got[0])
	}
	if n := e.calls.Load(); n != 6 {
		t.Fatalf("provider served %d, want 6", n)
	}
}

func TestPolicyMatching(t *testing.T) {
	perUser := gateway.RateLimitsPolicy{
		ID:         "7d1e0000-0000-4000-8000-000000000002",
		Conditions: []gateway.PolicyCondition{{Key: "metadata._environment", Value: "prod"}},
		GroupBy:    []gateway.PolicyGroupBy{{Key: "metadata._user"}},
		Type:       "requests", Unit: "rpm", Value: 1,
	}
	md := func(s string) string { return "x-gateway-metadata: " + s }
	tests := []struct {
		name     string
		policies []gateway.RateLimitsPolicy
		sends    [][]string // key, then headers
		want     []int
	}{
		{
			name:     "users limited independently",
			policies: []gateway.RateLimitsPolicy{perUser},
			sends: [][]string{
				{polMember, md(`{"_user":"alice","_environment":"prod"}`)},
				{polMember, md(`{"_user":"alice","_environment":"prod"}`)},
				{polMember2, md(`{"_user":"alice","_environment":"prod"}`)}, // same user, other key
				{polMember, md(`{"_user":"bob","_environment":"prod"}`)},
				{polMember, md(`{"_environment":"prod"}`)}, // no user: the empty user's bucket
				{polMember, md(`{"_environment":"prod"}`)},
				{polMember, md(`{"_user":"alice","_environment":"dev"}`)}, // condition not met
				{polMember},
			},
			want: []int{200, 429, 429, 200, 200, 429, 200, 200},
		},
		{
			name: "api_key condition",
			policies: []gateway.RateLimitsPolicy{{
				ID: "7d1e0000-0000-4000-8000-000000000003", Conditions: []gateway.PolicyCondition{{Key: "api_key", Value: "key-member-2"}},
				GroupBy: []gateway.PolicyGroupBy{{Key: "workspace_id"}}, Type: "requests", Unit: "rph", Value: 1,
			}},
			sends: [][]string{{polMember}, {polMember}, {polMember2}, {polMember2}},
			want:  []int{200, 200, 200, 429},
		},
		{
			name: "organisation_id and archived",
			policies: []gateway.RateLimitsPolicy{{
				ID: "7d1e0000-0000-4000-8000-000000000004", Conditions: []gateway.PolicyCondition{{Key: "organisation_id", Value: "org-a"}},
				GroupBy: []gateway.PolicyGroupBy{{Key: "organisation_id"}}, Type: "requests", Unit: "rph", Value: 1,
			}, {
				ID: "7d1e0000-0000-4000-8000-000000000005", Conditions: []gateway.PolicyCondition{{Key: "workspace_id", Value: "ws-1"}},
				GroupBy: []gateway.PolicyGroupBy{{Key: "api_key"}}, Type: "requests", Unit: "rph", Value: 1, Status: gateway.PolicyArchived,
			}},
			sends: [][]string{{polMember, md(`{"_organisation":"org-a"}`)}, {polMember2, md(`{"_organisation":"org-a"}`)}, {polMember, md(`{"_organisation":"org-b"}`)}, {polMember}},
			want:  []int{200, 429, 200, 200},
		},
		{
			name: "another workspace's policy",
			policies: []gateway.RateLimitsPolicy{{
				ID: "7d1e0000-0000-4000-8000-000000000006", GroupBy: []gateway.PolicyGroupBy{{Key: "api_key"}},
				Type: "requests", Unit: "rph", Value: 1, WorkspaceID: "ws-2",
			}},
			sends: [][]string{{polMember}, {polMember}},
			want:  []int{200, 200},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newPolEnv(t, nil, nil)
			for _, p := range tt.policies {
				e.put(p)
			}
			var got []int
			for _, s := range tt.sends {
				got = append(got, e.statuses(1, s[0], s[1:]...)...)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("statuses (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPolicyRefusalChargesNothing: when one policy refuses, the others that
// admitted the request give the request back, and the headers report the
// tightest policy.
func TestPolicyRefusalChargesNothing(t *testing.T) {
	e := newPolEnv(t, nil, nil)
	e.put(gateway.RateLimitsPolicy{ // checked first: 5 per hour for the workspace
		ID: "7d1e0000-0000-4000-8000-000000000010", GroupBy: []gateway.PolicyGroupBy{{Key: "workspace_id"}},
		Type: "requests", Unit: "rph", Value: 5, CreatedAt: "2025-01-01T00:00:00.000Z",
	})
	e.put(gateway.RateLimitsPolicy{ // then 1 per hour per user
		ID: "7d1e0000-0000-4000-8000-000000000011", GroupBy: []gateway.PolicyGroupBy{{Key: "metadata._user"}},
		Type: "requests", Unit: "rph", Value: 1, CreatedAt: "2025-01-02T00:00:00.000Z",
	})
	user := func(u string) string { return `x-gateway-metadata: {"_user":"` + u + `"}` }
	res := e.complete(polMember, user("u1"))
	if l, r := res.Header.Get("x-ratelimit-limit-requests"), res.Header.Get("x-ratelimit-remaining-requests"); l != "1" || r != "0" {
		t.Errorf("tightest policy reported as limit %q remaining %q, want 1 and 0", l, r)
	}
	got := e.statuses(3, polMember, user("u1"))
	for _, u := range []string{"u2", "u3", "u4", "u5", "u6"} {
		got = append(got, e.statuses(1, polMember, user(u))...)
	}
	if diff := cmp.Diff([]int{429, 429, 429, 200, 200, 200, 200, 429}, got); diff != "" {
		t.Fatalf("statuses (-want +got):\n%s", diff)
	}
	if n := e.calls.Load(); n != 5 {
		t.Fatalf("provider served %d, want 5", n)
	}
}

// usageJSON answers like a chat completion that used total tokens.
func usageJSON(total int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body := `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}],"usage":{"prompt_tokens":1,"completion_tokens":` +
			strconv.Itoa(total-1) + `,"total_tokens":` + strconv.Itoa(total) + `}}`
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			io.WriteString(zw, body)
			zw.Close()
			return
		}
		io.WriteString(w, body)
	}
}

// usageStream is an SSE body whose last chunk carries the usage.
func usageStream(total int) string {
	return "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"usage\"}}],\"usage\":null}\n\n" +
		"data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\\\"total_tokens\\\": 1\"}}],\"usage\":null}\n\n" +
		"data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":" + strconv.Itoa(total-1) + ",\"total_tokens\":" + strconv.Itoa(total) + "}}\n\n" +
		"data: [DONE]\n\n"
}

var tokens100 = gateway.RateLimitsPolicy{
	ID:         "7d1e0000-0000-4000-8000-000000000020",
	Conditions: []gateway.PolicyCondition{{Key: "workspace_id", Value: "ws-1"}},
	GroupBy:    []gateway.PolicyGroupBy{{Key: "api_key"}},
	Type:       "tokens", Unit: "rph", Value: 100,
}

func TestPolicyTokens(t *testing.T) {
	t.Run("json", func(t *testing.T) {
		e := newPolEnv(t, usageJSON(60), nil)
		e.put(tokens100)
		var rem []string
		for range 2 {
			res := e.complete(polMember)
			io.Copy(io.Discard, res.Body)
			if res.StatusCode != 200 || res.Header.Get("x-ratelimit-limit-tokens") != "100" {
				t.Fatalf("status %d, x-ratelimit-limit-tokens %q", res.StatusCode, res.Header.Get("x-ratelimit-limit-tokens"))
			}
			rem = append(rem, res.Header.Get("x-ratelimit-remaining-tokens"))
		}
		if diff := cmp.Diff([]string{"100", "40"}, rem); diff != "" {
			t.Errorf("x-ratelimit-remaining-tokens (-want +got):\n%s", diff)
		}
		res := e.complete(polMember)
		if res.StatusCode != 429 || res.Header.Get("Retry-After") == "" {
			t.Fatalf("after 120 of 100 tokens: %d, Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
		}
		if got := polReadError(t, res); got.Type != "tokens" || polDeref(got.Code) != "rate_limit_exceeded" {
			t.Errorf("429 body %+v", got)
		}
		if got := e.statuses(1, polMember2); got[0] != 200 {
			t.Errorf("another key: %d", got[0])
		}
		if n := e.calls.Load(); n != 3 {
			t.Errorf("provider served %d, want 3", n)
		}
	})
	t.Run("gzip asked by the caller", func(t *testing.T) {
		e := newPolEnv(t, usageJSON(60), nil)
		e.put(tokens100)
		for range 2 {
			res := e.complete(polMember, "Accept-Encoding: gzip")
			b, _ := io.ReadAll(res.Body)
			if !bytes.Contains(b, []byte(`"total_tokens":60`)) && res.Header.Get("Content-Encoding") == "" {
				t.Fatalf("response body %q", b)
			}
		}
		if got := e.statuses(1, polMember); got[0] != 429 {
			t.Fatalf("after 120 tokens with gzip asked: %d, want 429", got[0])
		}
	})
	t.Run("stream", func(t *testing.T) {
		stream := usageStream(150)
		e := newPolEnv(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			rc := http.NewResponseController(w)
			for ev := range strings.SplitAfterSeq(stream, "\n\n") {
				io.WriteString(w, ev)
				rc.Flush()
			}
		}, nil)
		e.put(tokens100)
		res := e.complete(polMember)
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 || string(b) != stream {
			t.Fatalf("stream: %d, body changed:\n%s", res.StatusCode, b)
		}
		res = e.complete(polMember)
		if res.StatusCode != 429 {
			t.Fatalf("after a stream of 150 tokens: %d, want 429", res.StatusCode)
		}
		// 150 used of 100 per hour: 50 must drain, 30 minutes.
		if ra, _ := strconv.Atoi(res.Header.Get("Retry-After")); ra != 1800 {
			t.Errorf("Retry-After = %q, want 1800", res.Header.Get("Retry-After"))
		}
	})
	t.Run("large body not held", func(t *testing.T) {
		// A 4 MiB body with the usage at the end passes through unchanged
		// and is charged.
		filler := strings.Repeat("x", 4<<20)
		body := `{"data":"` + filler + `","usage":{"total_tokens":101}}`
		e := newPolEnv(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, body)
		}, nil)
		e.put(tokens100)
		res := e.complete(polMember)
		b, _ := io.ReadAll(res.Body)
		if string(b) != body {
			t.Fatalf("body of %d bytes changed to %d bytes", len(body), len(b))
		}
		if got := e.statuses(1, polMember); got[0] != 429 {
			t.Fatalf("after 101 of 100 tokens: %d, want 429", got[0])
		}
	})
}

// chargeLimiter is a MemoryLimiter that reports every Charge on charged.
type chargeLimiter struct {
	gateway.MemoryLimiter
	charged chan float64
}

func (l *chargeLimiter) Charge(ctx context.Context, key string, limit gateway.Limit, n float64) error {
	l.charged <- n
	return l.MemoryLimiter.Charge(ctx, key, limit, n)
}

// TestPolicyTokensCharged: what a tokens policy charges for each kind of
// answer, usage reported or not. An answer without usage is charged an
// estimate (a token per 4 bytes of the request body, plus a token per
// event or per 4 bytes of JSON), so that leaving usage out escapes nothing.
func TestPolicyTokensCharged(t *testing.T) {
	const reqBody = `{"model":"m","stream":true,"messages":[]}` // 41 bytes: 11 tokens
	sse := func(events ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, ev := range events {
				io.WriteString(w, ev)
				http.NewResponseController(w).Flush()
			}
		}
	}
	answer := func(status int, contentType, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", contentType)
			w.WriteHeader(status)
			io.WriteString(w, body)
		}
	}
	tests := []struct {
		name        string
		up          http.HandlerFunc
		contentType string // of the request; JSON when empty
		want        float64
	}{
		{name: "stream with usage", up: sse("data: {\"choices\":[]}\n\n", "data: {\"choices\":[],\"usage\":{\"total_tokens\":30}}\n\n", "data: [DONE]\n\n"), want: 30},
		{name: "stream without usage", up: sse("data: {\"choices\":[]}\n\n", "data: {\"choices\":[]}\n\n", "data: [DONE]\n\n"), want: 11 + 3},
		{
			name: "anthropic stream",
			up: sse("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n",
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":15}}\n\n"),
			want: 40,
		},
		{name: "json without usage", up: answer(200, "application/json", `{"id":"x","choices":[{"text":"ok"}]}`), want: 11 + 9},
		{name: "binary answer", up: answer(200, "audio/mpeg", "ID3\x03\x00"), want: 11},
		{name: "provider error without usage", up: answer(400, "application/json", `{"error":{"message":"bad"}}`), want: 0},
		{name: "upload without usage", up: answer(200, "application/json", `{"id":"file-1"}`), contentType: "multipart/form-data; boundary=x", want: 0},
		{
			name: "bedrock converse",
			up:   answer(200, "application/json", `{"output":{"message":{"role":"assistant","content":[{"text":"Hi"}]}},"stopReason":"end_turn","usage":{"inputTokens":30,"outputTokens":12,"totalTokens":42},"metrics":{"latencyMs":310}}`),
			want: 42,
		},
		{
			name: "vertex generateContent",
			up:   answer(200, "application/json", `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi"}]}}],"usageMetadata":{"promptTokenCount":80,"candidatesTokenCount":50,"totalTokenCount":130}}`),
			want: 130,
		},
		{
			name: "vertex stream",
			up: sse("data: {\"candidates\":[],\"usageMetadata\":{\"promptTokenCount\":80,\"totalTokenCount\":80}}\r\n\r\n",
				"data: {\"candidates\":[],\"usageMetadata\":{\"promptTokenCount\":80,\"candidatesTokenCount\":70,\"totalTokenCount\":150}}\r\n\r\n"),
			want: 150,
		},
		{
			name: "vertex stream as a json array",
			up: answer(200, "application/json", `[{"candidates":[],"usageMetadata":{"promptTokenCount":80,"totalTokenCount":80}},`+
				`{"candidates":[],"usageMetadata":{"promptTokenCount":80,"candidatesTokenCount":70,"totalTokenCount":150}}]`),
			want: 150,
		},
		// Bedrock's binary event stream is not read: the request's estimate.
		{name: "bedrock event stream", up: answer(200, "application/vnd.amazon.eventstream", "\x00\x00\x00\x7f:event-type\x07\x00\x08metadata{\"usage\":{\"totalTokens\":500}}"), want: 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim := &chargeLimiter{charged: make(chan float64, 10)}
			e := newPolEnv(t, tt.up, func(o *gateway.Options) { o.Limiter = lim })
			e.put(tokens100)
			ct := tt.contentType
			if ct == "" {
				ct = "application/json"
			}
			res := e.do(polMember, "POST", "/v1/chat/completions", reqBody, "x-gateway-virtual-key: vk", "Content-Type: "+ct)
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			e.srv.Close() // waits for the handler, which charges before it returns
			got := 0.0
			select {
			case got = <-lim.charged:
			default:
			}
			if got != tt.want {
				t.Errorf("charged %v tokens, want %v", got, tt.want)
			}
		})
	}

	t.Run("caller hangs up mid-stream", func(t *testing.T) {
		release := make(chan struct{})
		lim := &chargeLimiter{charged: make(chan float64, 10)}
		e := newPolEnv(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"choices\":[]}\n\n")
			http.NewResponseController(w).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}, func(o *gateway.Options) { o.Limiter = lim })
		t.Cleanup(func() { close(release) })
		e.put(tokens100)
		res := e.do(polMember, "POST", "/v1/chat/completions", reqBody, "x-gateway-virtual-key: vk", "Content-Type: application/json")
		if _, err := bufio.NewReader(res.Body).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		select {
		case got := <-lim.charged:
			if got != 11+1 {
				t.Errorf("charged %v tokens for one event, want %v", got, 11+1)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a caller that hung up was charged nothing")
		}
	})
}

// refusingLimiter refuses every Take with the RetryAfter it is given.
type refusingLimiter struct{ retryAfter time.Duration }

func (l refusingLimiter) Take(context.Context, string, gateway.Limit, float64) (gateway.LimitDecision, error) {
	return gateway.LimitDecision{RetryAfter: l.retryAfter}, nil
}

func (refusingLimiter) Charge(context.Context, string, gateway.Limit, float64) error { return nil }

// TestPolicyRetryAfterBounds: every 429 carries Retry-After as whole
// seconds of at least 1, however long the wait or whatever the Limiter
// answers.
func TestPolicyRetryAfterBounds(t *testing.T) {
	perDay := tokens100
	perDay.Unit, perDay.Value = "rpd", 1
	tests := []struct {
		name    string
		limiter gateway.Limiter
		usage   int // total_tokens of the provider's answer
		atLeast int // seconds
	}{
		// 1e12 tokens at 1 per day drain in millions of years, past what
		// a time.Duration holds.
		{name: "wait beyond a Duration", usage: 1e12, atLeast: 100 * 365 * 24 * 3600},
		{name: "limiter says zero", limiter: refusingLimiter{0}, usage: 1, atLeast: 1},
		{name: "limiter says negative", limiter: refusingLimiter{-time.Hour}, usage: 1, atLeast: 1},
		{name: "limiter says a few ns", limiter: refusingLimiter{3}, usage: 1, atLeast: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newPolEnv(t, usageJSON(tt.usage), func(o *gateway.Options) {
				if tt.limiter != nil {
					o.Limiter = tt.limiter
				}
			})
			e.put(perDay)
			var res *http.Response
			for range 2 {
				if res = e.complete(polMember); res.StatusCode == 429 {
					break
				}
				io.Copy(io.Discard, res.Body)
			}
			if res.StatusCode != 429 {
				t.Fatalf("status %d, want 429", res.StatusCode)
			}
			ra := res.Header.Get("Retry-After")
			if n, err := strconv.ParseInt(ra, 10, 64); err != nil || n < int64(tt.atLeast) {
				t.Errorf("Retry-After = %q, want whole seconds of at least %d", ra, tt.atLeast)
			}
		})
	}
}

func polDeref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// TestPolicyConcurrentHTTP fires 1,000 requests from 64 goroutines at a
// policy of 100 per day: exactly 100 reach the provider.
func TestPolicyConcurrentHTTP(t *testing.T) {
	e := newPolEnv(t, nil, nil)
	e.put(gateway.RateLimitsPolicy{
		ID: "7d1e0000-0000-4000-8000-000000000030", GroupBy: []gateway.PolicyGroupBy{{Key: "workspace_id"}},
		Type: "requests", Unit: "rpd", Value: 100,
	})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	t.Cleanup(client.CloseIdleConnections)
	jobs := make(chan struct{}, 1000)
	for range 1000 {
		jobs <- struct{}{}
	}
	close(jobs)
	var mu sync.Mutex
	counts := map[int]int{}
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for range jobs {
				req, _ := http.NewRequest("POST", e.srv.URL+"/v1/chat/completions", strings.NewReader(`{}`))
				req.Header.Set("x-gateway-api-key", polMember)
				req.Header.Set("x-gateway-virtual-key", "vk")
				res, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				mu.Lock()
				counts[res.StatusCode]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if diff := cmp.Diff(map[int]int{200: 100, 429: 900}, counts); diff != "" {
		t.Fatalf("statuses (-want +got):\n%s", diff)
	}
	if n := e.calls.Load(); n != 100 {
		t.Fatalf("provider served %d, want 100", n)
	}
}

// failingLimiter is a Limiter that is down.
type failingLimiter struct{}

func (failingLimiter) Take(context.Context, string, gateway.Limit, float64) (gateway.LimitDecision, error) {
	return gateway.LimitDecision{}, io.ErrUnexpectedEOF
}

func (failingLimiter) Charge(context.Context, string, gateway.Limit, float64) error {
	return io.ErrUnexpectedEOF
}

func TestPolicyLimiterDownFailsClosed(t *testing.T) {
	e := newPolEnv(t, nil, func(o *gateway.Options) { o.Limiter = failingLimiter{} })
	p := perKey3
	p.Conditions = []gateway.PolicyCondition{{Key: "api_key", Value: "key-member"}}
	e.put(p)
	res := e.complete(polMember)
	if res.StatusCode != 500 {
		t.Fatalf("status %d, want 500", res.StatusCode)
	}
	if got := polReadError(t, res); strings.Contains(got.Message, "EOF") {
		t.Errorf("message %q shows the cause", got.Message)
	}
	if n := e.calls.Load(); n != 0 {
		t.Fatalf("provider served %d, want 0", n)
	}
	// Without a matching policy the limiter is not asked.
	if got := e.statuses(1, polMember2); got[0] != 200 {
		t.Fatalf("key no policy matches: %d, want 200", got[0])
	}
}

// TestPolicyTypedRoutes: typed routes are limited like pass-through, and a
// streamed completion is charged its usage.
func TestPolicyTypedRoutes(t *testing.T) {
	stream := usageStream(150)
	e := newPolEnv(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/completions" {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, stream)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[],"has_more":false}`)
	}, nil)
	e.put(perKey3)
	e.put(tokens100)
	vk := "x-gateway-virtual-key: vk"
	var got []int
	for _, req := range []struct{ method, path, body string }{
		{"GET", "/v1/fine_tuning/jobs?limit=2", ""},
		{"GET", "/v1/files", ""},
		{"POST", "/v1/completions", `{"model":"m","prompt":"hi","stream":true}`},
		{"GET", "/v1/fine_tuning/jobs/ftjob-1", ""},
	} {
		res := e.do(polMember, req.method, req.path, req.body, vk, "Content-Type: application/json")
		b, _ := io.ReadAll(res.Body)
		if req.path == "/v1/completions" && string(b) != stream {
			t.Errorf("streamed completion changed: %q", b)
		}
		got = append(got, res.StatusCode)
	}
	if diff := cmp.Diff([]int{200, 200, 200, 429}, got); diff != "" {
		t.Fatalf("statuses (-want +got):\n%s", diff)
	}
	// The stream's 150 tokens exhausted the key's 100 tokens per hour too.
	p := "/v1/policies/rate-limits/" + perKey3.ID
	if res := e.do(polAdmin, "PUT", p, `{"value":100}`); res.StatusCode != 200 {
		t.Fatalf("PUT: %d", res.StatusCode)
	}
	res := e.do(polMember, "GET", "/v1/files", "", vk)
	if got := polReadError(t, res); res.StatusCode != 429 || got.Type != "tokens" {
		t.Fatalf("after the stream: %d %+v, want 429 of type tokens", res.StatusCode, got)
	}
}

// polTransport answers every provider request in memory, so that a
// gateway can run inside a synctest bubble.
type polTransport struct{ calls *int }

func (p polTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	*p.calls++
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{}`)), Request: r}, nil
}

// polSend sends a member's completion through virtual key vk to gw in
// memory and returns the status and Retry-After. Its body is empty, so
// that a tokens policy estimates the request at the 1 token of
// polTransport's {} answer alone.
func polSend(gw http.Handler) (int, string) {
	req := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	req.Header.Set("x-gateway-api-key", polMember)
	req.Header.Set("x-gateway-virtual-key", "vk")
	rec := httptest.NewRecorder()
	gw.ServeHTTP(rec, req)
	return rec.Code, rec.Header().Get("Retry-After")
}

// TestPolicyWindowFakeTime checks the drain of a per-minute policy through
// the whole gateway with fake time.
func TestPolicyWindowFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memstore.New()
		store.AddAPIKey(gateway.APIKey{ID: "k", Digest: gateway.HashAPIKey(polMember), WorkspaceID: "ws-1", Role: gateway.RoleMember})
		store.AddVirtualKey(gateway.VirtualKey{Slug: "vk", Provider: "openai", APIKey: "sk", BaseURL: "http://provider.test/v1", WorkspaceID: "ws-1"})
		p := perKey3
		p.Unit, p.Value, p.Status = "rpm", 2, gateway.PolicyActive
		p.WorkspaceID = "ws-1"
		store.PutPolicy(context.Background(), &p)
		var calls int
		gw := gateway.New(gateway.Options{Keys: store, VirtualKeys: store, Policies: store, Transport: polTransport{&calls}})
		defer gw.Close()
		send := func() (int, string) { return polSend(gw) }
		type answer struct {
			Status     int
			RetryAfter string
		}
		var got []answer
		add := func() {
			s, ra := send()
			got = append(got, answer{s, ra})
		}
		add()
		add()
		add()                        // refused: one request drains in 30s
		time.Sleep(29 * time.Second) // still refused, 1s to go
		add()
		time.Sleep(time.Second)
		add() // admitted
		add() // refused again
		time.Sleep(time.Minute)
		add()
		add()
		want := []answer{{200, ""}, {200, ""}, {429, "30"}, {429, "1"}, {200, ""}, {429, "30"}, {200, ""}, {200, ""}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("answers over fake time (-want +got):\n%s", diff)
		}
		if calls != 5 {
			t.Fatalf("provider served %d, want 5", calls)
		}
	})
}

// BenchmarkPolicyAdmission measures a request through the whole gateway
// (in memory, no network) without policies and with one matching
// requests policy and one tokens policy, so the cost of enforcement reads
// as the difference.
func BenchmarkPolicyAdmission(b *testing.B) {
	for _, bc := range []struct {
		name     string
		policies []gateway.RateLimitsPolicy
	}{
		{"none", nil},
		{"requests", []gateway.RateLimitsPolicy{perKey3}},
		{"requests+tokens", []gateway.RateLimitsPolicy{perKey3, tokens100}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			store := memstore.New()
			store.AddAPIKey(gateway.APIKey{ID: "k", Digest: gateway.HashAPIKey(polMember), WorkspaceID: "ws-1", Role: gateway.RoleMember})
			store.AddVirtualKey(gateway.VirtualKey{Slug: "vk", Provider: "openai", APIKey: "sk", BaseURL: "http://provider.test/v1", WorkspaceID: "ws-1"})
			for _, p := range bc.policies {
				p.Value, p.Status, p.WorkspaceID = 1e15, gateway.PolicyActive, "ws-1"
				store.PutPolicy(context.Background(), &p)
			}
			var calls int
			gw := gateway.New(gateway.Options{Keys: store, VirtualKeys: store, Policies: store, Transport: polTransport{&calls}})
			defer gw.Close()
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(`{}`))
				req.Header.Set("x-gateway-api-key", polMember)
				req.Header.Set("x-gateway-virtual-key", "vk")
				rec := httptest.NewRecorder()
				gw.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatal(rec.Code)
				}
			}
		})
	}
}

// TestRateLimitsPolicyJSONShape: every field the public schema requires is
// present, empty or not, and the arrays are never null.
func TestRateLimitsPolicyJSONShape(t *testing.T) {
	b, err := json.Marshal(gateway.RateLimitsPolicy{ID: "7d1e0000-0000-4000-8000-000000000040", Type: "requests", Unit: "rpm", Value: 1, Status: "active"})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "type", "unit", "value", "status", "workspace_id", "organisation_id", "created_at", "last_updated_at"} {
		if _, ok := got[k]; !ok {
			t.Errorf("required field %s missing from %s", k, b)
		}
	}
	for _, k := range []string{"conditions", "group_by"} {
		if _, ok := got[k].([]any); !ok {
			t.Errorf("%s = %v, want an array", k, got[k])
		}
	}
	if _, ok := got["name"]; ok {
		t.Errorf("an unnamed policy has a name: %s", b)
	}
}

// addVirtualKey stores a copy of the virtual key "vk" (the fake provider)
// under slug, changed by mod.
func (e *polEnv) addVirtualKey(slug string, mod func(*gateway.VirtualKey)) {
	e.t.Helper()
	vk, err := e.store.VirtualKey(context.Background(), "vk")
	if err != nil {
		e.t.Fatal(err)
	}
	c := *vk
	c.Slug = slug
	mod(&c)
	e.store.AddVirtualKey(c)
}

// TestPolicyFileWithoutWorkspace: a store file's policy without
// workspace_id applies to every workspace its conditions let through, and
// no workspace admin can see, change or delete it.
func TestPolicyFileWithoutWorkspace(t *testing.T) {
	const (
		designID = "7d1e0000-0000-4000-8000-0000000000a1" // the server's config file's sample, value 1
		globalID = "7d1e0000-0000-4000-8000-0000000000a2" // no conditions at all
	)
	file := `{"rate_limits_policies": [
		{"id": "` + designID + `", "conditions": [{"key": "workspace_id", "value": "ws-1"}],
		 "group_by": [{"key": "api_key"}], "type": "requests", "unit": "rph", "value": 1},
		{"id": "` + globalID + `", "group_by": [{"key": "api_key"}], "type": "requests", "unit": "rph", "value": 2}
	]}`
	e := newPolEnv(t, nil, nil)
	e.addVirtualKey("vk2", func(vk *gateway.VirtualKey) { vk.WorkspaceID = "ws-2" })
	f, err := admin.Decode(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Apply(context.Background(), f, e.store); err != nil {
		t.Fatal(err)
	}

	// ws-1: the DESIGN policy, 1 per hour per key.
	if got := e.statuses(2, polMember); !cmp.Equal(got, []int{200, 429}) {
		t.Fatalf("ws-1 key: %v, want [200 429]", got)
	}
	// ws-2: only the policy without conditions, 2 per hour per key.
	var ws2 []int
	for range 3 {
		res := e.do(polAdmin2, "POST", "/v1/chat/completions", `{}`, "x-gateway-virtual-key: vk2", "Content-Type: application/json")
		io.Copy(io.Discard, res.Body)
		ws2 = append(ws2, res.StatusCode)
	}
	if !cmp.Equal(ws2, []int{200, 200, 429}) {
		t.Fatalf("ws-2 key: %v, want [200 200 429]", ws2)
	}

	// The control plane of either workspace does not see them.
	for _, admin := range []string{polAdmin, polAdmin2} {
		list := polReadJSON[struct{ Total int }](t, e.do(admin, "GET", "/v1/policies/rate-limits", ""))
		if list.Total != 0 {
			t.Errorf("%s lists %d policies, want 0", admin, list.Total)
		}
		for _, id := range []string{designID, globalID} {
			path := "/v1/policies/rate-limits/" + id
			for _, req := range []struct{ method, body string }{{"GET", ""}, {"PUT", `{"value":100}`}, {"DELETE", ""}} {
				if res := e.do(admin, req.method, path, req.body); res.StatusCode != 404 {
					t.Errorf("%s %s %s: %d, want 404", admin, req.method, id, res.StatusCode)
				}
			}
		}
	}
	if got := e.statuses(1, polMember); got[0] != 429 {
		t.Fatalf("after the control plane's attempts: %d, want still 429", got[0])
	}
}

// TestPolicyRefundGatewayRefusal: a request the gateway refuses itself
// before any provider saw it gives its requests unit back; one a provider
// answered, even with an error, does not.
func TestPolicyRefundGatewayRefusal(t *testing.T) {
	t.Run("azure without deployment", func(t *testing.T) {
		e := newPolEnv(t, nil, nil)
		e.addVirtualKey("az", func(vk *gateway.VirtualKey) {
			vk.Provider = "azure-openai"
			vk.APIVersion = "2024-10-21"
		})
		e.put(perKey3)
		send := func(headers ...string) *http.Response {
			t.Helper()
			res := e.do(polMember, "POST", "/v1/chat/completions", `{"model":"m","messages":[]}`,
				append([]string{"x-gateway-virtual-key: az", "Content-Type: application/json"}, headers...)...)
			io.Copy(io.Discard, res.Body)
			return res
		}
		var got []int
		for range 5 {
			got = append(got, send().StatusCode)
		}
		if diff := cmp.Diff([]int{400, 400, 400, 400, 400}, got); diff != "" {
			t.Fatalf("without a deployment (-want +got):\n%s", diff)
		}
		res := send("x-gateway-hosta-deployment-id: gpt-4o")
		if res.StatusCode != 200 || res.Header.Get("x-ratelimit-remaining-requests") != "2" {
			t.Fatalf("valid request after five 400s: %d with %q remaining, want 200 with 2",
				res.StatusCode, res.Header.Get("x-ratelimit-remaining-requests"))
		}
		if n := e.calls.Load(); n != 1 {
			t.Fatalf("provider served %d, want 1", n)
		}
	})
	t.Run("provider's own 400 is charged", func(t *testing.T) {
		e := newPolEnv(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":null}}`)
		}, nil)
		e.put(perKey3)
		if got := e.statuses(4, polMember); !cmp.Equal(got, []int{400, 400, 400, 429}) {
			t.Fatalf("statuses %v, want three provider 400s then 429", got)
		}
	})
	t.Run("timeout of a shared cache fill is charged", func(t *testing.T) {
		// The provider was reached by the fill, on a goroutine of its own:
		// the caller's 408 is the gateway's, yet no refusal to refund.
		e := newPolEnv(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, nil)
		e.put(perKey3)
		cfg := `x-gateway-config: {"virtual_key":"vk","cache":{"mode":"simple"},"request_timeout":20}`
		var got []int
		for range 4 {
			res := e.do(polMember, "POST", "/v1/chat/completions", `{"model":"m","messages":[]}`, "Content-Type: application/json", cfg)
			io.Copy(io.Discard, res.Body)
			got = append(got, res.StatusCode)
		}
		if diff := cmp.Diff([]int{408, 408, 408, 429}, got); diff != "" {
			t.Fatalf("statuses (-want +got):\n%s", diff)
		}
	})
}

// TestPolicyRetryAfterLongestWait: when several policies refuse, the 429
// waits as long as the longest of them needs, so that a retry after
// Retry-After is admitted, whatever order the policies are checked in.
func TestPolicyRetryAfterLongestWait(t *testing.T) {
	perMinute := gateway.RateLimitsPolicy{
		ID: "7d1e0000-0000-4000-8000-0000000000b1", Name: "per minute", GroupBy: []gateway.PolicyGroupBy{{Key: "api_key"}},
		Type: "requests", Unit: "rpm", Value: 1, Status: gateway.PolicyActive, WorkspaceID: "ws-1",
	}
	perDay := gateway.RateLimitsPolicy{
		ID: "7d1e0000-0000-4000-8000-0000000000b2", Name: "per day", GroupBy: []gateway.PolicyGroupBy{{Key: "api_key"}},
		Type: "requests", Unit: "rpd", Value: 1, Status: gateway.PolicyActive, WorkspaceID: "ws-1",
	}
	tokensPerDay := gateway.RateLimitsPolicy{
		ID: "7d1e0000-0000-4000-8000-0000000000b3", Name: "tokens per day", GroupBy: []gateway.PolicyGroupBy{{Key: "api_key"}},
		Type: "tokens", Unit: "rpd", Value: 0.5, Status: gateway.PolicyActive, WorkspaceID: "ws-1",
	}
	tests := []struct {
		name     string
		first    gateway.RateLimitsPolicy // checked first
		second   gateway.RateLimitsPolicy
		wantType string
		wantSecs int // Retry-After with fake time
	}{
		{"minute checked first", perMinute, perDay, "requests", 86400},
		{"day checked first", perDay, perMinute, "requests", 86400},
		// A tokens bucket admits only below its value: a nanosecond more
		// than the day it takes to reach it.
		{"tokens checked second", perMinute, tokensPerDay, "tokens", 86401},
	}
	for _, tt := range tests {
		tt.first.CreatedAt, tt.second.CreatedAt = "2025-01-01T00:00:00.000Z", "2025-01-02T00:00:00.000Z"
		t.Run(tt.name+"/http", func(t *testing.T) {
			// One token per answer: half a token over the tokens policy,
			// which drains in a day. (polTransport's {} is estimated at 1.)
			e := newPolEnv(t, usageJSON(1), nil)
			e.put(tt.first)
			e.put(tt.second)
			if got := e.statuses(1, polMember); got[0] != 200 {
				t.Fatalf("first request: %d", got[0])
			}
			res := e.complete(polMember)
			if res.StatusCode != 429 {
				t.Fatalf("second request: %d, want 429", res.StatusCode)
			}
			if ra, _ := strconv.Atoi(res.Header.Get("Retry-After")); ra < 86400-5 || ra > 86401 {
				t.Errorf("Retry-After = %q, want a day (the longer wait)", res.Header.Get("Retry-After"))
			}
			if got := polReadError(t, res); got.Type != tt.wantType || !strings.Contains(got.Message, "per day") {
				t.Errorf("429 %+v, want type %s naming the per-day policy", got, tt.wantType)
			}
		})
		t.Run(tt.name+"/fake time", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := memstore.New()
				store.AddAPIKey(gateway.APIKey{ID: "k", Digest: gateway.HashAPIKey(polMember), WorkspaceID: "ws-1", Role: gateway.RoleMember})
				store.AddVirtualKey(gateway.VirtualKey{Slug: "vk", Provider: "openai", APIKey: "sk", BaseURL: "http://provider.test/v1", WorkspaceID: "ws-1"})
				for _, p := range []gateway.RateLimitsPolicy{tt.first, tt.second} {
					store.PutPolicy(context.Background(), &p)
				}
				var calls int
				gw := gateway.New(gateway.Options{Keys: store, VirtualKeys: store, Policies: store, Transport: polTransport{&calls}})
				defer gw.Close()
				send := func() (int, string) { return polSend(gw) }
				if code, _ := send(); code != 200 {
					t.Fatalf("first request: %d", code)
				}
				code, ra := send()
				secs, _ := strconv.Atoi(ra)
				if code != 429 || secs != tt.wantSecs {
					t.Fatalf("refused request: %d with Retry-After %q, want 429 with %d", code, ra, tt.wantSecs)
				}
				time.Sleep(time.Duration(secs) * time.Second)
				if code, ra := send(); code != 200 {
					t.Fatalf("retry after Retry-After: %d (Retry-After %q), want 200", code, ra)
				}
			})
		})
	}
}

// TestPolicyIDCase: a policy id is found whatever its case, on every
// route of the control plane and from a store file.
func TestPolicyIDCase(t *testing.T) {
	e := newPolEnv(t, nil, nil)
	created := polReadJSON[struct{ ID string }](t, e.do(polAdmin, "POST", "/v1/policies/rate-limits", validCreate))
	if created.ID != strings.ToLower(created.ID) {
		t.Fatalf("created id %q is not lower case", created.ID)
	}
	upper := "/v1/policies/rate-limits/" + strings.ToUpper(created.ID)
	if res := e.do(polAdmin, "PUT", upper, `{"value":7}`); res.StatusCode != 200 {
		t.Fatalf("PUT by upper-case id: %d", res.StatusCode)
	}
	got := polReadJSON[gateway.RateLimitsPolicy](t, e.do(polAdmin, "GET", upper, ""))
	if got.ID != created.ID || got.Value != 7 {
		t.Fatalf("GET by upper-case id: id %q value %v, want %q and 7", got.ID, got.Value, created.ID)
	}
	if res := e.do(polAdmin, "DELETE", upper, ""); res.StatusCode != 200 {
		t.Fatalf("DELETE by upper-case id: %d", res.StatusCode)
	}
	if res := e.do(polAdmin, "GET", "/v1/policies/rate-limits/"+created.ID, ""); res.StatusCode != 404 {
		t.Fatalf("GET after DELETE: %d, want 404", res.StatusCode)
	}

	// A store file's id in upper case is kept in lower case.
	const fileID = "7D1E0000-0000-4000-8000-0000000000C1"
	f, err := admin.Decode(strings.NewReader(`{"rate_limits_policies":[{"id":"` + fileID + `","workspace_id":"ws-1",
		"group_by":[{"key":"api_key"}],"type":"requests","unit":"rph","value":1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Apply(context.Background(), f, e.store); err != nil {
		t.Fatal(err)
	}
	lower := "/v1/policies/rate-limits/" + strings.ToLower(fileID)
	got = polReadJSON[gateway.RateLimitsPolicy](t, e.do(polAdmin, "GET", lower, ""))
	if got.ID != strings.ToLower(fileID) {
		t.Fatalf("store file policy read back as %q, want %q", got.ID, strings.ToLower(fileID))
	}
	if res := e.do(polAdmin, "PUT", "/v1/policies/rate-limits/"+fileID, `{"value":2}`); res.StatusCode != 200 {
		t.Fatalf("PUT of the store file's policy by its id as written: %d", res.StatusCode)
	}
	list := polReadJSON[struct{ Total int }](t, e.do(polAdmin, "GET", "/v1/policies/rate-limits", ""))
	if list.Total != 1 {
		t.Fatalf("%d policies listed, want 1: a PUT by another case made a second", list.Total)
	}
}

// hookStore is a memstore.Store (compare-and-swap included) that runs hook
// once, inside the next Policy call after it is armed: between the read
// and the write of a PUT.
type hookStore struct {
	*memstore.Store
	armed atomic.Bool
	hook  func()
}

func (s *hookStore) Policy(ctx context.Context, id string) (*gateway.RateLimitsPolicy, error) {
	p, err := s.Store.Policy(ctx, id)
	if s.armed.CompareAndSwap(true, false) {
		s.hook()
	}
	return p, err
}

// TestPolicyPutRaces: a PUT whose policy is deleted, or changed by another
// PUT, between its read and its write neither brings it back nor undoes
// the other change.
func TestPolicyPutRaces(t *testing.T) {
	path := "/v1/policies/rate-limits/" + perKey3.ID
	// call sends a control-plane request from inside the hook, which runs
	// on a server goroutine, and returns its status.
	call := func(t *testing.T, e *polEnv, method, body string) int {
		req, _ := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
		req.Header.Set("x-gateway-api-key", polAdmin)
		res, err := e.srv.Client().Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	setup := func(t *testing.T) (*polEnv, *hookStore) {
		hs := &hookStore{}
		e := newPolEnv(t, nil, func(o *gateway.Options) { o.Policies = hs })
		hs.Store = e.store
		e.put(perKey3)
		return e, hs
	}

	t.Run("PUT racing DELETE", func(t *testing.T) {
		e, hs := setup(t)
		var deleted int
		hs.hook = func() { deleted = call(t, e, "DELETE", "") }
		hs.armed.Store(true)
		res := e.do(polAdmin, "PUT", path, `{"value":7}`)
		if deleted != 200 || res.StatusCode != 404 {
			t.Fatalf("DELETE inside the PUT: %d, then PUT: %d; want 200 then 404", deleted, res.StatusCode)
		}
		if _, err := e.store.Policy(context.Background(), perKey3.ID); err != gateway.ErrNotFound {
			t.Fatalf("deleted policy is back: %v", err)
		}
		if got := e.statuses(4, polMember); !cmp.Equal(got, []int{200, 200, 200, 200}) {
			t.Fatalf("after the DELETE: %v, want no limit", got)
		}
	})
	t.Run("PUT racing PUT", func(t *testing.T) {
		e, hs := setup(t)
		var renamed int
		hs.hook = func() { renamed = call(t, e, "PUT", `{"name":"renamed"}`) }
		hs.armed.Store(true)
		if res := e.do(polAdmin, "PUT", path, `{"value":7}`); renamed != 200 || res.StatusCode != 200 {
			t.Fatalf("PUT inside the PUT: %d, then PUT: %d; want 200 twice", renamed, res.StatusCode)
		}
		p, err := e.store.Policy(context.Background(), perKey3.ID)
		if err != nil || p.Name != "renamed" || p.Value != 7 {
			t.Fatalf("policy %+v, %v; want both changes", p, err)
		}
	})
	t.Run("concurrent", func(t *testing.T) {
		e := newPolEnv(t, nil, nil)
		for round := range 50 {
			e.put(perKey3)
			var wg sync.WaitGroup
			var put, del int
			wg.Go(func() { put = call(t, e, "PUT", `{"value":`+strconv.Itoa(round+1)+`}`) })
			wg.Go(func() { del = call(t, e, "DELETE", "") })
			wg.Wait()
			if del != 200 || put != 200 && put != 404 {
				t.Fatalf("round %d: PUT %d, DELETE %d", round, put, del)
			}
			if _, err := e.store.Policy(context.Background(), perKey3.ID); err != gateway.ErrNotFound {
				t.Fatalf("round %d: policy present after its DELETE (PUT answered %d)", round, put)
			}
		}
	})
}

// TestPolicyOperatorKeyIDsAcrossWorkspaces: an operator's policy (no
// workspace_id) grouped by api_key keeps the keys of different workspaces
// apart even when their ids are the same.
func TestPolicyOperatorKeyIDsAcrossWorkspaces(t *testing.T) {
	e := newPolEnv(t, nil, nil)
	e.store.AddAPIKey(gateway.APIKey{ID: "default", Digest: gateway.HashAPIKey("gw-a"), WorkspaceID: "ws-1", Role: gateway.RoleMember})
	e.store.AddAPIKey(gateway.APIKey{ID: "default", Digest: gateway.HashAPIKey("gw-b"), WorkspaceID: "ws-2", Role: gateway.RoleMember})
	e.addVirtualKey("vk2", func(vk *gateway.VirtualKey) { vk.WorkspaceID = "ws-2" })
	op := gateway.RateLimitsPolicy{ID: "7d1e0000-0000-4000-8000-0000000000fe", GroupBy: []gateway.PolicyGroupBy{{Key: "api_key"}},
		Type: "requests", Unit: "rph", Value: 2, Status: gateway.PolicyActive}
	if err := e.store.PutPolicy(context.Background(), &op); err != nil {
		t.Fatal(err)
	}
	send := func(key, vk string) int {
		res := e.do(key, "POST", "/v1/chat/completions", `{}`, "x-gateway-virtual-key: "+vk, "Content-Type: application/json")
		io.Copy(io.Discard, res.Body)
		return res.StatusCode
	}
	got := []int{send("gw-a", "vk"), send("gw-a", "vk"), send("gw-a", "vk"), send("gw-b", "vk2"), send("gw-b", "vk2"), send("gw-b", "vk2")}
	if diff := cmp.Diff([]int{200, 200, 429, 200, 200, 429}, got); diff != "" {
		t.Errorf("ws-1's key three times, then ws-2's (-want +got):\n%s", diff)
	}
}

// TestPolicyPutGivesUp: a PUT whose compare-and-swap never succeeds (here a
// stored value that never compares equal, NaN) answers 409 instead of
// spinning.
func TestPolicyPutGivesUp(t *testing.T) {
	e := newPolEnv(t, nil, nil)
	p := perKey3
	p.WorkspaceID, p.Status, p.Value = "ws-1", gateway.PolicyActive, math.NaN()
	if err := e.store.PutPolicy(context.Background(), &p); err != nil {
		t.Fatal(err)
	}
	res := e.do(polAdmin, "PUT", "/v1/policies/rate-limits/"+p.ID, `{"value":5}`)
	io.Copy(io.Discard, res.Body)
	if res.StatusCode != http.StatusConflict {
		t.Errorf("status %d, want 409", res.StatusCode)
	}
}

// mountAdmin mounts the admin routes on gw over the stores of opts that
// keep what they serve, with the options mod may change.
func mountAdmin(gw *gateway.Gateway, opts gateway.Options, mod func(*admin.Options)) {
	var o admin.Options
	o.Keys, _ = opts.Keys.(admin.KeyStore)
	o.VirtualKeys, _ = opts.VirtualKeys.(admin.VirtualKeyStore)
	o.Configs, _ = opts.Configs.(admin.ConfigStore)
	o.Policies, _ = opts.Policies.(admin.PolicyStore)
	if mod != nil {
		mod(&o)
	}
	admin.Mount(gw, o)
}
