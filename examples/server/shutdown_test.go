package main

import (
	"net/http"
	"testing"

	"github.com/modelgateway/gateway/gatewaytest"
)

// checkNotServed sends a new request, on a new connection, to the gateway
// at base while it shuts down, with the headers hdr that would take it to
// fake, and fails the test if the gateway served it. Its listener is
// closed by then, so the connection is refused; but the system may have
// handed the port to another server meanwhile, whose answer proves
// nothing either way. So the check is that fake, which only this gateway
// reaches, saw no new request, rather than that the connection failed.
func checkNotServed(t *testing.T, base string, hdr map[string]string, fake *gatewaytest.Server) {
	t.Helper()
	before := len(fake.Requests())
	req, err := http.NewRequest("GET", base+"/v1/models", nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := fresh.Do(req)
	if err == nil {
		res.Body.Close()
	}
	if n := len(fake.Requests()) - before; n != 0 {
		t.Errorf("a new request during the shutdown reached the provider (%d requests), want a refused connection", n)
	}
}
