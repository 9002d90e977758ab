package metrics

import (
	"context"
	"sort"
	"time"

	"github.com/modelgateway/gateway"
)

// GathererFunc is a function that is a Gatherer.
type GathererFunc func(ctx context.Context) ([]Family, error)

// Gather implements Gatherer: it calls f.
func (f GathererFunc) Gather(ctx context.Context) ([]Family, error) { return f(ctx) }

// DroppedLogs returns a Gatherer of the counter
// <namespace>_request_logs_dropped_total: the request logs g dropped
// because its log sinks could not keep up (gateway.Gateway.DroppedLogs),
// read at each scrape. Make it once g exists, which is after the
// Collector, since g is built with the Collector as its LogSink. It
// panics if g is nil.
func (c *Collector) DroppedLogs(g *gateway.Gateway) Gatherer {
	if g == nil {
		panic("metrics: DroppedLogs of a nil *gateway.Gateway")
	}
	return GathererFunc(func(context.Context) ([]Family, error) {
		return []Family{{Name: c.name("request_logs_dropped_total"), Type: Counter,
			Help:    "Request logs the gateway dropped because its log queue was full.",
			Metrics: []Metric{{Value: float64(g.DroppedLogs())}}}}, nil
	})
}

// AuthFailures returns a Gatherer of the counter
// <namespace>_unauthenticated_requests_total{code}: the requests g refused
// because they failed authentication (gateway.Gateway.AuthFailures), read
// at each scrape. code is missing_api_key or invalid_api_key (the 401 the
// caller got), or key_store_error (the key store failed: 500). Such
// requests are no request logs, so the Collector's other series never see
// them: this counter is how they are seen. Make it once g exists, as
// DroppedLogs. It panics if g is nil.
func (c *Collector) AuthFailures(g *gateway.Gateway) Gatherer {
	if g == nil {
		panic("metrics: AuthFailures of a nil *gateway.Gateway")
	}
	return GathererFunc(func(context.Context) ([]Family, error) {
		f := g.AuthFailures()
		return []Family{{Name: c.name("unauthenticated_requests_total"), Type: Counter, LabelNames: []string{"code"},
			Help: "Requests the gateway refused because they failed authentication, by the error code answered; not request logs.",
			Metrics: []Metric{
				{LabelValues: []string{"invalid_api_key"}, Value: float64(f.Invalid)},
				{LabelValues: []string{"key_store_error"}, Value: float64(f.Error)},
				{LabelValues: []string{"missing_api_key"}, Value: float64(f.Missing)},
			}}}, nil
	})
}

// maxBreakerSeries caps the targets Breakers exports, so that a scrape
// stays small whatever the number of targets.
const maxBreakerSeries = 1000

// breakerTimeout bounds the reading of breaker states at a scrape.
const breakerTimeout = 5 * time.Second

// Breakers returns a Gatherer of g's circuit breakers
// (gateway.Gateway.BreakerStates), read at each scrape: the gauges
// <namespace>_breaker_open{target} (1 while open or half open, else 0)
// and <namespace>_breaker_consecutive_failures{target}, target being the
// breaker key (a virtual key, or provider, host and credential digest;
// never a credential). At most 1,000 targets are exported, open ones
// first. Reading the states takes at most 5 seconds; when it fails,
// Gather returns the two families without metrics and the error. Make it
// once g exists, as DroppedLogs. It panics if g is nil.
func (c *Collector) Breakers(g *gateway.Gateway) Gatherer {
	if g == nil {
		panic("metrics: Breakers of a nil *gateway.Gateway")
	}
	return GathererFunc(func(ctx context.Context) ([]Family, error) {
		open := Family{Name: c.name("breaker_open"), Type: Gauge, LabelNames: []string{"target"},
			Help: "1 while the target's circuit breaker is open or half open, 0 while it is closed."}
		failures := Family{Name: c.name("breaker_consecutive_failures"), Type: Gauge, LabelNames: []string{"target"},
			Help: "Consecutive failures the target's circuit breaker counts."}
		ctx, cancel := context.WithTimeout(ctx, breakerTimeout)
		defer cancel()
		states, err := g.BreakerStates(ctx)
		if err != nil {
			return []Family{open, failures}, err
		}
		if len(states) > maxBreakerSeries {
			sort.SliceStable(states, func(i, j int) bool { return !states[i].OpenUntil.IsZero() && states[j].OpenUntil.IsZero() })
			states = states[:maxBreakerSeries]
		}
		for _, s := range states {
			v := 0.0
			if !s.OpenUntil.IsZero() {
				v = 1
			}
			target := []string{s.Key}
			open.Metrics = append(open.Metrics, Metric{LabelValues: target, Value: v})
			failures.Metrics = append(failures.Metrics, Metric{LabelValues: target, Value: float64(s.Failures)})
		}
		sortMetrics(open.Metrics)
		sortMetrics(failures.Metrics)
		return []Family{open, failures}, nil
	})
}
