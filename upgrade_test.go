package gateway

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// wsAccept is the Sec-WebSocket-Accept of a handshake key (RFC 6455 §4.2.2).
func wsAccept(key string) string {
	h := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(h[:])
}

// echoUpgrades is a fake provider's handler for WebSocket handshakes: it
// answers 101 and echoes every byte it reads, as frames are opaque to the
// gateway. closed receives once the gateway's side of the socket is
// closed.
func echoUpgrades(t *testing.T, closed chan<- struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "websocket" || r.Header.Get("Sec-Websocket-Key") == "" {
			http.Error(w, "upgrade required", http.StatusUpgradeRequired)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
			"Sec-WebSocket-Accept: " + wsAccept(r.Header.Get("Sec-Websocket-Key")) + "\r\n" +
			"Sec-WebSocket-Protocol: " + r.Header.Get("Sec-Websocket-Protocol") + "\r\n\r\n")
		brw.Flush()
		io.Copy(conn, brw) // echo until the gateway closes its side
		closed <- struct{}{}
	}
}

// dialUpgrade opens a raw connection to srvURL and sends a WebSocket
// handshake for path with the extra headers; it returns the connection,
// its reader and the gateway's answer.
func dialUpgrade(t *testing.T, srvURL, path string, headers ...string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(srvURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var req bytes.Buffer
	req.WriteString("GET " + path + " HTTP/1.1\r\nHost: gateway.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: realtime\r\n")
	for _, h := range headers {
		req.WriteString(h + "\r\n")
	}
	req.WriteString("\r\n")
	if _, err := conn.Write(req.Bytes()); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	return conn, br, res
}

// TestWebSocketPassThrough drives a real upgrade through the gateway to a
// fake provider that echoes frames: the handshake reaches the provider
// with the stored credential, the 101 comes back with the gateway's
// headers, bytes flow unchanged both ways, a caller that hangs up closes
// the provider's socket, the request log records the session, and a
// requests policy counts the session as one request.
func TestWebSocketPassThrough(t *testing.T) {
	closed := make(chan struct{}, 4)
	up := newCoreUpstream(t, echoUpgrades(t, closed))
	e := newCoreEnv(t, up, nil)
	e.store.PutPolicy(context.Background(), &RateLimitsPolicy{ID: "7d1e0000-0000-4000-8000-0000000000c1", WorkspaceID: "ws-1",
		GroupBy: []PolicyGroupBy{{Key: "api_key"}}, Type: PolicyRequests, Unit: PolicyPerHour, Value: 1, Status: PolicyActive})

	conn, br, res := dialUpgrade(t, e.srv.URL, "/v1/realtime?model=gpt-realtime",
		"x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-up", "x-gateway-trace-id: ws-trace-1")
	if res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d, want 101", res.StatusCode)
	}
	if got := res.Header.Get("Sec-Websocket-Accept"); got != wsAccept("dGhlIHNhbXBsZSBub25jZQ==") {
		t.Errorf("Sec-WebSocket-Accept %q", got)
	}
	if res.Header.Get(HeaderTraceID) != "ws-trace-1" || res.Header.Get(HeaderProvider) != "openai" ||
		res.Header.Get("Sec-Websocket-Protocol") != "realtime" {
		t.Errorf("101 headers %v: want the trace id, the provider and the agreed subprotocol", res.Header)
	}
	got := up.received()
	if len(got) != 1 {
		t.Fatalf("the provider saw %d requests, want 1", len(got))
	}
	h := got[0].Header
	if got[0].Path != "/v1/realtime" || got[0].Query != "model=gpt-realtime" || h.Get("Authorization") != "Bearer sk-stored-secret" ||
		h.Get("Sec-Websocket-Version") != "13" || h.Get("X-Gateway-Api-Key") != "" {
		t.Errorf("provider got %s?%s with %v", got[0].Path, got[0].Query, h)
	}

	// Frames are bytes to the gateway: every byte value goes through as sent.
	frame := make([]byte, 4096)
	for i := range frame {
		frame[i] = byte(i)
	}
	for range 3 {
		if _, err := conn.Write(frame); err != nil {
			t.Fatal(err)
		}
		echo := make([]byte, len(frame))
		if _, err := io.ReadFull(br, echo); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(echo, frame) {
			t.Fatal("the echoed frame differs from the one sent")
		}
	}

	// While the session lasts, the policy of one request per hour is used up.
	if res := e.do("GET", "/v1/models", nil, "x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-up"); res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a request beside the session: %d, want 429", res.StatusCode)
	}

	conn.Close() // the caller hangs up
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the provider's socket stayed open after the caller hung up")
	}
	e.srv.Close() // waits for the handler, which logs the session
	e.gw.Close()
	var session *RequestLog
	for _, rec := range e.logs.Query(LogFilter{TraceID: "ws-trace-1"}) {
		session = &rec
	}
	if session == nil {
		t.Fatal("no request log for the session")
	}
	if session.Status != http.StatusSwitchingProtocols || session.BytesIn != 3*4096 || session.BytesOut != 3*4096 || session.Provider != "openai" {
		t.Errorf("log %+v: want status 101 and 12288 bytes each way", *session)
	}
}

// TestWebSocketRefused: an upgrade refused by the provider comes back as
// the provider sent it, and a handshake without the gateway key never
// reaches it.
func TestWebSocketRefused(t *testing.T) {
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"no realtime here"}}`, http.StatusForbidden)
	})
	e := newCoreEnv(t, up, nil)
	_, _, res := dialUpgrade(t, e.srv.URL, "/v1/realtime", "x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: vk-up")
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("status %d, want the provider's 403", res.StatusCode)
	}
	_, _, res = dialUpgrade(t, e.srv.URL, "/v1/realtime", "x-gateway-virtual-key: vk-up")
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("without a key: %d, want 401", res.StatusCode)
	}
	if n := len(up.received()); n != 1 {
		t.Errorf("the provider saw %d handshakes, want 1", n)
	}
}

// TestUpgradeOnlyWebSocket: a request asking to upgrade to another
// protocol than WebSocket goes on as a plain request: neither Upgrade nor
// Connection reach the provider. A WebSocket upgrade named in any case
// still switches.
func TestUpgradeOnlyWebSocket(t *testing.T) {
	up := newCoreUpstream(t, nil)
	e := newCoreEnv(t, up, nil)
	for _, proto := range []string{"foo/1.0", "h2c", "TLS/1.2", "websocketx"} {
		res := e.do("GET", "/v1/models", nil, HeaderAPIKey+": "+coreKey, HeaderVirtualKey+": vk-up",
			"Connection: Upgrade", "Upgrade: "+proto)
		if res.StatusCode != 200 {
			t.Errorf("Upgrade: %s: %d, want the plain request's 200", proto, res.StatusCode)
		}
		recv := up.received()
		h := recv[len(recv)-1].Header
		if v := h.Values("Upgrade"); len(v) > 0 {
			t.Errorf("Upgrade: %s reached the provider as %q", proto, v)
		}
		for _, v := range h.Values("Connection") {
			if strings.Contains(strings.ToLower(v), "upgrade") {
				t.Errorf("Upgrade: %s: the provider got Connection: %s", proto, v)
			}
		}
	}

	// WebSocket, in another case: the upgrade passes and the provider
	// switches.
	ws := newCoreUpstream(t, echoUpgrades(t, make(chan struct{}, 1)))
	e.store.AddVirtualKey(VirtualKey{Slug: "vk-ws", Provider: "openai", APIKey: "sk-ws", BaseURL: ws.URL + "/v1", WorkspaceID: "ws-1"})
	_, _, res := dialUpgradeAs(t, e.srv.URL, "/v1/realtime", "WebSocket", HeaderAPIKey+": "+coreKey, HeaderVirtualKey+": vk-ws")
	if res.StatusCode != http.StatusSwitchingProtocols {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("Upgrade: WebSocket: %d %s, want 101", res.StatusCode, b)
	}
}

// dialUpgradeAs is dialUpgrade with the Upgrade value given.
func dialUpgradeAs(t *testing.T, srvURL, path, proto string, headers ...string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(srvURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var req strings.Builder
	req.WriteString("GET " + path + " HTTP/1.1\r\nHost: gateway.test\r\nConnection: Upgrade\r\nUpgrade: " + proto + "\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n")
	for _, h := range headers {
		req.WriteString(h + "\r\n")
	}
	req.WriteString("\r\n")
	if _, err := io.WriteString(c, req.String()); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c, br, res
}
