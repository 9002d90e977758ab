package prometheus_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/budget"
	"github.com/modelgateway/gateway/memstore"
	gwprom "github.com/modelgateway/gateway/prometheus"
)

// TestCollectorCountsBudgetExhausted: a request a spent budget refuses
// with the gateway's own 412 budget_exhausted is counted once.
func TestCollectorCountsBudgetExhausted(t *testing.T) {
	up := newUpstream(t)
	store := memstore.New()
	const budgetKey = "gw-budget-key"
	store.AddAPIKey(gateway.APIKey{ID: "key-budget", Digest: gateway.HashAPIKey(budgetKey), WorkspaceID: "ws-1",
		UsageLimits: []byte(`{"type":"tokens","credit_limit":15}`)}) // 10 tokens per answer: the 3rd request is refused
	store.AddVirtualKey(gateway.VirtualKey{Slug: "openai", Provider: "openai", APIKey: "sk-test", BaseURL: up.URL + "/v1", WorkspaceID: "ws-1"})
	e := &env{buf: &gateway.LogBuffer{}, reg: gwprom.NewRegistry()}
	col := gwprom.NewCollector(gwprom.Options{Next: e.buf})
	e.reg.MustRegister(col)
	e.gw = gateway.New(gateway.Options{Keys: store, VirtualKeys: store, LogSink: col,
		Admissions: []gateway.Admission{budget.New(budget.Options{})}}) // enforces the key's usage_limits
	e.srv = httptest.NewServer(e.gw)
	t.Cleanup(e.srv.Close)
	for _, want := range []int{200, 200, 412} {
		if got := e.chat(t, budgetKey, "gpt-4o"); got != want {
			t.Fatalf("status %d, want %d", got, want)
		}
	}
	e.gw.Close() // hands every record to the collector
	want := `
# HELP gateway_budget_exhausted_requests_total Requests the gateway refused with 412 because a usage-limits policy's budget was spent.
# TYPE gateway_budget_exhausted_requests_total counter
gateway_budget_exhausted_requests_total 1
`
	if err := testutil.CollectAndCompare(col, strings.NewReader(want), "gateway_budget_exhausted_requests_total"); err != nil {
		t.Error(err)
	}
}
