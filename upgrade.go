package gateway

import (
	"io"
	"net/http"
	"sync/atomic"
)

// websocketHeaders are the caller's headers of a WebSocket handshake that
// reach the provider beside the allowed ones, so that an upgrade (the
// OpenAI Realtime API, say) passes through like any other request.
var websocketHeaders = []string{"Sec-Websocket-Key", "Sec-Websocket-Version", "Sec-Websocket-Protocol", "Sec-Websocket-Extensions"}

// keepUpgrade carries a protocol upgrade over to the upstream request's
// header h: the Connection and Upgrade that httputil.ReverseProxy put on
// the outgoing request (it does so only when the caller's Connection
// header names upgrade) before the gateway replaced its headers, and the
// caller's Sec-WebSocket-* headers. up is that Upgrade value.
func keepUpgrade(h, in http.Header, up string) {
	h["Connection"] = []string{"Upgrade"}
	h["Upgrade"] = []string{up}
	for _, n := range websocketHeaders {
		if v := in[n]; v != nil {
			h[n] = v
		}
	}
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
