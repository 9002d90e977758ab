package gateway

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"testing"
)

// The deprecated Transport.DialTLS of an operator's transport must not
// carry over to the custom-host transport: it would dial https custom hosts
// without the guard.
func TestCustomHostTransportIgnoresDialTLS(t *testing.T) {
	rn := &recordingNet{hosts: map[string][]netip.Addr{"internal.test": {netip.MustParseAddr("10.0.0.7")}}}
	var mu sync.Mutex
	var tlsDials []string
	base := &http.Transport{DialTLS: func(network, addr string) (net.Conn, error) {
		mu.Lock()
		tlsDials = append(tlsDials, addr)
		mu.Unlock()
		return nil, errors.New("test: DialTLS refused " + addr)
	}}
	e := newCoreEnv(t, nil, func(o *Options) {
		o.Transport = base
		o.Resolver = rn
		o.DialContext = rn.DialContext
	})
	res := e.do("GET", "/v1/models", nil, "x-gateway-api-key: "+coreKey, "x-gateway-provider: openai",
		"x-gateway-custom-host: https://internal.test/v1", "Authorization: Bearer sk-caller")
	if res.StatusCode != http.StatusBadRequest || deref(decodeError(t, res).Error.Code) != CodeInvalidCustomHost {
		t.Errorf("status %d, want 400 invalid_custom_host", res.StatusCode)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(tlsDials) > 0 {
		t.Errorf("the operator's DialTLS dialed %v for a caller-supplied host, bypassing the guard", tlsDials)
	}
}

// A provider answering with its own x-gateway-trace-id (e.g. another
// gateway behind a custom host) must not add a second trace id to ours.
func TestUpstreamTraceIDNotDuplicated(t *testing.T) {
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Gateway-Trace-Id", "upstream-trace")
		io.WriteString(w, "{}")
	})
	e := newCoreEnv(t, up, nil)
	res := e.do("GET", "/v1/models", nil, append(vkHeaders, "x-gateway-trace-id: tr-own")...)
	if got := res.Header.Values(HeaderTraceID); len(got) != 1 || got[0] != "tr-own" {
		t.Errorf("x-gateway-trace-id = %q, want [tr-own]", got)
	}
}
