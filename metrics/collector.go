package metrics

import (
	"context"
	"net/http"
	"sort"
	"sync"

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

	// DurationBuckets are the upper bounds, in seconds and ascending, of
	// the buckets of the request duration histogram. Nil means 5ms to 5
	// minutes, for answers from a cache hit to a long generation: .005,
	// .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300.
	DurationBuckets []float64

	// TTFBBuckets are the upper bounds, in seconds and ascending, of the
	// buckets of the upstream time-to-first-byte histogram. Nil means
	// .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60.
	TTFBBuckets []float64
}

// codeBudgetExhausted is the error code of a request refused by a
// usage-limits policy (the observability routes), answered with 412.
const codeBudgetExhausted = "budget_exhausted"

// otherModel is the model label of requests beyond Options.MaxModels.
const otherModel = "other"

// verdicts are the values of the verdict label of the guardrail series,
// sorted.
var verdicts = [...]string{"denied", "failed", "passed"}

// Collector is a gateway.LogSink that counts request logs into the series
// the package documentation lists, and the Gatherer that exports them.
// Make one with New. Its methods are safe for concurrent use, so one
// Collector may serve several gateways.
type Collector struct {
	next       gateway.LogSink
	ns         string
	maxModels  int
	durBounds  []float64
	ttfbBounds []float64

	mu          sync.Mutex // guards the fields below and the values they point to
	models      map[string]struct{}
	series      map[seriesKey]*series
	durations   map[durationKey]*histogram
	ttfbs       map[string]*histogram
	usages      map[usageKey]*usage
	rateLimited uint64
	budget      uint64
	skipped     uint64
	tripped     uint64
	guardrails  [len(verdicts)]uint64
}

var (
	_ gateway.BatchLogSink = (*Collector)(nil)
	_ Gatherer             = (*Collector)(nil)
)

// seriesKey is the label values of one requests_total series, from which
// those of every other labelled series follow.
type seriesKey struct {
	provider, model, class, cache string
}

// durationKey is the label values of a request_duration_seconds series.
type durationKey struct{ provider, class string }

// usageKey is the label values of a token or cost series.
type usageKey struct{ provider, model string }

// series is what a record of one seriesKey updates, each resolved on
// first use, so that Log then costs one map lookup and no allocation.
type series struct {
	requests uint64
	duration *histogram
	ttfb     *histogram
	usage    *usage
}

// usage is the token and cost counters of a provider and model. A zero
// counter is one no record added to, which the families leave out, so
// that none shows a zero it never counted (the tokens of a refused
// request, say).
type usage struct {
	prompt, completion, cost float64
}

// histogram is the observations of one histogram series: counts[i]
// counts those in the ith bucket alone (not cumulative), those above the
// last bound are only in count.
type histogram struct {
	counts []uint64
	count  uint64
	sum    float64
}

// observe counts v: in the first bucket whose upper bound is at least v,
// as Prometheus does.
func (h *histogram) observe(bounds []float64, v float64) {
	if i := sort.SearchFloat64s(bounds, v); i < len(bounds) {
		h.counts[i]++
	}
	h.count++
	h.sum += v
}

// metric returns h as a histogram Metric with labels.
func (h *histogram) metric(bounds []float64, labels ...string) Metric {
	m := Metric{LabelValues: labels, Count: h.count, Sum: h.sum, Buckets: make([]Bucket, len(bounds))}
	var n uint64
	for i, b := range bounds {
		n += h.counts[i]
		m.Buckets[i] = Bucket{UpperBound: b, Count: n}
	}
	return m
}

// New returns a Collector configured by opts.
func New(opts Options) *Collector {
	ns := opts.Namespace
	if ns == "" {
		ns = "gateway"
	}
	maxModels := opts.MaxModels
	if maxModels <= 0 {
		maxModels = 200
	}
	durBounds := opts.DurationBuckets
	if durBounds == nil {
		durBounds = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	}
	ttfbBounds := opts.TTFBBuckets
	if ttfbBounds == nil {
		ttfbBounds = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	}
	return &Collector{
		next:       opts.Next,
		ns:         ns,
		maxModels:  maxModels,
		durBounds:  durBounds,
		ttfbBounds: ttfbBounds,
		models:     make(map[string]struct{}),
		series:     make(map[seriesKey]*series),
		durations:  make(map[durationKey]*histogram),
		ttfbs:      make(map[string]*histogram),
		usages:     make(map[usageKey]*usage),
	}
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

// count updates the series of rec.
func (c *Collector) count(rec *gateway.RequestLog) {
	class := statusClass(rec.Status)
	k := seriesKey{provider: rec.Provider, class: class, cache: cacheLabel(rec.CacheStatus)}
	c.mu.Lock()
	defer c.mu.Unlock()
	k.model = c.modelLabel(rec.Model, class == "2xx")
	s := c.series[k]
	if s == nil {
		s = c.newSeries(k)
	}
	s.requests++
	s.duration.observe(c.durBounds, rec.Latency.Seconds())
	if rec.TTFB > 0 {
		if s.ttfb == nil {
			s.ttfb = c.ttfbs[k.provider]
			if s.ttfb == nil {
				s.ttfb = &histogram{counts: make([]uint64, len(c.ttfbBounds))}
				c.ttfbs[k.provider] = s.ttfb
			}
		}
		s.ttfb.observe(c.ttfbBounds, rec.TTFB.Seconds())
	}
	if rec.PromptTokens > 0 {
		s.usage.prompt += float64(rec.PromptTokens)
	}
	if rec.CompletionTokens > 0 {
		s.usage.completion += float64(rec.CompletionTokens)
	}
	if rec.Cost > 0 {
		s.usage.cost += rec.Cost
	}
	c.skipped += uint64(len(rec.SkippedTargets))
	c.tripped += uint64(len(rec.TrippedTargets))
	switch {
	case rec.Status == http.StatusTooManyRequests && rec.ErrorCode == gateway.CodeRateLimitExceeded:
		c.rateLimited++
	case rec.Status == http.StatusPreconditionFailed && rec.ErrorCode == codeBudgetExhausted:
		c.budget++
	}
	for i, v := range verdicts {
		if rec.Guardrails == v {
			c.guardrails[i]++
		}
	}
}

// newSeries makes and keeps the series of k, sharing the duration
// histogram and the usage counters of the series whose labels they share.
// The caller holds c.mu.
func (c *Collector) newSeries(k seriesKey) *series {
	dk := durationKey{k.provider, k.class}
	d := c.durations[dk]
	if d == nil {
		d = &histogram{counts: make([]uint64, len(c.durBounds))}
		c.durations[dk] = d
	}
	uk := usageKey{k.provider, k.model}
	u := c.usages[uk]
	if u == nil {
		u = &usage{}
		c.usages[uk] = u
	}
	s := &series{duration: d, usage: u, ttfb: c.ttfbs[k.provider]}
	c.series[k] = s
	return s
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

// name returns the full name of the series suffix: <namespace>_suffix.
func (c *Collector) name(suffix string) string { return c.ns + "_" + suffix }

// Gather implements Gatherer: it returns a snapshot of the Collector's
// series, every family listed even before its first series. It never
// fails.
func (c *Collector) Gather(context.Context) ([]Family, error) {
	requests := Family{Name: c.name("requests_total"), Type: Counter,
		Help:       "Requests served, by provider, model, status class (1xx to 5xx, 499: the caller went away) and cache status.",
		LabelNames: []string{"cache_status", "model", "provider", "status_class"}}
	duration := Family{Name: c.name("request_duration_seconds"), Type: Histogram,
		Help:       "Time from a request's arrival to the end of its answer, by provider and status class.",
		LabelNames: []string{"provider", "status_class"}}
	ttfb := Family{Name: c.name("upstream_time_to_first_byte_seconds"), Type: Histogram,
		Help:       "Time from a request's arrival to the first byte of the provider's answer body, by provider.",
		LabelNames: []string{"provider"}}
	usageNames := []string{"model", "provider"}
	prompt := Family{Name: c.name("prompt_tokens_total"), Type: Counter, LabelNames: usageNames,
		Help: "Prompt (input) tokens the providers reported, by provider and model."}
	completion := Family{Name: c.name("completion_tokens_total"), Type: Counter, LabelNames: usageNames,
		Help: "Completion (output) tokens the providers reported, by provider and model."}
	cost := Family{Name: c.name("cost_usd_total"), Type: Counter, LabelNames: usageNames,
		Help: "Price of the requests in US dollars, from the gateway's price table, by provider and model."}
	guardrails := Family{Name: c.name("guardrail_verdicts_total"), Type: Counter, LabelNames: []string{"verdict"},
		Help: "Requests whose config attached guardrails, by their outcome: passed, failed (answered 246) or denied (refused 446)."}

	c.mu.Lock()
	for k, s := range c.series {
		requests.Metrics = append(requests.Metrics, Metric{LabelValues: []string{k.cache, k.model, k.provider, k.class}, Value: float64(s.requests)})
	}
	for k, h := range c.durations {
		duration.Metrics = append(duration.Metrics, h.metric(c.durBounds, k.provider, k.class))
	}
	for p, h := range c.ttfbs {
		ttfb.Metrics = append(ttfb.Metrics, h.metric(c.ttfbBounds, p))
	}
	for k, u := range c.usages {
		for _, f := range []struct {
			fam *Family
			v   float64
		}{{&prompt, u.prompt}, {&completion, u.completion}, {&cost, u.cost}} {
			if f.v > 0 {
				f.fam.Metrics = append(f.fam.Metrics, Metric{LabelValues: []string{k.model, k.provider}, Value: f.v})
			}
		}
	}
	for i, n := range c.guardrails {
		if n > 0 {
			guardrails.Metrics = append(guardrails.Metrics, Metric{LabelValues: []string{verdicts[i]}, Value: float64(n)})
		}
	}
	fams := []Family{requests, duration, ttfb, prompt, completion, cost, guardrails,
		c.counter("rate_limited_requests_total", "Requests the gateway refused with 429 under a rate-limits policy.", c.rateLimited),
		c.counter("budget_exhausted_requests_total", "Requests the gateway refused with 412 because a usage-limits policy's budget was spent.", c.budget),
		c.counter("breaker_skipped_targets_total", "Targets requests passed over because their circuit breakers were open (gateway.RequestLog.SkippedTargets).", c.skipped),
		c.counter("breaker_trips_total", "Circuit breakers opened by requests' failed attempts (gateway.RequestLog.TrippedTargets).", c.tripped),
	}
	c.mu.Unlock()
	for i := range fams {
		sortMetrics(fams[i].Metrics)
	}
	return fams, nil
}

// counter returns the family of the unlabelled counter <namespace>_suffix
// at n.
func (c *Collector) counter(suffix, help string, n uint64) Family {
	return Family{Name: c.name(suffix), Help: help, Type: Counter, Metrics: []Metric{{Value: float64(n)}}}
}
