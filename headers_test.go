package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestHeaderValidation(t *testing.T) {
	up := newCoreUpstream(t, nil)
	e := newCoreEnv(t, up, nil)
	base := []string{"x-gateway-api-key: " + coreKey, "x-gateway-virtual-key: vk-up"}
	long := strings.Repeat("a", 129)
	bigMeta := `{"k":"` + strings.Repeat("v", 8<<10) + `"}`
	var manyKeys []string
	for i := 0; i < 65; i++ {
		manyKeys = append(manyKeys, `"k`+strings.Repeat("x", i)+`":"v"`)
	}
	tests := []struct {
		name   string
		header string
		status int
		param  string
	}{
		{"trace id ok", "x-gateway-trace-id: trace-1", 200, ""},
		{"trace id 128 chars", "x-gateway-trace-id: " + long[:128], 200, ""},
		{"trace id 129 chars", "x-gateway-trace-id: " + long, 400, HeaderTraceID},
		{"trace id with space", "x-gateway-trace-id: a b", 400, HeaderTraceID},
		{"trace id non-ascii", "x-gateway-trace-id: caf\u00e9", 400, HeaderTraceID},
		{"metadata ok", `x-gateway-metadata: {"_user":"u1","_prompt":"p","_organisation":"o","_environment":"dev","team":"x"}`, 200, ""},
		{"metadata not json", "x-gateway-metadata: {nope", 400, HeaderMetadata},
		{"metadata array", `x-gateway-metadata: ["a"]`, 400, HeaderMetadata},
		{"metadata null", `x-gateway-metadata: null`, 400, HeaderMetadata},
		{"metadata number value", `x-gateway-metadata: {"a":1}`, 400, HeaderMetadata},
		{"metadata nested", `x-gateway-metadata: {"a":{"b":"c"}}`, 400, HeaderMetadata},
		{"metadata too big", "x-gateway-metadata: " + bigMeta, 400, HeaderMetadata},
		{"metadata 65 keys", "x-gateway-metadata: {" + strings.Join(manyKeys, ",") + "}", 400, HeaderMetadata},
		{"metadata 64 keys", "x-gateway-metadata: {" + strings.Join(manyKeys[:64], ",") + "}", 200, ""},
		{"force refresh true", "x-gateway-cache-force-refresh: TRUE", 200, ""},
		{"force refresh false", "x-gateway-cache-force-refresh: false", 200, ""},
		{"force refresh bad", "x-gateway-cache-force-refresh: yes", 400, HeaderCacheForceRefresh},
		{"namespace 256", "x-gateway-cache-namespace: " + strings.Repeat("n", 256), 200, ""},
		{"namespace 257", "x-gateway-cache-namespace: " + strings.Repeat("n", 257), 400, HeaderCacheNamespace},
		{"namespace 256 characters of 2 bytes", "x-gateway-cache-namespace: " + strings.Repeat("é", 256), 200, ""},
		{"namespace 257 characters of 2 bytes", "x-gateway-cache-namespace: " + strings.Repeat("é", 257), 400, HeaderCacheNamespace},
		{"timeout ok", "x-gateway-request-timeout: 5000", 200, ""},
		{"timeout zero", "x-gateway-request-timeout: 0", 400, HeaderRequestTimeout},
		{"timeout negative", "x-gateway-request-timeout: -5", 400, HeaderRequestTimeout},
		{"timeout fraction", "x-gateway-request-timeout: 1.5", 400, HeaderRequestTimeout},
		{"timeout word", "x-gateway-request-timeout: soon", 400, HeaderRequestTimeout},
		{"forward json", `x-gateway-forward-headers: ["x-trace","X-Team"]`, 200, ""},
		{"forward list", "x-gateway-forward-headers: x-trace, x-team", 200, ""},
		{"forward host", "x-gateway-forward-headers: host", 400, HeaderForwardHeaders},
		{"forward gateway header", "x-gateway-forward-headers: x-gateway-api-key", 400, HeaderForwardHeaders},
		{"forward hop-by-hop", `x-gateway-forward-headers: ["Connection"]`, 400, HeaderForwardHeaders},
		{"forward metadata flavor", "x-gateway-forward-headers: Metadata-Flavor", 400, HeaderForwardHeaders},
		{"forward bad json", `x-gateway-forward-headers: ["a"`, 400, HeaderForwardHeaders},
		{"forward bad name", "x-gateway-forward-headers: a b", 400, HeaderForwardHeaders},
		{"forward empty items ignored", "x-gateway-forward-headers: a,,b,", 200, ""},
		{"forward empty JSON item", `x-gateway-forward-headers: ["a",""]`, 400, HeaderForwardHeaders},
		// Beside a virtual key the caller's Authorization is dropped, whatever
		// it holds; TestAuthorizationNotBearer covers where it is used.
		{"authorization not bearer beside a virtual key", "Authorization: Basic abc", 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := e.do("POST", "/v1/chat/completions", strings.NewReader(`{}`), append(base[:2:2], tc.header)...)
			if res.StatusCode != tc.status {
				t.Fatalf("status = %d, want %d", res.StatusCode, tc.status)
			}
			if res.Header.Get(HeaderTraceID) == "" {
				t.Error("response lacks x-gateway-trace-id")
			}
			if tc.status == 200 {
				return
			}
			body := decodeError(t, res)
			if got := deref(body.Error.Param); got != tc.param {
				t.Errorf("param = %s, want %s", got, tc.param)
			}
			if got := deref(body.Error.Code); got != CodeInvalidHeader {
				t.Errorf("code = %s, want %s", got, CodeInvalidHeader)
			}
			if body.Error.Type != TypeInvalidRequest {
				t.Errorf("type = %s, want %s", body.Error.Type, TypeInvalidRequest)
			}
		})
	}
	// No request that failed validation reached the provider.
	if got, want := len(up.received()), 0; got == want {
		t.Fatal("no valid request reached the provider")
	}
	for _, r := range up.received() {
		for name := range r.Header {
			if strings.HasPrefix(name, "X-Gateway-") {
				t.Errorf("provider received gateway header %s", name)
			}
		}
	}
}

func TestParseRequestOptions(t *testing.T) {
	h := http.Header{}
	h.Set(HeaderMetadata, `{"_user":"u1","team":"a"}`)
	h.Set(HeaderCacheForceRefresh, "True")
	h.Set(HeaderCacheNamespace, "ns")
	h.Set(HeaderRequestTimeout, "2500")
	h.Set(HeaderForwardHeaders, `["x-trace","X-TRACE","x-b"]`)
	h.Set(HeaderProvider, "OpenAI")
	h.Set("Authorization", "Bearer sk-abc")
	h.Set(HeaderHostAResourceName, "res")
	h.Set(HeaderHostADeploymentID, "dep")
	h.Set(HeaderHostAAPIVersion, "2024-02-01")
	h.Set(HeaderHostAModelName, "gpt-4o")
	h.Set(HeaderHostBProjectID, "proj")
	h.Set(HeaderHostCAccessKeyID, "AKID")
	h.Set(HeaderHostCSecretKey, "secret")
	h.Set(HeaderHostCSessionToken, "tok")
	h.Set(HeaderHostCRegion, "us-east-1")
	got, err := parseRequestOptions(h, map[string]string{"_environment": "dev", "team": "default"})
	if err != nil {
		t.Fatal(err)
	}
	want := &RequestOptions{
		Metadata:          map[string]string{"_user": "u1", "team": "a", "_environment": "dev"},
		CacheForceRefresh: true,
		CacheNamespace:    "ns",
		RequestTimeout:    2500 * time.Millisecond,
		ForwardHeaders:    []string{"X-Trace", "X-B"},
		Provider:          "openai",
		Token:             "sk-abc",
		Host: HostSettings{ResourceName: "res", DeploymentID: "dep", APIVersion: "2024-02-01", ModelName: "gpt-4o",
			ProjectID: "proj", AccessKeyID: "AKID", SecretAccessKey: "secret", SessionToken: "tok", Region: "us-east-1"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("options mismatch (-want +got):\n%s", diff)
	}
}

func TestTraceID(t *testing.T) {
	up := newCoreUpstream(t, nil)
	e := newCoreEnv(t, up, nil)
	tests := []struct {
		name    string
		headers []string
		want    string // "" means a generated UUID
	}{
		{"given", []string{"x-gateway-trace-id: my-trace"}, "my-trace"},
		{"traceparent", []string{"traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"header beats traceparent", []string{"x-gateway-trace-id: mine", "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}, "mine"},
		{"invalid traceparent ignored", []string{"traceparent: 00-00000000000000000000000000000000-00f067aa0ba902b7-01"}, ""},
		{"absent", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hs := append([]string{"x-gateway-api-key: " + coreKey, "x-gateway-virtual-key: vk-up"}, tc.headers...)
			res := e.do("GET", "/v1/models", nil, hs...)
			got := res.Header.Get(HeaderTraceID)
			if tc.want != "" && got != tc.want {
				t.Errorf("trace id = %q, want %q", got, tc.want)
			}
			if tc.want == "" && !uuidRE.MatchString(got) {
				t.Errorf("trace id = %q, want a generated UUID", got)
			}
		})
	}
	// Errors carry the trace id too.
	res := e.do("GET", "/v1/models", nil, "x-gateway-trace-id: err-trace")
	if res.StatusCode != 401 || res.Header.Get(HeaderTraceID) != "err-trace" {
		t.Errorf("401 response: status %d, trace id %q; want 401 with err-trace", res.StatusCode, res.Header.Get(HeaderTraceID))
	}
}

func TestParseTraceparent(t *testing.T) {
	tests := []struct {
		in     string
		want   string
		wantOK bool
	}{
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "4bf92f3577b34da6a3ce929d0e0e4736", true},
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "", false},
		{"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", "", false},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", "4bf92f3577b34da6a3ce929d0e0e4736", true},
		{"00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", "", false},
		{"", "", false},
	}
	for _, tc := range tests {
		got, ok := parseTraceparent(tc.in)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("parseTraceparent(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.wantOK)
		}
	}
}

func FuzzParseForwardHeaders(f *testing.F) {
	for _, s := range []string{`["x-a","X-B"]`, "x-a, x-b", "host", `[1]`, "", ",", `["x-gateway-config"]`, "a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		names, err := ParseForwardHeaders(v)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T is not *Error", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, n := range names {
			if neverForwarded(n) || n != http.CanonicalHeaderKey(n) || seen[n] || n == "" {
				t.Fatalf("accepted %q from %q", n, v)
			}
			seen[n] = true
		}
	})
}

func FuzzParseRequestOptions(f *testing.F) {
	f.Add(`{"_user":"u"}`, "true", "5000", `["x-a"]`, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	f.Add(`{`, "maybe", "-1", "host", "garbage")
	f.Fuzz(func(t *testing.T, md, refresh, timeout, fwd, tp string) {
		h := http.Header{}
		h.Set(HeaderMetadata, md)
		h.Set(HeaderCacheForceRefresh, refresh)
		h.Set(HeaderRequestTimeout, timeout)
		h.Set(HeaderForwardHeaders, fwd)
		o, err := parseRequestOptions(h, nil)
		if err != nil {
			e, ok := err.(*Error)
			if !ok || e.Status != 400 || e.Param == "" {
				t.Fatalf("error %#v is not a 400 naming a header", err)
			}
			return
		}
		if o.RequestTimeout < 0 || len(o.Metadata) > maxMetadataKeys {
			t.Fatalf("accepted out-of-bounds options %+v", o)
		}
		if id, ok := parseTraceparent(tp); ok && (len(id) != 32 || !lowerHex(id)) {
			t.Fatalf("traceparent %q gave trace id %q", tp, id)
		}
	})
}

// FuzzParsePlainMetadata holds the encoding/json-free parser of plain
// metadata to encoding/json's answer: whatever it accepts, json accepts as
// the same object of strings.
func FuzzParsePlainMetadata(f *testing.F) {
	for _, s := range []string{`{"_user":"u1"}`, ` { "a" : "b" , "c":"" } `, `{}`, `{"a":"b","a":"c"}`, `{"a":1}`,
		`{"a":"b",}`, `{"a":"\u00e9"}`, `{"a":"b"} x`, `{"":"v"}`, `{"a":"b"`, `["a"]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		md, ok := parsePlainMetadata(v)
		if !ok {
			return
		}
		var want map[string]string
		if err := json.Unmarshal([]byte(v), &want); err != nil || want == nil {
			t.Fatalf("parsePlainMetadata accepted %q, which encoding/json refuses: %v", v, err)
		}
		if diff := cmp.Diff(want, md); diff != "" {
			t.Fatalf("parsePlainMetadata(%q) differs from encoding/json (-json +plain):\n%s", v, diff)
		}
	})
}

func TestParseMetadataAllocs(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { parseMetadata(`{"_user":"u1","_environment":"prod"}`) }); n > 2 {
		t.Errorf("parseMetadata of plain metadata allocates %v times, want at most 2 (the map)", n)
	}
}

// TestAuthorizationNotBearer: an Authorization that is not a bearer token is
// refused where the gateway would send it on (provider + token, custom
// host, configs), and dropped beside a virtual key.
func TestAuthorizationNotBearer(t *testing.T) {
	up := newCoreUpstream(t, nil)
	e := newCoreEnv(t, up, nil)
	key := "x-gateway-api-key: " + coreKey
	for _, tc := range []struct {
		name    string
		headers []string
		status  int
	}{
		{"provider and token", []string{key, "x-gateway-provider: openai", "Authorization: Basic abc"}, 400},
		{"custom host", []string{key, "x-gateway-provider: openai", "x-gateway-custom-host: " + up.URL + "/v1", "Authorization: Basic abc"}, 400},
		{"inline config", []string{key, `x-gateway-config: {"provider":"openai","custom_host":"` + up.URL + `/v1"}`, "Authorization: Token"}, 400},
		{"virtual key", []string{key, "x-gateway-virtual-key: vk-up", "Authorization: Basic abc"}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e.do("POST", "/v1/chat/completions", strings.NewReader(`{}`), tc.headers...)
			if res.StatusCode != tc.status {
				t.Fatalf("status = %d, want %d", res.StatusCode, tc.status)
			}
			if tc.status == 400 {
				if p := decodeError(t, res).Error.Param; p == nil || *p != "Authorization" {
					t.Errorf("param = %v, want Authorization", p)
				}
			}
		})
	}
	for _, r := range up.received() {
		if a := r.Header.Get("Authorization"); a != "Bearer sk-stored-secret" {
			t.Errorf("provider got Authorization %q, want the virtual key's own", a)
		}
	}
	if n := len(up.received()); n != 1 {
		t.Errorf("provider received %d requests, want 1", n)
	}
}

// TestNewTraceIDTimeOrdered: a generated trace id is a version 7 UUID
// whose text sorts by the millisecond it was made in, so that stores
// indexing trace ids append rather than insert at random.
func TestNewTraceIDTimeOrdered(t *testing.T) {
	prev := newTraceID()
	for range 50 {
		time.Sleep(2 * time.Millisecond)
		id := newTraceID()
		if len(id) != 36 || id[14] != '7' || !strings.ContainsRune("89ab", rune(id[19])) {
			t.Fatalf("trace id %s: want a version 7, variant 10 UUID", id)
		}
		if id[:13] <= prev[:13] {
			t.Fatalf("trace id %s made after %s sorts before it", id, prev)
		}
		prev = id
	}
}
