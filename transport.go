package gateway

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Limits of the default upstream transport (see Options.Transport).
const (
	// upstreamIdlePerHost is how many idle connections are kept to one
	// provider host. A gateway sends all its traffic to a handful of hosts,
	// so the pool must hold one connection per request in flight at peak:
	// http.DefaultTransport keeps 2, and under 32 concurrent requests every
	// other one dialed (and, against a real provider, shook hands over TLS)
	// anew, leaving a socket in TIME_WAIT behind.
	upstreamIdlePerHost = 512

	// upstreamIdleTotal bounds the idle connections kept to all hosts
	// together; custom hosts are many and each keeps few.
	upstreamIdleTotal = 4096
)

// NewTransport returns the transport a Gateway uses for provider hosts when
// Options.Transport is nil: an *http.Transport sized for a gateway, which
// sends every request to a few hosts at high concurrency. It keeps up to
// 512 idle connections per host (4096 in all) for 90 seconds, speaks
// HTTP/2 where the provider offers it over TLS, dials within 10 seconds
// with TCP keep-alives every 30, gives a TLS handshake 10 seconds and an
// Expect: 100-continue 1 second, and uses the proxy named by the
// environment (HTTPS_PROXY, NO_PROXY). It sets no ResponseHeaderTimeout:
// a request's own timeout (x-gateway-request-timeout, a config's
// request_timeout) bounds the wait for a provider's answer.
//
// A host that wants other limits can start from NewTransport, change what
// it needs and pass the result as Options.Transport.
func NewTransport() *http.Transport {
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   10 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          upstreamIdleTotal,
		MaxIdleConnsPerHost:   upstreamIdlePerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// copyBufferSize is the size of the buffers answers are copied through,
// httputil.ReverseProxy's own.
const copyBufferSize = 32 << 10

// copyBuffers is the ReverseProxy's httputil.BufferPool. Without one the
// ReverseProxy allocates a fresh 32 KiB buffer for every answer: most of
// the memory a request allocated, and so most of the garbage collector's
// work under load. Buffers are kept as array pointers, so that neither Get
// nor Put allocates.
type copyBuffers struct{ pool sync.Pool }

func (c *copyBuffers) Get() []byte {
	if b, ok := c.pool.Get().(*[copyBufferSize]byte); ok {
		return b[:]
	}
	return make([]byte, copyBufferSize)
}

func (c *copyBuffers) Put(b []byte) {
	if len(b) == copyBufferSize {
		c.pool.Put((*[copyBufferSize]byte)(b))
	}
}
