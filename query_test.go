package gateway

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestGatewayParamsNotForwarded: a caller's gateway key sent in the query,
// under any spelling of its name, never reaches the provider, while the
// rest of the query arrives byte for byte; the request log keeps the
// parameter, redacted.
func TestGatewayParamsNotForwarded(t *testing.T) {
	up := newCoreUpstream(t, nil)
	e := newCoreEnv(t, up, nil)
	const query = "limit=2&x-gateway-api-key=" + coreKey + "&order=a%2Cb+c&X-Gateway-Api-Key=" + coreKey +
		"&%78%2Dgateway%2Dapi%2Dkey=" + coreKey + "&X-GATEWAY-CONFIG=pc-1&after=x%2Dgateway-api-key&"
	res := e.do("GET", "/v1/models?"+query, nil, append(vkHeaders, "x-gateway-trace-id: query-key")...)
	io.Copy(io.Discard, res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", res.StatusCode)
	}
	if got, want := up.received()[0].Query, "limit=2&order=a%2Cb+c&after=x%2Dgateway-api-key&"; got != want {
		t.Errorf("the provider received the query %q, want %q", got, want)
	}
	e.gw.Close()
	logs := e.logs.Query(LogFilter{TraceID: "query-key"})
	if len(logs) != 1 || strings.Contains(logs[0].Query, coreKey) || !strings.Contains(logs[0].Query, "x-gateway-api-key=REDACTED") {
		t.Errorf("log records %+v: want one, with the key in the query redacted", logs)
	}
}

// TestGatewayParamsCached: a cached request with the gateway key in its
// query reaches the provider without it, and shares the cache entry of the
// same request sent with another value there, since the provider would
// receive the very same request.
func TestGatewayParamsCached(t *testing.T) {
	up := newCoreUpstream(t, nil)
	e := newCoreEnv(t, up, nil)
	h := []string{"x-gateway-api-key: " + coreKey, "Content-Type: application/json",
		`x-gateway-config: {"virtual_key":"vk-up","cache":{"mode":"simple"}}`}
	var statuses []string
	for _, q := range []string{"a=1&x-gateway-api-key=" + coreKey, "a=1&X-Gateway-Api-Key=other"} {
		res := e.do("POST", "/v1/chat/completions?"+q, strings.NewReader(`{"model":"m"}`), h...)
		io.Copy(io.Discard, res.Body)
		statuses = append(statuses, res.Header.Get(HeaderCacheStatus))
	}
	got := up.received()
	if len(got) != 1 || got[0].Query != "a=1" {
		t.Fatalf("the provider received %d requests (%+v), want one with the query \"a=1\"", len(got), got)
	}
	if statuses[0] != "MISS" || statuses[1] != "HIT" {
		t.Errorf("cache statuses %q, want MISS then HIT", statuses)
	}
}

func TestStripGatewayParams(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"a=1&b=2", "a=1&b=2"},
		{"x-gateway-api-key=K", ""},
		{"a=1&x-gateway-api-key=K&b=%20c", "a=1&b=%20c"},
		{"X-Gateway-Api-Key=K&a=1", "a=1"},
		{"%78%2Dgateway%2Dapi%2Dkey=K&a=1", "a=1"},
		{"x%2dGATEWAY-api-key=K", ""},
		{"x-gateway-api-key%zz=K&a", "a"},
		{"a=1;x-gateway-api-key=K;b=2", "a=1;b=2"},
		{"a=1&x-gateway-api-key&b", "a=1&b"},
		{"x-gateway-api-key=K&x-gateway-config=c", ""},
		{"a=1&&b=2&x-gateway-x=1", "a=1&&b=2"},
		{"&x-gateway-api-key=K&b", "&b"},
		{"a=1&x-gateway-api-key=K&", "a=1&"},
		{"x-gatewayer=1&x-gateway=2", "x-gatewayer=1&x-gateway=2"},
		{"a=x-gateway-api-key", "a=x-gateway-api-key"},
		{"x+gateway-api-key=K", "x+gateway-api-key=K"},
		{"q=a%26x-gateway-api-key%3DK", "q=a%26x-gateway-api-key%3DK"},
	} {
		if got := stripGatewayParams(tt.in); got != tt.want {
			t.Errorf("stripGatewayParams(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { stripGatewayParams("model=m&limit=2&order=asc") }); n != 0 {
		t.Errorf("a query without gateway parameters costs %v allocations, want 0", n)
	}
}

// FuzzStripGatewayParams: the query that leaves holds no parameter whose
// name, unescaped and lower-cased, starts with x-gateway-, and every other
// parameter is kept, unchanged and in order.
func FuzzStripGatewayParams(f *testing.F) {
	for _, s := range []string{"", "a=1&x-gateway-api-key=K&b=2", "%78-GATEWAY-api-key=K;a", "&&x-gateway-", "x-gateway-%zz=1&%2", "a+b=c%20d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		out := stripGatewayParams(q)
		for p := range strings.FieldsFuncSeq(out, func(r rune) bool { return r == '&' || r == ';' }) {
			name, _, _ := strings.Cut(p, "=")
			if strings.HasPrefix(strings.ToLower(name), gatewayParamPrefix) {
				t.Fatalf("stripGatewayParams(%q) = %q keeps %q", q, out, p)
			}
			if n, err := url.QueryUnescape(name); err == nil && strings.HasPrefix(strings.ToLower(n), gatewayParamPrefix) {
				t.Fatalf("stripGatewayParams(%q) = %q keeps %q", q, out, p)
			}
		}
		// The other parameters, each after the separator before it.
		var want strings.Builder
		sep, kept := byte(0), false
		for i := 0; i <= len(q); i++ {
			j := i
			for j < len(q) && q[j] != '&' && q[j] != ';' {
				j++
			}
			if p := q[i:j]; !gatewayParam(p) {
				if kept {
					want.WriteByte(sep)
				}
				want.WriteString(p)
				kept = true
			}
			if j < len(q) {
				sep = q[j]
			}
			i = j
		}
		if out != want.String() {
			t.Fatalf("stripGatewayParams(%q) = %q, want %q", q, out, want.String())
		}
		// A name without escapes is dropped exactly when it starts with
		// x-gateway-, in any case.
		for p := range strings.FieldsFuncSeq(q, func(r rune) bool { return r == '&' || r == ';' }) {
			name, _, _ := strings.Cut(p, "=")
			if !strings.ContainsAny(name, "%+") && gatewayParam(p) != strings.HasPrefix(strings.ToLower(name), gatewayParamPrefix) {
				t.Fatalf("gatewayParam(%q) = %v", p, gatewayParam(p))
			}
		}
	})
}
