package observe_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
)

// ExampleMount keeps a gateway's request logs in an in-memory store
// (observe.Sink among its LogSinks) and serves them, with exports,
// analytics, feedback and the audit log, through observe.Mount.
func ExampleMount() {
	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "key-admin", Digest: gateway.HashAPIKey("gw-example"), WorkspaceID: "ws-1", Role: gateway.RoleAdmin})

	g := gateway.New(gateway.Options{
		Keys: store, VirtualKeys: store, Configs: store, Policies: store,
		LogSinks: []gateway.LogSink{observe.Sink(store)},
	})
	routes := observe.Mount(g, observe.Options{
		Logs: store, Feedback: store, Exports: store,
		Audit: &observe.Auditor{Store: store},
	})
	defer g.Close()
	defer routes.Close()

	srv := httptest.NewServer(g)
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/v1/logs", nil)
	req.Header.Set(gateway.HeaderAPIKey, "gw-example")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Println(res.StatusCode, string(body))
	// Output:
	// 200 {"object":"list","data":[],"has_more":false}
}
