package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/budget"
	"github.com/modelgateway/gateway/gatewaytest"
	"github.com/modelgateway/gateway/guardrail"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
)

// Example_product mounts the whole product on one in-memory store: the
// data plane, then each product beside it in a line or two — budgets
// (an admission of the data plane), guardrails (its hooks), stored logs
// (a log sink), and the control routes of admin, budget, guardrail and
// observe, every write audited. An admin then makes a virtual key through
// the control plane, calls a provider through it, and finds the call in
// the stored logs.
func Example_product() {
	provider := gatewaytest.NewServer() // a fake OpenAI-compatible provider
	defer provider.Close()

	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "key-admin", Digest: gateway.HashAPIKey("gw-admin"), WorkspaceID: "ws-1", Role: gateway.RoleAdmin})
	audit := &observe.Auditor{Store: store}

	budgets := budget.New(budget.Options{Store: store, Workspaces: store})
	hooks := &guardrail.Hooks{Store: store, Feedback: store}
	g := gateway.New(gateway.Options{
		Keys: store, VirtualKeys: store, Configs: store, Policies: store,
		Admissions:      []gateway.Admission{budgets},
		Hooks:           hooks,
		LogSinks:        []gateway.LogSink{observe.Sink(store)},
		CustomHostAllow: []string{"127.0.0.1"}, // the fake provider is on loopback
	})
	defer g.Close()
	admin.Mount(g, admin.Options{Keys: store, VirtualKeys: store, Configs: store, Workspaces: store, Policies: store, Audit: audit})
	budgets.Mount(g, audit)
	hooks.Auditor = audit
	hooks.Mount(g)
	routes := observe.Mount(g, observe.Options{Logs: store, Feedback: store, Exports: store, Audit: audit})
	defer routes.Close()

	srv := httptest.NewServer(g)
	defer srv.Close()
	call := func(method, path, body string, headers ...string) string {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("x-gateway-api-key", "gw-admin")
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.Status
	}

	fmt.Println("virtual key:", call("POST", "/v1/virtual-keys",
		`{"name":"fake","slug":"fake","provider":"openai","key":"sk-fake","base_url":"`+provider.URL+`"}`))
	fmt.Println("completion:", call("POST", "/v1/chat/completions",
		`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`, "x-gateway-virtual-key", "fake"))
	g.Close() // drains the log queues, so the record is stored
	recs, _ := store.Logs(context.Background(), &observe.Query{WorkspaceID: "ws-1"})
	fmt.Println("stored logs:", len(recs), recs[0].Status, recs[0].Provider)
	audited, _, _ := store.AuditRecords(context.Background(), observe.AuditQuery{})
	fmt.Println("audited writes:", len(audited), audited[0].Action)
	// Output:
	// virtual key: 200 OK
	// completion: 200 OK
	// stored logs: 1 200 openai
	// audited writes: 1 virtual_keys.create
}
