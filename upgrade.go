package gateway

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
)

// websocketHeaders are the caller's headers of a WebSocket handshake that
// reach the provider beside the allowed ones, so that an upgrade (the
// OpenAI Realtime API, say) passes through like any other request.
var websocketHeaders = []string{"Sec-Websocket-Key", "Sec-Websocket-Version", "Sec-Websocket-Protocol", "Sec-Websocket-Extensions"}

// keepUpgrade carries a WebSocket upgrade over to the upstream request's
// header h: the Connection and Upgrade that httputil.ReverseProxy put on
// the outgoing request (it does so only when the caller's Connection
// header names upgrade) before the gateway replaced its headers, and the
// caller's Sec-WebSocket-* headers. up is that Upgrade value.
//
// Only WebSocket passes (docs/architecture.md, Trust): an upgrade to any other protocol
// (h2c, TLS, anything) is a hop-by-hop header like the Connection that
// names it, and is dropped with it, so that the request goes on as a
// plain one, which the ReverseProxy then refuses to switch.
func keepUpgrade(h, in http.Header, up string) {
	if !websocketUpgrade(up) {
		return
	}
	h["Connection"] = []string{"Upgrade"}
	h["Upgrade"] = []string{"websocket"}
	for _, n := range websocketHeaders {
		if v := in[n]; v != nil {
			h[n] = v
		}
	}
}

// websocketUpgrade reports whether the Upgrade value up names the
// protocol token websocket, in any case (RFC 6455 §4.2.1), among the
// protocols it lists.
func websocketUpgrade(up string) bool {
	for tok := range strings.SplitSeq(up, ",") {
		if strings.EqualFold(strings.TrimSpace(tok), "websocket") {
			return true
		}
	}
	return false
}

// upgradedConn is the provider's side of a switched protocol (a 101
// answer): httputil.ReverseProxy copies the caller's bytes into it and its
// bytes to the caller until either side closes. It counts both ways for
// the request log; the copies run on goroutines of their own, hence the
// atomics.
type upgradedConn struct {
	io.ReadWriteCloser
	in  atomic.Int64 // written: from the caller to the provider
	out atomic.Int64 // read: from the provider to the caller
}

func (c *upgradedConn) Read(p []byte) (int, error) {
	n, err := c.ReadWriteCloser.Read(p)
	c.out.Add(int64(n))
	return n, err
}

func (c *upgradedConn) Write(p []byte) (int, error) {
	n, err := c.ReadWriteCloser.Write(p)
	c.in.Add(int64(n))
	return n, err
}
