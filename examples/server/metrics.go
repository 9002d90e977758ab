package main

import (
	"fmt"
	"net/http"
	"os"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/metrics"
)

// gatewayMetrics is what /metrics of the admin listener serves: the
// request logs counted by a metrics Collector (which passes each on to
// the -request-log sink), the gateway's dropped logs, requests that
// failed authentication and circuit breakers, and the Go runtime's and
// the process's series.
type gatewayMetrics struct {
	collector *metrics.Collector
	gatherers []metrics.Gatherer // collector, Runtime, and the watches of the gateway
}

// newGatewayMetrics returns the metrics of a gateway whose request logs
// then go to next (nil: nowhere else).
func newGatewayMetrics(next gateway.LogSink) *gatewayMetrics {
	col := metrics.New(metrics.Options{Next: next})
	return &gatewayMetrics{collector: col, gatherers: []metrics.Gatherer{col, metrics.Runtime()}}
}

// watch adds g's own counters (dropped request logs, requests refused
// for failing authentication) and the state of its circuit breakers. It
// is called before handler.
func (m *gatewayMetrics) watch(g *gateway.Gateway) {
	m.gatherers = append(m.gatherers, m.collector.DroppedLogs(g), m.collector.AuthFailures(g), m.collector.Breakers(g))
}

// handler serves the metrics in Prometheus's text format; nil m serves 404.
func (m *gatewayMetrics) handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return metrics.Handler(m.gatherers...)
}

// readPrices reads the -prices file.
func readPrices(path string) (gateway.PriceTable, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gateway: -prices: %w", err)
	}
	defer f.Close()
	t, err := gateway.ParsePrices(f)
	if err != nil {
		return nil, fmt.Errorf("gateway: -prices %s: %w", path, err)
	}
	return t, nil
}
