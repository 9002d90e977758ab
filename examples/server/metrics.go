package main

import (
	"fmt"
	"net/http"
	"os"

	gateway "github.com/modelgateway/gateway"
	gwprom "github.com/modelgateway/gateway/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

// gatewayMetrics is what /metrics of the admin listener serves: the
// request logs counted by a prometheus Collector (which passes each on to
// the -request-log sink), the gateway's dropped logs and requests that
// failed authentication, and the Go runtime and process collectors.
type gatewayMetrics struct {
	reg       *prometheus.Registry
	collector *gwprom.Collector
}

// newGatewayMetrics returns the metrics of a gateway whose request logs
// then go to next (nil: nowhere else).
func newGatewayMetrics(next gateway.LogSink) *gatewayMetrics {
	m := &gatewayMetrics{reg: gwprom.NewRegistry(), collector: gwprom.NewCollector(gwprom.Options{Next: next})}
	m.reg.MustRegister(m.collector)
	return m
}

// watch adds g's own counters (dropped request logs, requests refused
// for failing authentication) and the state of its circuit breakers.
func (m *gatewayMetrics) watch(g *gateway.Gateway) {
	m.reg.MustRegister(m.collector.DroppedLogs(g), m.collector.AuthFailures(g), m.collector.Breakers(g))
}

// handler serves the metrics in Prometheus's text format; nil m serves 404.
func (m *gatewayMetrics) handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return gwprom.Handler(m.reg)
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
