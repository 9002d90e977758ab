package gateway

import (
	"errors"
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
