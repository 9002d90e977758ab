package gateway

import (
	"net"
	"testing"
)

// deadUpstream returns the base URL of a loopback listener that accepts
// every connection and closes it at once, unread: a provider that never
// answers. Unlike the port of a closed listener, which the system may hand
// to the next server started (the gateway's own test server included),
// its address stays taken until the test ends, so no other server can
// answer in its place.
func deadUpstream(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return // ln was closed
			}
			c.Close()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return "http://" + ln.Addr().String()
}

// cutOff points the virtual key of u (as routeEnv stored it) at a
// deadUpstream, so that u cannot be reached through the gateway while its
// own server, and its port, stay up.
func (e *coreEnv) cutOff(u *fakeUp) {
	e.t.Helper()
	e.store.AddVirtualKey(VirtualKey{Slug: u.name, Provider: "openai", APIKey: "sk-" + u.name,
		BaseURL: deadUpstream(e.t) + "/v1", WorkspaceID: "ws-1"})
}
