package prometheus_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/modelgateway/gateway"
	gwprom "github.com/modelgateway/gateway/prometheus"
)

// batchRecorder is a BatchLogSink that keeps the batches it gets and
// fails them with err.
type batchRecorder struct {
	batches [][]*gateway.RequestLog
	singles int
	err     error
}

func (b *batchRecorder) Log(*gateway.RequestLog) { b.singles++ }

func (b *batchRecorder) LogBatch(recs []*gateway.RequestLog) error {
	b.batches = append(b.batches, recs)
	return b.err
}

// TestCollectorPassesBatches: a batch is counted record by record and
// reaches a Next that takes batches in one call, with its error; a Next
// that does not gets the records one by one.
func TestCollectorPassesBatches(t *testing.T) {
	recs := []*gateway.RequestLog{{Provider: "openai", Model: "m", Status: 200}, {Provider: "openai", Model: "m", Status: 500},
		{Provider: "openai", Model: "m", Status: 200}}
	next := &batchRecorder{err: errors.New("stdout closed")}
	col := gwprom.NewCollector(gwprom.Options{Next: next})
	if err := col.LogBatch(recs); !errors.Is(err, next.err) {
		t.Errorf("LogBatch = %v, want Next's error", err)
	}
	if len(next.batches) != 1 || len(next.batches[0]) != 3 || next.singles != 0 {
		t.Errorf("Next got %d batches and %d single records, want the one batch of 3", len(next.batches), next.singles)
	}
	const want = `
# HELP gateway_requests_total Requests served, by provider, model, status class (1xx to 5xx, 499: the caller went away) and cache status.
# TYPE gateway_requests_total counter
gateway_requests_total{cache_status="",model="m",provider="openai",status_class="2xx"} 2
gateway_requests_total{cache_status="",model="m",provider="openai",status_class="5xx"} 1
`
	if err := testutil.CollectAndCompare(col, strings.NewReader(want), "gateway_requests_total"); err != nil {
		t.Error(err)
	}

	var buf gateway.LogBuffer
	col = gwprom.NewCollector(gwprom.Options{Next: &buf})
	if err := col.LogBatch(recs); err != nil {
		t.Fatal(err)
	}
	if got := buf.Query(gateway.LogFilter{}); len(got) != 3 {
		t.Errorf("a plain Next got %d records, want 3", len(got))
	}
	if err := gwprom.NewCollector(gwprom.Options{}).LogBatch(recs); err != nil {
		t.Errorf("LogBatch without Next = %v", err)
	}
}
