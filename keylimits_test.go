package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
)

// keyCreate creates a workspace service key of ws-1 through the control
// plane, with body's fields added to a name and the completions.write and
// api_keys.read scopes, and returns its id and key.
func (e *polEnv) keyCreate(fields string) (id, key string) {
	e.t.Helper()
	body := `{"name":"limited","scopes":["completions.write","api_keys.read"]`
	if fields != "" {
		body += "," + fields
	}
	res := e.do(polAdmin, "POST", "/v1/api-keys/workspace/service", body+"}")
	c := polReadJSON[struct{ ID, Key string }](e.t, res)
	if res.StatusCode != 200 || c.Key == "" {
		e.t.Fatalf("create key %s: status %d", body, res.StatusCode)
	}
	return c.ID, c.Key
}

// keyUpdate changes key id through PUT /api-keys/{id}.
func (e *polEnv) keyUpdate(id, body string) {
	e.t.Helper()
	if res := e.do(polAdmin, "PUT", "/v1/api-keys/"+id, body); res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		e.t.Fatalf("PUT %s: %d %s", body, res.StatusCode, b)
	}
}

// TestKeyRateLimitsEnforced: a key's rate_limits entry limits that key
// alone, with the headers and the 429 of a policy, and the control plane
// is not charged.
func TestKeyRateLimitsEnforced(t *testing.T) {
	e := newPolEnv(t, nil, nil)
	_, limited := e.keyCreate(`"rate_limits":[{"type":"requests","unit":"rpm","value":2}]`)
	_, other := e.keyCreate(`"rate_limits":[{"type":"requests","unit":"rpm","value":2}]`)

	// Reads of the control plane by the limited key cost nothing.
	for range 3 {
		if res := e.do(limited, "GET", "/v1/api-keys", ""); res.StatusCode != 200 {
			t.Fatalf("control plane: %d, want 200", res.StatusCode)
		}
	}
	var remaining []string
	for range 2 {
		res := e.complete(limited)
		if res.StatusCode != 200 {
			t.Fatalf("status %d, want 200", res.StatusCode)
		}
		if got := res.Header.Get("x-ratelimit-limit-requests"); got != "2" {
			t.Errorf("x-ratelimit-limit-requests = %q, want 2", got)
		}
		remaining = append(remaining, res.Header.Get("x-ratelimit-remaining-requests"))
	}
	if diff := cmp.Diff([]string{"1", "0"}, remaining); diff != "" {
		t.Errorf("x-ratelimit-remaining-requests (-want +got):\n%s", diff)
	}

	res := e.complete(limited)
	if res.StatusCode != 429 {
		t.Fatalf("3rd request: status %d, want 429", res.StatusCode)
	}
	if ra, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
		t.Errorf("Retry-After = %q, want whole seconds from 1 to 60", res.Header.Get("Retry-After"))
	}
	if got := res.Header.Get("x-ratelimit-limit-requests") + "/" + res.Header.Get("x-ratelimit-remaining-requests"); got != "2/0" {
		t.Errorf("x-ratelimit limit/remaining on the 429 = %s, want 2/0", got)
	}
	got := polReadError(t, res)
	if diff := cmp.Diff(polError{Type: "requests", Code: polPtr("rate_limit_exceeded")}, got, cmpopts.IgnoreFields(polError{}, "Message")); diff != "" {
		t.Errorf("429 body (-want +got):\n%s", diff)
	}
	if !strings.Contains(got.Message, "API key") || !strings.Contains(got.Message, "2 requests per minute") {
		t.Errorf("429 message %q names neither the key nor its limit", got.Message)
	}

	// Another key, even with the same rate_limits, and a key without
	// any, have their own budgets; the limited key stays refused.
	if got := e.statuses(2, other); !slices.Equal(got, []int{200, 200}) {
		t.Errorf("another key with the same rate_limits: %v, want 200 200", got)
	}
	if got := e.statuses(3, polMember); !slices.Equal(got, []int{200, 200, 200}) {
		t.Errorf("a key without rate_limits: %v, want 200s", got)
	}
	if got := e.statuses(1, limited); got[0] != 429 {
		t.Errorf("limited key again: %d, want 429", got[0])
	}
	if res := e.do(limited, "GET", "/v1/api-keys", ""); res.StatusCode != 200 {
		t.Errorf("control plane of the refused key: %d, want 200", res.StatusCode)
	}
	if n := e.calls.Load(); n != 7 {
		t.Errorf("provider served %d requests, want 7", n)
	}
}

// TestKeyRateLimitsUpdate: a PUT of rate_limits is in force on the next
// request; a bucket keeps what it holds while the entry's value changes,
// as a policy's does.
func TestKeyRateLimitsUpdate(t *testing.T) {
	e := newPolEnv(t, nil, nil)
	id, key := e.keyCreate(`"rate_limits":[{"type":"requests","unit":"rpm","value":2}]`)
	if got := e.statuses(3, key); !slices.Equal(got, []int{200, 200, 429}) {
		t.Fatalf("value 2: %v, want 200 200 429", got)
	}
	e.keyUpdate(id, `{"rate_limits":[{"type":"requests","unit":"rpm","value":3}]}`) // 2 used of 3
	if got := e.statuses(2, key); !slices.Equal(got, []int{200, 429}) {
		t.Fatalf("raised to 3: %v, want one more then 429", got)
	}
	e.keyUpdate(id, `{"name":"renamed"}`) // rate_limits absent: left as they are
	if got := e.statuses(1, key); got[0] != 429 {
		t.Fatalf("after a PUT without rate_limits: %d, want 429", got[0])
	}
	e.keyUpdate(id, `{"rate_limits":null}`)
	if got := e.statuses(4, key); !slices.Equal(got, []int{200, 200, 200, 200}) {
		t.Fatalf("rate_limits removed: %v, want 200s", got)
	}
	e.keyUpdate(id, `{"rate_limits":[{"type":"requests","unit":"rph","value":1}]}`)
	if got := e.statuses(2, key); !slices.Equal(got, []int{200, 429}) {
		t.Fatalf("1 per hour: %v, want 200 429", got)
	}
	e.keyUpdate(id, `{"rate_limits":[]}`)
	if got := e.statuses(2, key); !slices.Equal(got, []int{200, 200}) {
		t.Fatalf("rate_limits empty: %v, want 200s", got)
	}
}

// TestKeyRateLimitsBadInput: rate_limits are checked like a policy's
// type, unit and value, the 400 naming the field, on create and on
// update; a refused update changes nothing.
func TestKeyRateLimitsBadInput(t *testing.T) {
	e := newPolEnv(t, nil, nil)
	id, key := e.keyCreate(`"rate_limits":[{"type":"requests","unit":"rpm","value":1}]`)
	for _, tc := range []struct {
		name, rateLimits, param string
	}{
		{"not an array", `{}`, "rate_limits"},
		{"entry not an object", `[1]`, "rate_limits[0]"},
		{"entry null", `[null]`, "rate_limits[0]"},
		{"unknown type", `[{"type":"request","unit":"rpm","value":2}]`, "rate_limits[0].type"},
		{"type not a string", `[{"type":1,"unit":"rpm","value":2}]`, "rate_limits[0].type"},
		{"unknown unit", `[{"type":"requests","unit":"rps","value":2}]`, "rate_limits[0].unit"},
		{"unit in capitals", `[{"type":"requests","unit":"RPM","value":2}]`, "rate_limits[0].unit"},
		{"value zero", `[{"type":"requests","unit":"rpm","value":0}]`, "rate_limits[0].value"},
		{"value negative", `[{"type":"tokens","unit":"rpm","value":-5}]`, "rate_limits[0].value"},
		{"value a string", `[{"type":"requests","unit":"rpm","value":"2"}]`, "rate_limits[0].value"},
		{"value null", `[{"type":"requests","unit":"rpm","value":null}]`, "rate_limits[0].value"},
		{"value out of range", `[{"type":"requests","unit":"rpm","value":1e400}]`, "rate_limits[0].value"},
		{"requests below 1", `[{"type":"requests","unit":"rpm","value":0.5}]`, "rate_limits[0].value"},
		{"value missing", `[{"type":"requests","unit":"rpm"}]`, "rate_limits[0].value"},
		{"type missing", `[{"unit":"rpm","value":1}]`, "rate_limits[0].type"},
		{"unknown field", `[{"type":"requests","unit":"rpm","value":1,"burst":2}]`, "rate_limits[0].burst"},
		{"second entry bad", `[{"type":"requests","unit":"rpm","value":1},{"type":"tokens","unit":"daily","value":1}]`, "rate_limits[1].unit"},
		{"same type and unit twice", `[{"type":"tokens","unit":"rph","value":100},{"type":"requests","unit":"rph","value":1},{"type":"tokens","unit":"rph","value":50}]`, "rate_limits[2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, req := range []struct{ method, path, body string }{
				{"POST", "/v1/api-keys/workspace/service", `{"name":"x","scopes":["completions.write"],"rate_limits":` + tc.rateLimits + `}`},
				{"PUT", "/v1/api-keys/" + id, `{"name":"changed","rate_limits":` + tc.rateLimits + `}`},
			} {
				res := e.do(polAdmin, req.method, req.path, req.body)
				if res.StatusCode != 400 {
					t.Fatalf("%s %s: status %d, want 400", req.method, req.body, res.StatusCode)
				}
				got := polReadError(t, res)
				if polDeref(got.Param) != tc.param || got.Type != "invalid_request_error" || polDeref(got.Code) != "invalid_parameter" {
					t.Errorf("%s %s: error %+v (param %s), want invalid_parameter naming %s", req.method, req.body, got, polDeref(got.Param), tc.param)
				}
			}
		})
	}
	// The key kept its name and its limit of 1 per minute.
	k := polReadJSON[struct {
		Name       string          `json:"name"`
		RateLimits json.RawMessage `json:"rate_limits"`
	}](t, e.do(polAdmin, "GET", "/v1/api-keys/"+id, ""))
	if k.Name != "limited" || string(k.RateLimits) != `[{"type":"requests","unit":"rpm","value":1}]` {
		t.Errorf("after refused updates: name %q, rate_limits %s", k.Name, k.RateLimits)
	}
	if got := e.statuses(2, key); !slices.Equal(got, []int{200, 429}) {
		t.Errorf("after refused updates: %v, want 200 429", got)
	}
}

// TestKeyRateLimitsStoredAsGiven: valid rate_limits read back as they were
// written (numbers, field order), fractional token values included.
func TestKeyRateLimitsStoredAsGiven(t *testing.T) {
	e := newPolEnv(t, nil, nil)
	given := `[ {"value": 2.50, "unit": "rph", "type": "tokens"}, {"unit":"rpd","type":"requests","value":1E3} ]`
	id, _ := e.keyCreate(`"rate_limits":` + given)
	k := polReadJSON[struct {
		RateLimits json.RawMessage `json:"rate_limits"`
	}](t, e.do(polAdmin, "GET", "/v1/api-keys/"+id, ""))
	var want bytes.Buffer
	json.Compact(&want, []byte(given))
	if string(k.RateLimits) != want.String() {
		t.Errorf("rate_limits read back %s, want %s", k.RateLimits, want.String())
	}
}

// TestKeyRateLimitsTokens: a tokens entry is charged the usage the answer
// reports, and refuses once it is spent; another key is unaffected.
func TestKeyRateLimitsTokens(t *testing.T) {
	e := newPolEnv(t, usageJSON(60), nil)
	_, key := e.keyCreate(`"rate_limits":[{"type":"tokens","unit":"rph","value":100},{"type":"requests","unit":"rph","value":1000}]`)
	var rem []string
	for range 2 {
		res := e.complete(key)
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 || res.Header.Get("x-ratelimit-limit-tokens") != "100" || !bytes.Contains(b, []byte(`"total_tokens":60`)) {
			t.Fatalf("status %d, x-ratelimit-limit-tokens %q, body %s", res.StatusCode, res.Header.Get("x-ratelimit-limit-tokens"), b)
		}
		if got := res.Header.Get("x-ratelimit-limit-requests"); got != "1000" {
			t.Errorf("x-ratelimit-limit-requests = %q, want 1000", got)
		}
		rem = append(rem, res.Header.Get("x-ratelimit-remaining-tokens"))
	}
	if diff := cmp.Diff([]string{"100", "40"}, rem); diff != "" {
		t.Errorf("x-ratelimit-remaining-tokens (-want +got):\n%s", diff)
	}
	res := e.complete(key)
	if res.StatusCode != 429 {
		t.Fatalf("after 120 of 100 tokens: %d, want 429", res.StatusCode)
	}
	// 120 used of 100 per hour: 20 must drain, 12 minutes, and a bit.
	if ra, _ := strconv.Atoi(res.Header.Get("Retry-After")); ra < 720 || ra > 721 {
		t.Errorf("Retry-After = %q, want 720", res.Header.Get("Retry-After"))
	}
	if got := polReadError(t, res); got.Type != "tokens" || polDeref(got.Code) != "rate_limit_exceeded" {
		t.Errorf("429 body %+v", got)
	}
	if got := e.statuses(1, polMember); got[0] != 200 {
		t.Errorf("another key: %d, want 200", got[0])
	}
	if n := e.calls.Load(); n != 3 {
		t.Errorf("provider served %d, want 3", n)
	}
}

// TestKeyRateLimitsRefund: a request the gateway refuses itself (an
// unknown virtual key) gives its unit back, as under a policy.
func TestKeyRateLimitsRefund(t *testing.T) {
	e := newPolEnv(t, nil, nil)
	_, key := e.keyCreate(`"rate_limits":[{"type":"requests","unit":"rph","value":2}]`)
	for range 3 {
		res := e.do(key, "POST", "/v1/chat/completions", `{"model":"m"}`, "x-gateway-virtual-key: no-such-vk", "Content-Type: application/json")
		if res.StatusCode/100 != 4 || res.StatusCode == 429 {
			t.Fatalf("unknown virtual key: %d, want a 4xx of the gateway", res.StatusCode)
		}
	}
	if got := e.statuses(3, key); !slices.Equal(got, []int{200, 200, 429}) {
		t.Errorf("after 3 refunded refusals: %v, want 200 200 429", got)
	}
}

// recordingLimiter is a MemoryLimiter that records the buckets taken from.
type recordingLimiter struct {
	gateway.MemoryLimiter
	mu   sync.Mutex
	keys []string
}

func (l *recordingLimiter) Take(ctx context.Context, key string, limit gateway.Limit, cost float64) (gateway.LimitDecision, error) {
	l.mu.Lock()
	if !slices.Contains(l.keys, key) {
		l.keys = append(l.keys, key)
	}
	l.mu.Unlock()
	return l.MemoryLimiter.Take(ctx, key, limit, cost)
}

// TestKeyRateLimitsSharedBuckets: two gateways (replicas) over one store
// and one Limiter count a key's entry in one bucket, whose name is derived
// from the key alone, beside (not in) the bucket of a policy on the same
// key.
func TestKeyRateLimitsSharedBuckets(t *testing.T) {
	limiter := &recordingLimiter{}
	e := newPolEnv(t, nil, func(o *gateway.Options) { o.Limiter = limiter })
	e.put(perKey3)
	other := gateway.New(gateway.Options{Keys: e.store, VirtualKeys: e.store, Policies: e.store, Limiter: limiter})
	t.Cleanup(func() { other.Close() })
	otherSrv := httptest.NewServer(other)
	t.Cleanup(otherSrv.Close)

	id, key := e.keyCreate(`"rate_limits":[{"type":"requests","unit":"rpm","value":2}]`)
	send := func(url string) int {
		req, _ := http.NewRequest("POST", url+"/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
		req.Header.Set("x-gateway-api-key", key)
		req.Header.Set("x-gateway-virtual-key", "vk")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	got := []int{send(e.srv.URL), send(otherSrv.URL), send(e.srv.URL), send(otherSrv.URL)}
	if !slices.Equal(got, []int{200, 200, 429, 429}) {
		t.Errorf("alternating replicas: %v, want 200 200 429 429", got)
	}
	keyBucket := "api-key\x004:ws-1\x00" + strconv.Itoa(len(id)) + ":" + id + "\x00requests\x00rpm"
	if !slices.Contains(limiter.keys, keyBucket) || len(limiter.keys) != 2 {
		t.Errorf("buckets %q, want the key's %q and the policy's", limiter.keys, keyBucket)
	}
	for _, k := range limiter.keys {
		if k != keyBucket && !strings.HasPrefix(k, perKey3.ID) {
			t.Errorf("bucket %q is neither the key's nor the policy's", k)
		}
	}
}

// TestKeyRateLimitsInvalidStored: rate_limits that reached the store past
// the control plane refuse the key's data-plane requests (fail closed),
// and the control plane still serves the key.
func TestKeyRateLimitsInvalidStored(t *testing.T) {
	e := newPolEnv(t, nil, nil)
	e.store.AddAPIKey(gateway.APIKey{ID: "key-bad", Digest: gateway.HashAPIKey("gw-bad-limits"), WorkspaceID: "ws-1",
		Role: gateway.RoleAdmin, RateLimits: json.RawMessage(`[{"type":"requests","unit":"fortnightly","value":1}]`)})
	for range 2 {
		if got := e.statuses(1, "gw-bad-limits"); got[0] != 500 {
			t.Fatalf("key with invalid stored rate_limits: %d, want 500", got[0])
		}
	}
	if res := e.do("gw-bad-limits", "GET", "/v1/api-keys/key-bad", ""); res.StatusCode != 200 {
		t.Errorf("control plane: %d, want 200", res.StatusCode)
	}
	if n := e.calls.Load(); n != 0 {
		t.Errorf("provider served %d, want 0", n)
	}
	e.keyUpdate("key-bad", `{"rate_limits":[{"type":"requests","unit":"rpm","value":1}]}`)
	if got := e.statuses(2, "gw-bad-limits"); !slices.Equal(got, []int{200, 429}) {
		t.Errorf("after fixing them: %v, want 200 429", got)
	}
}

// BenchmarkKeyRateLimits measures a request through the whole gateway (in
// memory, no network) by a key without rate_limits and by keys with a
// requests entry and with a requests and a tokens entry, with no policy
// stored: the cost of enforcing a key's rate_limits reads as the
// difference from "none".
func BenchmarkKeyRateLimits(b *testing.B) {
	for _, bc := range []struct {
		name, rateLimits string
	}{
		{"none", ""},
		{"requests", `[{"type":"requests","unit":"rpm","value":1e15}]`},
		{"requests+tokens", `[{"type":"requests","unit":"rpm","value":1e15},{"type":"tokens","unit":"rph","value":1e15}]`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			store := memstore.New()
			store.AddAPIKey(gateway.APIKey{ID: "k", Digest: gateway.HashAPIKey(polMember), WorkspaceID: "ws-1", Role: gateway.RoleMember,
				RateLimits: json.RawMessage(bc.rateLimits)})
			store.AddVirtualKey(gateway.VirtualKey{Slug: "vk", Provider: "openai", APIKey: "sk", BaseURL: "http://provider.test/v1", WorkspaceID: "ws-1"})
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
