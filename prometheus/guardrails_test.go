package prometheus_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/modelgateway/gateway"
	gwprom "github.com/modelgateway/gateway/prometheus"
)

// TestCollectorCountsGuardrailVerdicts: each request whose guardrails
// ran is counted under its verdict; others are not counted.
func TestCollectorCountsGuardrailVerdicts(t *testing.T) {
	col := gwprom.NewCollector(gwprom.Options{})
	for _, v := range []string{"passed", "denied", "denied", "failed", ""} {
		col.Log(&gateway.RequestLog{Status: 200, Guardrails: v})
	}
	want := `
# HELP gateway_guardrail_verdicts_total Requests whose config attached guardrails, by their outcome: passed, failed (answered 246) or denied (refused 446).
# TYPE gateway_guardrail_verdicts_total counter
gateway_guardrail_verdicts_total{verdict="denied"} 2
gateway_guardrail_verdicts_total{verdict="failed"} 1
gateway_guardrail_verdicts_total{verdict="passed"} 1
`
	if err := testutil.CollectAndCompare(col, strings.NewReader(want), "gateway_guardrail_verdicts_total"); err != nil {
		t.Error(err)
	}
}
