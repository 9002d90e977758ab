package prometheus

import (
	"context"
	"net/http"
	"sort"
	"sync"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/modelgateway/gateway"
)

// Options configures a Collector. The zero value is ready to use.
type Options struct {
	// Namespace is the prefix of every series name, joined with "_".
	// Empty means "gateway" (gateway_requests_total).
	Namespace string

	// Next receives each record after the Collector counted it, on the
	// goroutine that called Log; the record is then Next's to keep. Nil
	// means the Collector is the last sink.
	Next gateway.LogSink

	// MaxModels caps the distinct values of the model label; requests
	// beyond it are counted under model="other" (see the package
	// documentation). Zero or less means 200.
	MaxModels int

	// DurationBuckets are the upper bounds, in seconds, of the buckets of
	// the request duration histogram. Nil means 5ms to 5 minutes, for
	// answers from a cache hit to a long generation: .005, .01, .025,
	// .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300.
	DurationBuckets []float64

	// TTFBBuckets are the upper bounds, in seconds, of the buckets of the
	// upstream time-to-first-byte histogram. Nil means .005, .01, .025,
	// .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60.
	TTFBBuckets []float64
}

// codeBudgetExhausted is the error code of a request refused by a
// usage-limits policy (the observability routes), answered with 412.
const codeBudgetExhausted = "budget_exhausted"

// otherModel is the model label of requests beyond Options.MaxModels.
const otherModel = "other"

// Collector is a gateway.LogSink that turns request logs into Prometheus
// metrics, and the prometheus.Collector that exports them. Make one with
// NewCollector. Log, Describe and Collect are safe for concurrent use, so
// one Collector may serve several gateways.
type Collector struct {
	next      gateway.LogSink
	ns        string
	maxModels int

	requests    *prom.CounterVec
	duration    *prom.HistogramVec
	ttfb        *prom.HistogramVec
	prompt      *prom.CounterVec
	completion  *prom.CounterVec
	cost        *prom.CounterVec
	rateLimited prom.Counter
	budget      prom.Counter
	guardrails  *prom.CounterVec
	skipped     prom.Counter
	tripped     prom.Counter
	all         []prom.Collector

	mu     sync.Mutex // guards models, series and the fields of each series
	models map[string]struct{}
	series map[seriesKey]*series
}

var (
	_ gateway.LogSink = (*Collector)(nil)
	_ prom.Collector  = (*Collector)(nil)
)

// seriesKey is the label values of one gateway_requests_total series, from
// which those of every other labelled series follow.
type seriesKey struct {
	provider, model, class, cache string
}

// series is what a record of one seriesKey updates, each resolved on first
// use, so that Log then costs one map lookup and no allocation.
type series struct {
	requests   prom.Counter
	duration   prom.Observer
	ttfb       prom.Observer
	prompt     prom.Counter
	completion prom.Counter
	cost       prom.Counter
}

// NewCollector returns a Collector configured by opts. It registers
// nothing: pass it to a prometheus.Registerer's Register.
func NewCollector(opts Options) *Collector {
	ns := opts.Namespace
	if ns == "" {
		ns = "gateway"
	}
	maxModels := opts.MaxModels
	if maxModels <= 0 {
		maxModels = 200
	}
	durBuckets := opts.DurationBuckets
	if durBuckets == nil {
		durBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	}
	ttfbBuckets := opts.TTFBBuckets
	if ttfbBuckets == nil {
		ttfbBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	}
	c := &Collector{
		next:      opts.Next,
		ns:        ns,
		maxModels: maxModels,
		models:    make(map[string]struct{}),
		series:    make(map[seriesKey]*series),

		requests: prom.NewCounterVec(prom.CounterOpts{Namespace: ns, Name: "requests_total",
			Help: "Requests served, by provider, model, status class (1xx to 5xx, 499: the caller went away) and cache status."},
			[]string{"provider", "model", "status_class", "cache_status"}),
		duration: prom.NewHistogramVec(prom.HistogramOpts{Namespace: ns, Name: "request_duration_seconds",
			Help: "Time from a request's arrival to the end of its answer, by provider and status class.", Buckets: durBuckets},
			[]string{"provider", "status_class"}),
		ttfb: prom.NewHistogramVec(prom.HistogramOpts{Namespace: ns, Name: "upstream_time_to_first_byte_seconds",
			Help: "Time from a request's arrival to the first byte of the provider's answer body, by provider.", Buckets: ttfbBuckets},
			[]string{"provider"}),
		prompt: prom.NewCounterVec(prom.CounterOpts{Namespace: ns, Name: "prompt_tokens_total",
			Help: "Prompt (input) tokens the providers reported, by provider and model."},
			[]string{"provider", "model"}),
		completion: prom.NewCounterVec(prom.CounterOpts{Namespace: ns, Name: "completion_tokens_total",
			Help: "Completion (output) tokens the providers reported, by provider and model."},
			[]string{"provider", "model"}),
		cost: prom.NewCounterVec(prom.CounterOpts{Namespace: ns, Name: "cost_usd_total",
			Help: "Price of the requests in US dollars, from the gateway's price table, by provider and model."},
			[]string{"provider", "model"}),
		rateLimited: prom.NewCounter(prom.CounterOpts{Namespace: ns, Name: "rate_limited_requests_total",
			Help: "Requests the gateway refused with 429 under a rate-limits policy."}),
		budget: prom.NewCounter(prom.CounterOpts{Namespace: ns, Name: "budget_exhausted_requests_total",
			Help: "Requests the gateway refused with 412 because a usage-limits policy's budget was spent."}),
		guardrails: prom.NewCounterVec(prom.CounterOpts{Namespace: ns, Name: "guardrail_verdicts_total",
			Help: "Requests whose config attached guardrails, by their outcome: passed, failed (answered 246) or denied (refused 446)."},
			[]string{"verdict"}),
	}
	c.skipped = prom.NewCounter(prom.CounterOpts{Namespace: ns, Name: "breaker_skipped_targets_total",
		Help: "Targets requests passed over because their circuit breakers were open (gateway.RequestLog.SkippedTargets)."})
	c.tripped = prom.NewCounter(prom.CounterOpts{Namespace: ns, Name: "breaker_trips_total",
		Help: "Circuit breakers opened by requests' failed attempts (gateway.RequestLog.TrippedTargets)."})
	c.all = []prom.Collector{c.requests, c.duration, c.ttfb, c.prompt, c.completion, c.cost, c.rateLimited, c.budget, c.skipped, c.tripped, c.guardrails}
	return c
}

// Log implements gateway.LogSink: it counts rec, then passes it to
// Options.Next. It does not keep rec.
func (c *Collector) Log(rec *gateway.RequestLog) {
	c.count(rec)
	if c.next != nil {
		c.next.Log(rec)
	}
}

// LogBatch implements gateway.BatchLogSink: it counts each record, then
// passes the batch to Options.Next (a record at a time when Next is not a
// BatchLogSink) and returns Next's error. A gateway's log queue hands a
// batch to a BatchLogSink in one call, so that a Next such as
// gateway.JSONLineSink writes it at once.
func (c *Collector) LogBatch(recs []*gateway.RequestLog) error {
	for _, rec := range recs {
		c.count(rec)
	}
	switch next := c.next.(type) {
	case nil:
	case gateway.BatchLogSink:
		return next.LogBatch(recs)
	default:
		for _, rec := range recs {
			next.Log(rec)
		}
	}
	return nil
}

// count updates the series of rec. A labelled series is made on its first
// value, so that none shows a zero it never counted (token counters of a
// refused request, say).
func (c *Collector) count(rec *gateway.RequestLog) {
	class := statusClass(rec.Status)
	k := seriesKey{provider: rec.Provider, class: class, cache: cacheLabel(rec.CacheStatus)}
	c.mu.Lock()
	defer c.mu.Unlock()
	k.model = c.modelLabel(rec.Model, class == "2xx")
	s := c.series[k]
	if s == nil {
		s = &series{
			requests: c.requests.WithLabelValues(k.provider, k.model, k.class, k.cache),
			duration: c.duration.WithLabelValues(k.provider, k.class),
		}
		c.series[k] = s
	}
	s.requests.Inc()
	s.duration.Observe(rec.Latency.Seconds())
	if rec.TTFB > 0 {
		if s.ttfb == nil {
			s.ttfb = c.ttfb.WithLabelValues(k.provider)
		}
		s.ttfb.Observe(rec.TTFB.Seconds())
	}
	if rec.PromptTokens > 0 {
		if s.prompt == nil {
			s.prompt = c.prompt.WithLabelValues(k.provider, k.model)
		}
		s.prompt.Add(float64(rec.PromptTokens))
	}
	if rec.CompletionTokens > 0 {
		if s.completion == nil {
			s.completion = c.completion.WithLabelValues(k.provider, k.model)
		}
		s.completion.Add(float64(rec.CompletionTokens))
	}
	if rec.Cost > 0 {
		if s.cost == nil {
			s.cost = c.cost.WithLabelValues(k.provider, k.model)
		}
		s.cost.Add(rec.Cost)
	}
	if n := len(rec.SkippedTargets); n > 0 {
		c.skipped.Add(float64(n))
	}
	if n := len(rec.TrippedTargets); n > 0 {
		c.tripped.Add(float64(n))
	}
	switch {
	case rec.Status == http.StatusTooManyRequests && rec.ErrorCode == gateway.CodeRateLimitExceeded:
		c.rateLimited.Inc()
	case rec.Status == http.StatusPreconditionFailed && rec.ErrorCode == codeBudgetExhausted:
		c.budget.Inc()
	}
	if v := rec.Guardrails; v == "passed" || v == "failed" || v == "denied" {
		c.guardrails.WithLabelValues(v).Inc()
	}
}

// modelLabel returns the model label of a request for model: the name
// itself once a 2xx answer admitted it within the cap, else "other". The
// caller holds c.mu.
func (c *Collector) modelLabel(model string, ok bool) string {
	if model == "" {
		return ""
	}
	if _, seen := c.models[model]; seen {
		return model
	}
	if !ok || len(c.models) >= c.maxModels {
		return otherModel
	}
	c.models[model] = struct{}{}
	return model
}

// statusClasses are the status_class values of 1xx to 5xx.
var statusClasses = [...]string{1: "1xx", 2: "2xx", 3: "3xx", 4: "4xx", 5: "5xx"}

// statusClass returns the status_class label of status: 499 (the caller
// went away, which the gateway records but never sends) is a class of its
// own.
func statusClass(status int) string {
	if status == 499 {
		return "499"
	}
	if status >= 100 && status < 600 {
		return statusClasses[status/100]
	}
	return "other"
}

// cacheLabel returns the cache_status label of s: one of the gateway's
// cache statuses, empty when the request never reached the cache stage,
// else "other".
func cacheLabel(s gateway.CacheStatus) string {
	switch s {
	case "", gateway.CacheHit, gateway.CacheMiss, gateway.CacheRefresh, gateway.CacheDisabled:
		return string(s)
	}
	return "other"
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prom.Desc) {
	for _, m := range c.all {
		m.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prom.Metric) {
	for _, m := range c.all {
		m.Collect(ch)
	}
}

// DroppedLogs returns a collector of the counter
// <namespace>_request_logs_dropped_total: the request logs g dropped
// because its log sinks could not keep up (gateway.Gateway.DroppedLogs),
// read at each scrape. Register it once g exists, which is after the
// Collector, since g is built with the Collector as its LogSink. It
// panics if g is nil.
func (c *Collector) DroppedLogs(g *gateway.Gateway) prom.Collector {
	if g == nil {
		panic("prometheus: DroppedLogs of a nil *gateway.Gateway")
	}
	return prom.NewCounterFunc(prom.CounterOpts{Namespace: c.ns, Name: "request_logs_dropped_total",
		Help: "Request logs the gateway dropped because its log queue was full."},
		func() float64 { return float64(g.DroppedLogs()) })
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
	if g == nil {
		panic("prometheus: AuthFailures of a nil *gateway.Gateway")
	}
	return &authFailures{g: g, desc: prom.NewDesc(prom.BuildFQName(c.ns, "", "unauthenticated_requests_total"),
		"Requests the gateway refused because they failed authentication, by the error code answered; not request logs.",
		[]string{"code"}, nil)}
}

// authFailures exports a gateway's AuthFailures.
type authFailures struct {
	g    *gateway.Gateway
	desc *prom.Desc
}

// Describe implements prometheus.Collector.
func (a *authFailures) Describe(ch chan<- *prom.Desc) { ch <- a.desc }

// Collect implements prometheus.Collector.
func (a *authFailures) Collect(ch chan<- prom.Metric) {
	f := a.g.AuthFailures()
	ch <- prom.MustNewConstMetric(a.desc, prom.CounterValue, float64(f.Missing), "missing_api_key")
	ch <- prom.MustNewConstMetric(a.desc, prom.CounterValue, float64(f.Invalid), "invalid_api_key")
	ch <- prom.MustNewConstMetric(a.desc, prom.CounterValue, float64(f.Error), "key_store_error")
}

// maxBreakerSeries caps the targets Breakers exports, so that a scrape
// stays small whatever the number of targets.
const maxBreakerSeries = 1000

// Breakers returns a collector of g's circuit breakers
// (gateway.Gateway.BreakerStates), read at each scrape: the gauges
// <namespace>_breaker_open{target} (1 while open or half open, else 0)
// and <namespace>_breaker_consecutive_failures{target}, target being the
// breaker key (a virtual key, or provider, host and credential digest;
// never a credential). At most 1,000 targets are exported, open ones
// first. A scrape whose breakers cannot be read exports none and counts
// the error in promhttp's own metrics. Register it once g exists, as
// DroppedLogs. It panics if g is nil.
func (c *Collector) Breakers(g *gateway.Gateway) prom.Collector {
	if g == nil {
		panic("prometheus: Breakers of a nil *gateway.Gateway")
	}
	return &breakers{g: g,
		open: prom.NewDesc(prom.BuildFQName(c.ns, "", "breaker_open"),
			"1 while the target's circuit breaker is open or half open, 0 while it is closed.", []string{"target"}, nil),
		failures: prom.NewDesc(prom.BuildFQName(c.ns, "", "breaker_consecutive_failures"),
			"Consecutive failures the target's circuit breaker counts.", []string{"target"}, nil)}
}

// breakers exports a gateway's breaker states.
type breakers struct {
	g              *gateway.Gateway
	open, failures *prom.Desc
}

// Describe implements prometheus.Collector.
func (b *breakers) Describe(ch chan<- *prom.Desc) { ch <- b.open; ch <- b.failures }

// Collect implements prometheus.Collector.
func (b *breakers) Collect(ch chan<- prom.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	states, err := b.g.BreakerStates(ctx)
	if err != nil {
		ch <- prom.NewInvalidMetric(b.open, err)
		return
	}
	if len(states) > maxBreakerSeries {
		sort.SliceStable(states, func(i, j int) bool { return !states[i].OpenUntil.IsZero() && states[j].OpenUntil.IsZero() })
		states = states[:maxBreakerSeries]
	}
	for _, s := range states {
		open := 0.0
		if !s.OpenUntil.IsZero() {
			open = 1
		}
		ch <- prom.MustNewConstMetric(b.open, prom.GaugeValue, open, s.Key)
		ch <- prom.MustNewConstMetric(b.failures, prom.GaugeValue, float64(s.Failures), s.Key)
	}
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
