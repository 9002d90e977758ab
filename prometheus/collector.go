package prometheus

import (
	"context"
	"net/http"
	"sync"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/metrics"
)

// Options configures a Collector: they are the options of the
// metrics.Collector that counts for it. The zero value is ready to use.
type Options = metrics.Options

// Collector is a gateway.LogSink that turns request logs into Prometheus
// metrics, and the prometheus.Collector that exports them. Make one with
// NewCollector. Log, Describe and Collect are safe for concurrent use, so
// one Collector may serve several gateways. It counts with a
// metrics.Collector (package github.com/modelgateway/gateway/metrics),
// whose series it exports as they are at each Collect.
type Collector struct {
	m   *metrics.Collector
	exp *gathered // m's series
}

var (
	_ gateway.BatchLogSink = (*Collector)(nil)
	_ prom.Collector       = (*Collector)(nil)
)

// NewCollector returns a Collector configured by opts. It registers
// nothing: pass it to a prometheus.Registerer's Register.
func NewCollector(opts Options) *Collector {
	m := metrics.New(opts)
	return &Collector{m: m, exp: newGathered(m)}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prom.Desc) { c.exp.Describe(ch) }

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prom.Metric) { c.exp.Collect(ch) }

// Log implements gateway.LogSink: it counts rec, then passes it to
// Options.Next. It does not keep rec.
func (c *Collector) Log(rec *gateway.RequestLog) { c.m.Log(rec) }

// LogBatch implements gateway.BatchLogSink: it counts each record, then
// passes the batch to Options.Next (a record at a time when Next is not a
// BatchLogSink) and returns Next's error. A gateway's log queue hands a
// batch to a BatchLogSink in one call, so that a Next such as
// gateway.JSONLineSink writes it at once.
func (c *Collector) LogBatch(recs []*gateway.RequestLog) error { return c.m.LogBatch(recs) }

// DroppedLogs returns a collector of the counter
// <namespace>_request_logs_dropped_total: the request logs g dropped
// because its log sinks could not keep up (gateway.Gateway.DroppedLogs),
// read at each scrape. Register it once g exists, which is after the
// Collector, since g is built with the Collector as its LogSink. It
// panics if g is nil.
func (c *Collector) DroppedLogs(g *gateway.Gateway) prom.Collector {
	return newGathered(c.m.DroppedLogs(g))
}

// AuthFailures returns a collector of the counter
// <namespace>_unauthenticated_requests_total{code}: the requests g refused
// because they failed authentication (gateway.Gateway.AuthFailures), read
// at each scrape. code is missing_api_key or invalid_api_key (the 401 the
// caller got), or key_store_error (the key store failed: 500). Such
// requests are no request logs, so the Collector's other series never see
// them: this counter is how they are seen. Register it once g exists, as
// DroppedLogs. It panics if g is nil.
func (c *Collector) AuthFailures(g *gateway.Gateway) prom.Collector {
	return newGathered(c.m.AuthFailures(g))
}

// Breakers returns a collector of g's circuit breakers
// (gateway.Gateway.BreakerStates), read at each scrape: the gauges
// <namespace>_breaker_open{target} (1 while open or half open, else 0)
// and <namespace>_breaker_consecutive_failures{target}, target being the
// breaker key (a virtual key, or provider, host and credential digest;
// never a credential). At most 1,000 targets are exported, open ones
// first. A scrape whose breakers cannot be read exports none and counts
// the error in promhttp's own metrics. Registering it reads the states
// once, to describe the series. Register it once g exists, as
// DroppedLogs. It panics if g is nil.
func (c *Collector) Breakers(g *gateway.Gateway) prom.Collector {
	return newGathered(c.m.Breakers(g))
}

// gathered is a prometheus.Collector of what a metrics.Gatherer gathers,
// converted into constant metrics at each Collect.
type gathered struct {
	g     metrics.Gatherer
	descs func() descs // made on first use, from the families of a first Gather
}

// descs are the descriptions of a Gatherer's families, in their order and
// by name.
type descs struct {
	list   []*prom.Desc
	byName map[string]*prom.Desc
}

// newGathered returns the collector of g.
func newGathered(g metrics.Gatherer) *gathered {
	return &gathered{g: g, descs: sync.OnceValue(func() descs {
		fams, _ := g.Gather(context.Background()) // a failed Gather still lists its families
		d := descs{byName: make(map[string]*prom.Desc, len(fams))}
		for _, f := range fams {
			desc := prom.NewDesc(f.Name, f.Help, f.LabelNames, nil)
			d.list = append(d.list, desc)
			d.byName[f.Name] = desc
		}
		return d
	})}
}

// Describe implements prometheus.Collector.
func (a *gathered) Describe(ch chan<- *prom.Desc) {
	for _, d := range a.descs().list {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A failed Gather exports an
// invalid metric of its error, which the registry reports.
func (a *gathered) Collect(ch chan<- prom.Metric) {
	fams, err := a.g.Gather(context.Background())
	d := a.descs()
	if err != nil {
		desc := prom.NewInvalidDesc(err)
		if len(d.list) > 0 {
			desc = d.list[0]
		}
		ch <- prom.NewInvalidMetric(desc, err)
		return
	}
	for _, f := range fams {
		desc := d.byName[f.Name]
		if desc == nil {
			desc = prom.NewDesc(f.Name, f.Help, f.LabelNames, nil)
		}
		for _, m := range f.Metrics {
			ch <- constMetric(desc, f.Type, m)
		}
	}
}

// constMetric returns m, of a family of type t described by desc, as a
// constant metric; an invalid one if its labels do not fit desc.
func constMetric(desc *prom.Desc, t metrics.Type, m metrics.Metric) prom.Metric {
	var (
		pm  prom.Metric
		err error
	)
	switch t {
	case metrics.Histogram:
		buckets := make(map[float64]uint64, len(m.Buckets))
		for _, b := range m.Buckets {
			buckets[b.UpperBound] = b.Count
		}
		pm, err = prom.NewConstHistogram(desc, m.Count, m.Sum, buckets, m.LabelValues...)
	case metrics.Summary:
		quantiles := make(map[float64]float64, len(m.Quantiles))
		for _, q := range m.Quantiles {
			quantiles[q.Quantile] = q.Value
		}
		pm, err = prom.NewConstSummary(desc, m.Count, m.Sum, quantiles, m.LabelValues...)
	case metrics.Gauge:
		pm, err = prom.NewConstMetric(desc, prom.GaugeValue, m.Value, m.LabelValues...)
	default:
		pm, err = prom.NewConstMetric(desc, prom.CounterValue, m.Value, m.LabelValues...)
	}
	if err != nil {
		return prom.NewInvalidMetric(desc, err)
	}
	return pm
}

// NewRegistry returns a prometheus.Registry holding the Go runtime
// collector (go_*) and the process collector (process_*), to which a
// Collector and its DroppedLogs are then added.
func NewRegistry() *prom.Registry {
	reg := prom.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Handler returns the http.Handler of a /metrics endpoint serving what g
// gathers (a *prometheus.Registry, such as NewRegistry's), in the
// Prometheus text format or whichever format the scraper negotiates.
func Handler(g prom.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{})
}
