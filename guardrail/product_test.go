package guardrail_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/gatewaytest"
	"github.com/modelgateway/gateway/guardrail"
	"github.com/modelgateway/gateway/memstore"
)

// env is a gateway with the guardrails product in front of a fake
// provider, over real HTTP.
type env struct {
	t        *testing.T
	srv      *httptest.Server
	provider *gatewaytest.Server
	store    *memstore.Store
	hooks    *guardrail.Hooks

	logs chan *gateway.RequestLog
}

// Keys of the env: an admin of ws-1, an admin of ws-2, a member of ws-1
// and an organisation admin.
const (
	keyWS1    = "gw-ws1"
	keyWS2    = "gw-ws2"
	keyMember = "gw-member"
	keyOrg    = "gw-org"
)

func (e *env) Log(rec *gateway.RequestLog) {
	select {
	case e.logs <- rec:
	default:
	}
}

func newEnv(t *testing.T, register func(*guardrail.Registry)) *env {
	t.Helper()
	return newEnvWith(t, register, nil)
}

// newEnvWith is newEnv with more options set by opts.
func newEnvWith(t *testing.T, register func(*guardrail.Registry), opts func(*gateway.Options)) *env {
	t.Helper()
	e := &env{t: t, provider: gatewaytest.NewServer(), store: memstore.New(), logs: make(chan *gateway.RequestLog, 64)}
	t.Cleanup(e.provider.Close)
	e.store.AddAPIKey(gateway.APIKey{ID: "k1", Digest: gateway.HashAPIKey(keyWS1), WorkspaceID: "ws-1", Role: gateway.RoleAdmin})
	e.store.AddAPIKey(gateway.APIKey{ID: "k2", Digest: gateway.HashAPIKey(keyWS2), WorkspaceID: "ws-2", Role: gateway.RoleAdmin})
	e.store.AddAPIKey(gateway.APIKey{ID: "km", Digest: gateway.HashAPIKey(keyMember), WorkspaceID: "ws-1"})
	e.store.AddAPIKey(gateway.APIKey{ID: "ko", Digest: gateway.HashAPIKey(keyOrg), Type: gateway.KeyOrganisation, Role: gateway.RoleAdmin})
	e.hooks = &guardrail.Hooks{Store: e.store, Feedback: e.store}
	o := gateway.Options{Keys: e.store, Hooks: e.hooks, LogSink: e,
		CustomHostAllow: []string{strings.TrimPrefix(strings.TrimSuffix(e.provider.URL, "/v1"), "http://")}}
	if opts != nil {
		opts(&o)
	}
	g := gateway.New(o)
	e.hooks.Mount(g)
	if register != nil {
		register(e.hooks.Registry)
	}
	e.srv = httptest.NewServer(g)
	t.Cleanup(func() { e.srv.Close(); g.Close() })
	return e
}

// config returns an inline config routing to the fake provider, with the
// extra members given (a JSON fragment beginning with a comma).
func (e *env) config(extra string) string {
	return `{"provider":"openai","custom_host":"` + e.provider.URL + `"` + extra + `}`
}

// chat sends a chat completion of content through config.
func (e *env) chat(key, config, content string, stream bool) *http.Response {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{"model": "gpt-4o", "stream": stream,
		"messages": []map[string]string{{"role": "user", "content": content}}})
	req, _ := http.NewRequest("POST", e.srv.URL+"/v1/chat/completions", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-gateway-api-key", key)
	req.Header.Set("Authorization", "Bearer sk-test")
	req.Header.Set("x-gateway-config", config)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// api calls a control route.
func (e *env) api(key, method, path, body string) (int, map[string]any) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+"/v1"+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-gateway-api-key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func decodeBody(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// hookResults returns the hook results of a phase of an answer body.
func hookResults(t *testing.T, m map[string]any, phase string) []any {
	t.Helper()
	hr, ok := m["hook_results"].(map[string]any)
	if !ok {
		t.Fatalf("no hook_results in %v", m)
	}
	l, _ := hr[phase].([]any)
	return l
}

const denyPassword = `{"checks":[{"id":"default.regexMatch","parameters":{"rule":"password","not":true}}],"actions":{"deny":true}}`

func TestInputDenied446(t *testing.T) {
	e := newEnv(t, nil)
	resp := e.chat(keyWS1, e.config(`,"input_guardrails":[`+denyPassword+`]`), "my password is hunter2", false)
	if resp.StatusCode != 446 {
		t.Fatalf("status %d, want 446", resp.StatusCode)
	}
	m := decodeBody(t, resp)
	errObj := m["error"].(map[string]any)
	if errObj["type"] != "hooks_failed" || errObj["code"] != "guardrail_denied" || errObj["param"] != nil {
		t.Errorf("error = %v", errObj)
	}
	before := hookResults(t, m, "before_request_hooks")
	if len(before) != 1 || before[0].(map[string]any)["verdict"] != false {
		t.Errorf("before_request_hooks = %v", before)
	}
	if strings.Contains(mustJSON(m), "hunter2") {
		t.Error("the answer repeats the request's text")
	}
	if n := e.provider.Count("/v1/chat/completions"); n != 0 {
		t.Errorf("the provider was called %d times", n)
	}
	// A request that passes reaches the provider, its answer carrying the results.
	resp = e.chat(keyWS1, e.config(`,"input_guardrails":[`+denyPassword+`]`), "hello", false)
	if resp.StatusCode != 200 {
		t.Fatalf("passing request: status %d", resp.StatusCode)
	}
	m = decodeBody(t, resp)
	if l := hookResults(t, m, "before_request_hooks"); len(l) != 1 || l[0].(map[string]any)["verdict"] != true {
		t.Errorf("before_request_hooks = %v", l)
	}
	if m["choices"] == nil {
		t.Errorf("the answer lost its choices: %v", m)
	}
}

func TestFailedNotDenied246(t *testing.T) {
	e := newEnv(t, nil)
	logOnly := strings.Replace(denyPassword, `"deny":true`, `"deny":false`, 1)
	resp := e.chat(keyWS1, e.config(`,"before_request_hooks":[`+logOnly+`]`), "my password", false)
	if resp.StatusCode != 246 {
		t.Fatalf("status %d, want 246", resp.StatusCode)
	}
	m := decodeBody(t, resp)
	if l := hookResults(t, m, "before_request_hooks"); len(l) != 1 || l[0].(map[string]any)["verdict"] != false {
		t.Errorf("before_request_hooks = %v", l)
	}
	if e.provider.Count("/v1/chat/completions") != 1 {
		t.Error("the provider was not called")
	}
}

func TestRedaction(t *testing.T) {
	e := newEnv(t, nil)
	pii := `{"checks":[{"id":"default.pii","parameters":{"redact":true,"categories":["EMAIL_ADDRESS"]}}],"actions":{"deny":true}}`
	resp := e.chat(keyWS1, e.config(`,"input_guardrails":[`+pii+`]`), "mail me at jane@example.com", false)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d %v", resp.StatusCode, decodeBody(t, resp))
	}
	reqs := e.provider.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d provider requests", len(reqs))
	}
	if got := string(reqs[0].Body); strings.Contains(got, "jane@example.com") || !strings.Contains(got, "[EMAIL_ADDRESS]") {
		t.Errorf("the provider got %s", got)
	}
	m := decodeBody(t, resp)
	if l := hookResults(t, m, "before_request_hooks"); len(l) != 1 {
		t.Errorf("before_request_hooks = %v", l)
	}
}

// TestRedactionLogged: with bodies kept for the log, the request kept is
// the redacted one the provider saw.
func TestRedactionLogged(t *testing.T) {
	e := newEnvWith(t, nil, func(o *gateway.Options) { o.LogBodies = true })
	pii := `{"checks":[{"id":"default.pii","parameters":{"redact":true,"categories":["EMAIL_ADDRESS"]}}]}`
	resp := e.chat(keyWS1, e.config(`,"input_guardrails":[`+pii+`]`), "mail jane@example.com", false)
	io.Copy(io.Discard, resp.Body)
	rec := <-e.logs
	if strings.Contains(rec.RequestBody, "jane@example.com") || !strings.Contains(rec.RequestBody, "[EMAIL_ADDRESS]") {
		t.Errorf("the log kept %s", rec.RequestBody)
	}
}

func TestOutputDenied446(t *testing.T) {
	e := newEnv(t, nil)
	echo := `{"checks":[{"id":"default.contains","parameters":{"words":["forbidden"],"operator":"none"}}],"actions":{"deny":true}}`
	resp := e.chat(keyWS1, e.config(`,"output_guardrails":[`+echo+`]`), "say forbidden", false)
	if resp.StatusCode != 446 {
		t.Fatalf("status %d, want 446", resp.StatusCode)
	}
	m := decodeBody(t, resp)
	if l := hookResults(t, m, "after_request_hooks"); len(l) != 1 || l[0].(map[string]any)["verdict"] != false {
		t.Errorf("after_request_hooks = %v", l)
	}
	if strings.Contains(mustJSON(m), "Echo") {
		t.Error("the refused answer reached the caller")
	}
	resp = e.chat(keyWS1, e.config(`,"after_request_hooks":[`+echo+`]`), "say hello", false)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	if l := hookResults(t, decodeBody(t, resp), "after_request_hooks"); len(l) != 1 {
		t.Errorf("after_request_hooks = %v", l)
	}
}

// TestOutputFailed246: an output check that fails without denying makes
// the status 246, in a JSON answer and in a stream held for its checks;
// an organisation's guardrail is seen, not changed, by a workspace key.
func TestOutputFailed246(t *testing.T) {
	e := newEnv(t, nil)
	code, created := e.api(keyOrg, "POST", "/guardrails", `{"name":"log forbidden","checks":[{"id":"default.contains","parameters":{"words":["forbidden"],"operator":"none"}}],"actions":{"deny":false},"stream_mode":"buffer"}`)
	if code != 200 {
		t.Fatalf("create: %d %v", code, created)
	}
	slug := created["slug"].(string)
	resp := e.chat(keyWS1, e.config(`,"output_guardrails":["`+slug+`"]`), "say forbidden", false)
	if resp.StatusCode != 246 {
		t.Fatalf("status %d, want 246", resp.StatusCode)
	}
	if m := decodeBody(t, resp); m["choices"] == nil || len(hookResults(t, m, "after_request_hooks")) != 1 {
		t.Errorf("answer %v", m)
	}
	resp = e.chat(keyWS1, e.config(`,"output_guardrails":["`+slug+`"]`), "say forbidden", true)
	if resp.StatusCode != 246 {
		t.Fatalf("stream: status %d, want 246", resp.StatusCode)
	}
	if ev := events(t, resp); indexOf(ev, "event: hook_results") < 0 || indexOf(ev, "[DONE]") < 0 {
		t.Errorf("events %q", ev)
	}
	if code, _ := e.api(keyWS1, "PUT", "/guardrails/"+slug, `{"name":"mine"}`); code != 404 {
		t.Errorf("a workspace key changing the organisation's guardrail: %d, want 404", code)
	}
	if code, _ := e.api(keyWS1, "GET", "/guardrails/"+slug, ""); code != 200 {
		t.Errorf("a workspace key reading the organisation's guardrail: %d, want 200", code)
	}
}

// events reads a server-sent event stream: the data of each event, with
// its event name before it when it has one.
func events(t *testing.T, resp *http.Response) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			out = append(out, line)
		case strings.HasPrefix(line, "data: "):
			out = append(out, strings.TrimPrefix(line, "data: "))
		}
	}
	return out
}

func TestStreamObserve(t *testing.T) {
	e := newEnv(t, nil)
	deny := `{"checks":[{"id":"default.contains","parameters":{"words":["forbidden"],"operator":"none"}}],"actions":{"deny":true}}`
	resp := e.chat(keyWS1, e.config(`,"output_guardrails":[`+deny+`]`), "say forbidden", true)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: an observed stream goes out as it comes", resp.StatusCode)
	}
	ev := events(t, resp)
	done := indexOf(ev, "[DONE]")
	hook := indexOf(ev, "event: hook_results")
	if done < 0 || hook != done+1 || hook+1 >= len(ev) {
		t.Fatalf("events = %q: want hook_results after [DONE]", ev)
	}
	var hr map[string][]map[string]any
	if err := json.Unmarshal([]byte(ev[hook+1]), &hr); err != nil {
		t.Fatal(err)
	}
	if l := hr["after_request_hooks"]; len(l) != 1 || l[0]["verdict"] != false {
		t.Errorf("after_request_hooks = %v", hr)
	}
}

func TestStreamBuffer(t *testing.T) {
	e := newEnv(t, nil)
	deny := `{"checks":[{"id":"default.contains","parameters":{"words":["forbidden"],"operator":"none"}}],"actions":{"deny":true},"stream_mode":"buffer"}`
	resp := e.chat(keyWS1, e.config(`,"output_guardrails":[`+deny+`]`), "say forbidden", true)
	if resp.StatusCode != 446 {
		t.Fatalf("status %d, want 446: a buffered stream is held until its checks pass", resp.StatusCode)
	}
	if l := hookResults(t, decodeBody(t, resp), "after_request_hooks"); len(l) != 1 {
		t.Errorf("after_request_hooks = %v", l)
	}
	resp = e.chat(keyWS1, e.config(`,"output_guardrails":[`+deny+`]`), "say hello", true)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	ev := events(t, resp)
	done := indexOf(ev, "[DONE]")
	hook := indexOf(ev, "event: hook_results")
	if done < 0 || hook < 0 || hook > done || !strings.Contains(strings.Join(ev[:hook], ""), "hello") {
		t.Fatalf("events = %q: want the chunks, hook_results, then [DONE]", ev)
	}
}

func TestTimeoutAndErrorFailClosed(t *testing.T) {
	e := newEnv(t, func(r *guardrail.Registry) {
		r.Register("test.slow", func(json.RawMessage) (guardrail.Check, error) { return slow{}, nil })
		r.Register("test.broken", func(json.RawMessage) (guardrail.Check, error) {
			return guardrail.CheckFunc(func(context.Context, *guardrail.Input) (guardrail.Verdict, error) {
				return guardrail.Verdict{}, errors.New("backend down")
			}), nil
		})
	})
	for _, check := range []string{"test.slow", "test.broken"} {
		g := `{"checks":[{"id":"` + check + `"}],"actions":{"deny":true}}`
		resp := e.chat(keyWS1, e.config(`,"input_guardrails":[`+g+`]`), "hello", false)
		if resp.StatusCode != 446 {
			t.Errorf("%s: status %d, want 446 (fail closed)", check, resp.StatusCode)
		}
		body := mustJSON(decodeBody(t, resp))
		if strings.Contains(body, "backend down") {
			t.Errorf("%s: the check's error reached the caller: %s", check, body)
		}
		allow := `{"checks":[{"id":"` + check + `"}],"actions":{"deny":true},"on_error":"allow"}`
		resp = e.chat(keyWS1, e.config(`,"input_guardrails":[`+allow+`]`), "hello", false)
		if resp.StatusCode != 200 {
			t.Errorf("%s with on_error allow: status %d, want 200", check, resp.StatusCode)
		}
	}
}

// slow is a check that never decides before its time limit.
type slow struct{}

func (slow) Check(ctx context.Context, _ *guardrail.Input) (guardrail.Verdict, error) {
	<-ctx.Done()
	return guardrail.Verdict{}, ctx.Err()
}

func (slow) Timeout() time.Duration { return time.Millisecond }

func TestWorkspaceIsolation(t *testing.T) {
	e := newEnv(t, nil)
	code, created := e.api(keyWS1, "POST", "/guardrails", `{"name":"no passwords","checks":[{"id":"default.regexMatch","parameters":{"rule":"password","not":true}}],"actions":{"deny":true}}`)
	if code != 200 {
		t.Fatalf("create: %d %v", code, created)
	}
	slug := created["slug"].(string)
	resp := e.chat(keyWS1, e.config(`,"input_guardrails":["`+slug+`"]`), "password", false)
	if resp.StatusCode != 446 {
		t.Fatalf("own workspace: status %d, want 446", resp.StatusCode)
	}
	other := e.chat(keyWS2, e.config(`,"input_guardrails":["`+slug+`"]`), "password", false)
	unknown := e.chat(keyWS2, e.config(`,"input_guardrails":["guard_nosuchthing"]`), "password", false)
	for name, resp := range map[string]*http.Response{"another workspace's": other, "unknown": unknown} {
		if resp.StatusCode != 400 {
			t.Fatalf("%s guardrail: status %d, want 400", name, resp.StatusCode)
		}
		errObj := decodeBody(t, resp)["error"].(map[string]any)
		if errObj["code"] != "invalid_config" || errObj["param"] != "x-gateway-config" || !strings.HasPrefix(errObj["message"].(string), "input_guardrails[0]: unknown guardrail") {
			t.Errorf("%s guardrail: error %v", name, errObj)
		}
	}
	if code, _ := e.api(keyWS2, "GET", "/guardrails/"+slug, ""); code != 404 {
		t.Errorf("another workspace's GET: %d, want 404", code)
	}
	if code, _ := e.api(keyWS2, "DELETE", "/guardrails/"+slug, ""); code != 404 {
		t.Errorf("another workspace's DELETE: %d, want 404", code)
	}
	if _, l := e.api(keyWS2, "GET", "/guardrails", ""); l["total"] != 0.0 {
		t.Errorf("another workspace lists %v", l)
	}
}

func TestCRUD(t *testing.T) {
	e := newEnv(t, nil)
	code, created := e.api(keyWS1, "POST", "/guardrails", `{"name":"models","checks":[{"id":"default.modelWhitelist","parameters":{"models":["gpt-4o"]}}],"actions":{"onFail":"block","message":"no"}}`)
	if code != 200 || created["id"] == nil || !strings.HasPrefix(created["slug"].(string), "guard_") || created["version_id"] == nil {
		t.Fatalf("create: %d %v", code, created)
	}
	id := created["id"].(string)
	code, got := e.api(keyWS1, "GET", "/guardrails/"+id, "")
	if code != 200 || got["name"] != "models" || got["workspace_id"] != "ws-1" || got["actions"].(map[string]any)["deny"] != true || got["stream_mode"] != "observe" || got["on_error"] != "deny" {
		t.Fatalf("get: %d %v", code, got)
	}
	code, upd := e.api(keyWS1, "PUT", "/guardrails/"+id, `{"name":"models 2","on_error":"allow"}`)
	if code != 200 || upd["version_id"] == created["version_id"] {
		t.Fatalf("update: %d %v", code, upd)
	}
	_, got = e.api(keyWS1, "GET", "/guardrails/"+created["slug"].(string), "")
	if got["name"] != "models 2" || got["on_error"] != "allow" || got["updated_by"] != "k1" {
		t.Errorf("after update: %v", got)
	}
	_, list := e.api(keyWS1, "GET", "/guardrails", "")
	if list["total"] != 1.0 || len(list["data"].([]any)) != 1 {
		t.Errorf("list: %v", list)
	}
	if code, _ := e.api(keyWS1, "DELETE", "/guardrails/"+id, ""); code != 200 {
		t.Errorf("delete: %d", code)
	}
	if code, _ := e.api(keyWS1, "GET", "/guardrails/"+id, ""); code != 404 {
		t.Errorf("get after delete: %d", code)
	}
}

func TestCRUDRefusals(t *testing.T) {
	e := newEnv(t, nil)
	for _, tc := range []struct {
		name, key, body string
		status          int
		code, param     string
	}{
		{"vendor check", keyWS1, `{"name":"x","checks":[{"id":"azure.pii"}]}`, 400, "unsupported_check", "checks[0].id"},
		{"bad parameter", keyWS1, `{"name":"x","checks":[{"id":"default.regexMatch","parameters":{"rule":"("}}]}`, 400, "invalid_parameter", "checks[0].parameters.rule"},
		{"no checks", keyWS1, `{"name":"x","checks":[]}`, 400, "invalid_parameter", "checks"},
		{"no name", keyWS1, `{"checks":[{"id":"default.isAllLowerCase"}]}`, 400, "invalid_parameter", "name"},
		{"bad stream mode", keyWS1, `{"name":"x","checks":[{"id":"default.isAllLowerCase"}],"stream_mode":"later"}`, 400, "invalid_parameter", "stream_mode"},
		{"bad action", keyWS1, `{"name":"x","checks":[{"id":"default.isAllLowerCase"}],"actions":{"on_fail":"explode"}}`, 400, "invalid_parameter", "actions.on_fail"},
		{"unknown field", keyWS1, `{"name":"x","checks":[{"id":"default.isAllLowerCase"}],"colour":"red"}`, 400, "invalid_parameter", "colour"},
		{"loopback webhook", keyWS1, `{"name":"x","checks":[{"id":"default.webhook","parameters":{"webhookURL":"http://127.0.0.1:9/hook"}}]}`, 400, "invalid_parameter", "checks[0].parameters.webhookURL"},
		{"metadata jwks", keyWS1, `{"name":"x","checks":[{"id":"default.jwt","parameters":{"jwksUri":"http://169.254.169.254/jwks","headerKey":"Authorization"}}]}`, 400, "invalid_parameter", "checks[0].parameters.jwksUri"},
		{"member key", keyMember, `{"name":"x","checks":[{"id":"default.isAllLowerCase"}]}`, 403, "permission_denied", ""},
		{"another workspace", keyWS1, `{"name":"x","workspace_id":"ws-2","checks":[{"id":"default.isAllLowerCase"}]}`, 403, "permission_denied", "workspace_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, m := e.api(tc.key, "POST", "/guardrails", tc.body)
			errObj, _ := m["error"].(map[string]any)
			if code != tc.status || errObj["code"] != tc.code || (tc.param != "" && errObj["param"] != tc.param) {
				t.Errorf("%d %v, want %d %s naming %q", code, m, tc.status, tc.code, tc.param)
			}
		})
	}
}

func TestLogsAndFeedback(t *testing.T) {
	e := newEnv(t, nil)
	g := `{"checks":[{"id":"default.regexMatch","parameters":{"rule":"password","not":true}}],"actions":{"deny":false,"on_fail":{"feedback":{"value":-5,"weight":1,"metadata":"pw"}}}}`
	req := e.chat(keyWS1, e.config(`,"input_guardrails":[`+g+`]`), "password", false)
	io.Copy(io.Discard, req.Body)
	trace := req.Header.Get("x-gateway-trace-id")
	fb, err := e.store.FeedbackOf(context.Background(), "ws-1", []string{trace})
	if err != nil || len(fb) != 1 || fb[0].Value != -5 {
		t.Errorf("feedback of %s = %v, %v", trace, fb, err)
	}
	rec := <-e.logs
	if rec.Status != 246 || rec.Guardrails != "failed" || !strings.Contains(string(rec.HookResults), `"before_request_hooks":[{`) {
		t.Errorf("log: status %d, guardrails %q, hook results %s", rec.Status, rec.Guardrails, rec.HookResults)
	}
}

func TestConfigWithoutHooks(t *testing.T) {
	provider := gatewaytest.NewServer()
	defer provider.Close()
	st := memstore.New()
	st.AddAPIKey(gateway.APIKey{ID: "k1", Digest: gateway.HashAPIKey(keyWS1), WorkspaceID: "ws-1"})
	g := gateway.New(gateway.Options{Keys: st})
	defer g.Close()
	req := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[]}`))
	req.Header.Set("x-gateway-api-key", keyWS1)
	req.Header.Set("x-gateway-config", `{"provider":"openai","input_guardrails":["guard_x"]}`)
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, req)
	if rec.Code != 400 || !strings.Contains(rec.Body.String(), "invalid_config") {
		t.Errorf("%d %s: a gateway without Hooks refuses a config with guardrails", rec.Code, rec.Body)
	}
}

func TestPerTarget(t *testing.T) {
	e := newEnv(t, nil)
	cfg := `{"strategy":{"mode":"fallback"},"targets":[{"provider":"openai","custom_host":"` + e.provider.URL + `","input_guardrails":[` + denyPassword + `]}]}`
	resp := e.chat(keyWS1, cfg, "password", false)
	if resp.StatusCode != 446 {
		t.Fatalf("status %d, want 446", resp.StatusCode)
	}
	m := decodeBody(t, resp)
	if l := hookResults(t, m, "before_request_hooks"); len(l) != 1 {
		t.Errorf("before_request_hooks = %v", l)
	}
	bad := `{"targets":[{"provider":"openai","custom_host":"` + e.provider.URL + `","output_guardrails":["guard_missing"]}]}`
	resp = e.chat(keyWS1, bad, "hello", false)
	errObj := decodeBody(t, resp)["error"].(map[string]any)
	if resp.StatusCode != 400 || !strings.HasPrefix(errObj["message"].(string), "targets[0].output_guardrails[0]") {
		t.Errorf("%d %v", resp.StatusCode, errObj)
	}
}

func indexOf(l []string, s string) int {
	for i, v := range l {
		if v == s {
			return i
		}
	}
	return -1
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
