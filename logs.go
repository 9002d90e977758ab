package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelgateway/gateway/internal/uuid"
)

// RequestLog is the record of one request. It never holds a credential:
// headers are not recorded, and key-like query parameters are redacted.
//
// The JSON names are those of the request log line and of GET /logs.
type RequestLog struct {
	// ID identifies the record: unique, and ordered by time within one
	// process (a UUIDv7 when the gateway makes it).
	ID          string            `json:"id,omitempty"`
	Time        time.Time         `json:"time"`
	TraceID     string            `json:"trace_id"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	KeyID       string            `json:"key_id,omitempty"`
	WorkspaceID string            `json:"workspace_id,omitempty"`
	VirtualKey  string            `json:"virtual_key,omitempty"` // the slug of the virtual key that served it
	ConfigID    string            `json:"config_id,omitempty"`   // the slug of the saved config that routed it
	Provider    string            `json:"provider,omitempty"`
	Model       string            `json:"model,omitempty"` // the request's model, else the answer's
	Method      string            `json:"method"`
	Path        string            `json:"path"`
	Query       string            `json:"query,omitempty"`
	// Ingress names the protocol the caller spoke: chat_completions,
	// completions, embeddings, messages, responses or pass_through.
	Ingress string        `json:"ingress,omitempty"`
	Status  int           `json:"status"` // 499: the caller went away first
	Latency time.Duration `json:"latency"`
	// TTFB is the time from the request's arrival to the first byte of
	// the provider's answer body; zero when no answer body came.
	TTFB     time.Duration `json:"ttfb,omitempty"`
	BytesIn  int64         `json:"bytes_in"`
	BytesOut int64         `json:"bytes_out"`

	// Tokens, from the provider's usage (streamed answers included);
	// zero when the answer reported none.
	PromptTokens       int64 `json:"prompt_tokens,omitempty"`
	CompletionTokens   int64 `json:"completion_tokens,omitempty"`
	TotalTokens        int64 `json:"total_tokens,omitempty"`
	CachedPromptTokens int64 `json:"cached_prompt_tokens,omitempty"` // of PromptTokens, read from the provider's prompt cache

	// Cost is the request's price in USD from the price table
	// (Options.Prices); zero for a cache hit, and for a caller served the
	// answer of another's identical request (a shared cache fill), whose
	// own record carries the cost. CostUnknown says the request used
	// tokens of a model the table has no price for, so that Cost is 0 for
	// want of one.
	Cost        float64 `json:"cost,omitempty"`
	CostUnknown bool    `json:"cost_unknown,omitempty"`

	// CacheStatus is the x-gateway-cache-status the caller got (HIT,
	// MISS, REFRESH, DISABLED), taken from the answer's header as it went
	// out; empty when the answer had none (the gateway's own errors
	// before routing, an unreachable provider) or none went out.
	CacheStatus CacheStatus `json:"cache_status,omitempty"`
	Attempts    int         `json:"attempts"` // retries made after the first try
	// FallbackIndex is the index, among the targets a fallback config
	// tried, of the one that answered (0: the first); Rescued says a
	// retry or a fallback turned a failed attempt into a 2xx answer.
	FallbackIndex int    `json:"fallback_index,omitempty"`
	Rescued       bool   `json:"rescued,omitempty"`
	ErrorCode     string `json:"error_code,omitempty"`
	Aborted       bool   `json:"aborted,omitempty"` // the response was cut mid-stream

	// SkippedTargets are the targets the request passed over because
	// their circuit breakers were open, and TrippedTargets those whose
	// breakers its failed attempts opened, each named by its breaker key
	// (see Breakers), in the order it happened.
	SkippedTargets []string `json:"skipped_targets,omitempty"`
	TrippedTargets []string `json:"tripped_targets,omitempty"`

	// RequestBody and ResponseBody are the bodies of the request and of
	// its answer, kept only when the operator opts in (Options.LogBodies):
	// the first Options.LogBodyMax bytes of each, decoded from gzip or
	// deflate, credentials redacted; a note in brackets for a body of
	// another type (audio, images, multipart uploads). The Truncated flags
	// say more was sent than was kept. GET /logs/{id} shows them;
	// a store's list of logs may leave them out.
	RequestBody           string `json:"request_body,omitempty"`
	RequestBodyTruncated  bool   `json:"request_body_truncated,omitempty"`
	ResponseBody          string `json:"response_body,omitempty"`
	ResponseBodyTruncated bool   `json:"response_body_truncated,omitempty"`

	// Guardrails is the outcome of the guardrails the request's config
	// attached (Options.Hooks): "passed", "failed" (a check failed
	// without refusing: the answer's status is 246) or "denied" (446);
	// empty when none ran. HookResults is the hook_results object the
	// caller got: each guardrail's verdict and each of its checks'.
	Guardrails  string          `json:"guardrails,omitempty"`
	HookResults json.RawMessage `json:"hook_results,omitempty"`
}

// LogSink receives request logs. The gateway calls Log from a single
// goroutine of its own, in request completion order, after the response has
// been sent; rec is the sink's to keep. Requests that failed
// authentication never reach it (docs/architecture.md, Trust): they are counted by
// Gateway.AuthFailures, so that anonymous callers cannot crowd real
// records out of its queue.
type LogSink interface {
	Log(rec *RequestLog)
}

// SlogSink writes each request log as one slog record at Info level, with
// the message "request".
type SlogSink struct {
	Logger *slog.Logger // nil means slog.Default()
}

// Log implements LogSink.
func (s SlogSink) Log(rec *RequestLog) {
	l := s.Logger
	if l == nil {
		l = slog.Default()
	}
	attrs := make([]slog.Attr, 0, 32)
	if rec.ID != "" {
		attrs = append(attrs, slog.String("id", rec.ID))
	}
	attrs = append(attrs,
		slog.String("trace_id", rec.TraceID),
		slog.String("key_id", rec.KeyID),
		slog.String("workspace_id", rec.WorkspaceID),
		slog.String("provider", rec.Provider),
		slog.String("method", rec.Method),
		slog.String("path", rec.Path),
		slog.Int("status", rec.Status),
		slog.Duration("latency", rec.Latency),
		slog.Int64("bytes_in", rec.BytesIn),
		slog.Int64("bytes_out", rec.BytesOut),
		slog.Int("attempts", rec.Attempts),
	)
	if rec.VirtualKey != "" {
		attrs = append(attrs, slog.String("virtual_key", rec.VirtualKey))
	}
	if rec.ConfigID != "" {
		attrs = append(attrs, slog.String("config_id", rec.ConfigID))
	}
	if rec.Model != "" {
		attrs = append(attrs, slog.String("model", rec.Model))
	}
	if rec.TTFB > 0 {
		attrs = append(attrs, slog.Duration("ttfb", rec.TTFB))
	}
	if rec.PromptTokens != 0 || rec.CompletionTokens != 0 || rec.TotalTokens != 0 {
		attrs = append(attrs,
			slog.Int64("prompt_tokens", rec.PromptTokens),
			slog.Int64("completion_tokens", rec.CompletionTokens),
			slog.Int64("total_tokens", rec.TotalTokens))
		if rec.CachedPromptTokens != 0 {
			attrs = append(attrs, slog.Int64("cached_prompt_tokens", rec.CachedPromptTokens))
		}
		attrs = append(attrs, slog.Float64("cost", rec.Cost))
	}
	if rec.CostUnknown {
		attrs = append(attrs, slog.Bool("cost_unknown", true))
	}
	if rec.FallbackIndex != 0 {
		attrs = append(attrs, slog.Int("fallback_index", rec.FallbackIndex))
	}
	if rec.Rescued {
		attrs = append(attrs, slog.Bool("rescued", true))
	}
	if rec.Query != "" {
		attrs = append(attrs, slog.String("query", rec.Query))
	}
	if rec.CacheStatus != "" {
		attrs = append(attrs, slog.String("cache_status", string(rec.CacheStatus)))
	}
	if rec.ErrorCode != "" {
		attrs = append(attrs, slog.String("error_code", rec.ErrorCode))
	}
	if rec.Aborted {
		attrs = append(attrs, slog.Bool("aborted", true))
	}
	if len(rec.SkippedTargets) > 0 {
		attrs = append(attrs, slog.Any("skipped_targets", rec.SkippedTargets))
	}
	if len(rec.TrippedTargets) > 0 {
		attrs = append(attrs, slog.Any("tripped_targets", rec.TrippedTargets))
	}
	if len(rec.Metadata) > 0 {
		md := make([]any, 0, len(rec.Metadata))
		for k, v := range rec.Metadata {
			md = append(md, slog.String(k, v))
		}
		attrs = append(attrs, slog.Group("metadata", md...))
	}
	l.LogAttrs(context.Background(), slog.LevelInfo, "request", attrs...)
}

// LogBuffer is a LogSink that keeps the most recent request logs in memory,
// for tests and for a host's own log views. Its zero value keeps 1000
// records. It is safe for concurrent use.
type LogBuffer struct {
	// Size is how many records are kept; zero means 1000. It must not
	// change after the first Log.
	Size int

	mu   sync.Mutex // guards ring, next, full
	ring []RequestLog
	next int
	full bool
}

// Log implements LogSink.
func (b *LogBuffer) Log(rec *RequestLog) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ring == nil {
		n := b.Size
		if n <= 0 {
			n = 1000
		}
		b.ring = make([]RequestLog, n)
	}
	b.ring[b.next] = *rec
	b.next++
	if b.next == len(b.ring) {
		b.next, b.full = 0, true
	}
}

// LogFilter selects request logs; empty fields match everything.
type LogFilter struct {
	TraceID string
	// Metadata matches records whose metadata holds every key with the
	// same value.
	Metadata map[string]string
}

// Query returns copies of the kept records that match f, oldest first.
func (b *LogBuffer) Query(f LogFilter) []RequestLog {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []RequestLog
	visit := func(recs []RequestLog) {
		for _, r := range recs {
			if f.matches(&r) {
				r.Metadata = maps.Clone(r.Metadata)
				out = append(out, r)
			}
		}
	}
	if b.full {
		visit(b.ring[b.next:])
	}
	visit(b.ring[:b.next])
	return out
}

func (f LogFilter) matches(r *RequestLog) bool {
	if f.TraceID != "" && r.TraceID != f.TraceID {
		return false
	}
	for k, v := range f.Metadata {
		if got, ok := r.Metadata[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// logQueue hands records to a LogSink from one goroutine, so that a slow
// sink never delays a response. Records are handed over in batches: the
// goroutine wakes for the first record after it went idle, waits
// logBatchDelay for more to arrive, then logs them all, so that a busy
// gateway pays one wake-up per batch rather than one per request (a
// wake-up per request cost a third of a pass-through's time on two
// cores). When max records are waiting, new ones are dropped and counted.
//
// A queue with a longer window (a BatchLogSink's of Options.LogSinks)
// lets records gather for it instead once a batch came with logBusyBatch
// records or more: under load a store pays its per-batch costs (a
// transaction, its commit, the rollups' upserts) once per window rather
// than every few milliseconds, while a lone record still waits only
// logBatchDelay.
type logQueue struct {
	sink   LogSink
	max    int
	long   time.Duration // the window under load; 0: always logBatchDelay
	errLog *slog.Logger  // where a BatchLogSink's failures go; nil: they are only counted
	wake   chan struct{} // a record arrived while the goroutine was idle
	stop   chan struct{} // closed by close: log what is waiting, then exit
	done   chan struct{} // closed by the goroutine when it exits
	once   sync.Once

	mu      sync.Mutex // guards buf and closed
	buf     []*RequestLog
	closed  bool
	dropped atomic.Int64
	failing bool // the last batch the sink was given failed; only the goroutine reads and writes it
}

// logBatchDelay is how long the log goroutine lets records gather after
// the first one woke it: the most a record waits for its LogSink.
const logBatchDelay = 5 * time.Millisecond

// storeBatchDelay is the window under load of a BatchLogSink's queue: the
// most of a busy gateway's request logs a crash of the process loses
// beyond those waiting for a write already under way.
const storeBatchDelay = 50 * time.Millisecond

// logBusyBatch is the size of a batch after which a queue with a longer
// window uses it: 4 records in 5 ms is 800 requests a second.
const logBusyBatch = 4

func newLogQueue(sink LogSink, size int) *logQueue {
	return newLogQueueWindow(sink, size, 0)
}

// newSinkQueue returns the queue of a sink of Options.LogSinks: with the
// longer window under load, and its failures logged to errLog, when the
// sink is a BatchLogSink.
func newSinkQueue(sink LogSink, size int, errLog *slog.Logger) *logQueue {
	if _, ok := sink.(BatchLogSink); !ok {
		return newLogQueue(sink, size)
	}
	q := newLogQueueWindow(sink, size, storeBatchDelay)
	q.errLog = errLog
	return q
}

// newLogQueueWindow returns a queue whose window under load is long (0:
// always logBatchDelay).
func newLogQueueWindow(sink LogSink, size int, long time.Duration) *logQueue {
	if size <= 0 {
		size = 4096
	}
	q := &logQueue{sink: sink, max: size, long: long, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go q.run()
	return q
}

func (q *logQueue) run() {
	defer close(q.done)
	delay := time.NewTimer(logBatchDelay)
	delay.Stop()
	var batch []*RequestLog
	window := logBatchDelay
	for {
		stopping := false
		select {
		case <-q.wake:
			delay.Reset(window)
			select {
			case <-delay.C:
			case <-q.stop:
				delay.Stop()
				stopping = true
			}
		case <-q.stop:
			stopping = true
		}
		q.mu.Lock()
		batch, q.buf = q.buf, batch[:0]
		q.mu.Unlock()
		if window = logBatchDelay; q.long > 0 && len(batch) >= logBusyBatch {
			window = q.long
		}
		if b, ok := q.sink.(BatchLogSink); ok && len(batch) > 0 {
			q.settle(len(batch), b.LogBatch(batch))
		} else {
			for _, rec := range batch {
				q.sink.Log(rec)
			}
		}
		clear(batch)
		if stopping {
			// close set closed before it closed stop: no record came in
			// after the batch was taken.
			return
		}
	}
}

// settle counts the n records of a batch its BatchLogSink failed to keep
// (err) as dropped, and logs the first failure of a run and the recovery.
func (q *logQueue) settle(n int, err error) {
	switch {
	case err != nil:
		q.dropped.Add(int64(n))
		if !q.failing && q.errLog != nil {
			q.errLog.Error("gateway: a log sink failed to keep request logs; dropping them until it works again",
				"records", n, "err", err)
		}
		q.failing = true
	case q.failing:
		q.failing = false
		if q.errLog != nil {
			q.errLog.Info("gateway: the log sink keeps request logs again")
		}
	}
}

func (q *logQueue) send(rec *RequestLog) {
	q.mu.Lock()
	if q.closed || len(q.buf) >= q.max {
		closed := q.closed
		q.mu.Unlock()
		if !closed {
			q.dropped.Add(1)
		}
		return
	}
	q.buf = append(q.buf, rec)
	first := len(q.buf) == 1
	q.mu.Unlock()
	if first {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
}

func (q *logQueue) close() {
	q.once.Do(func() {
		q.mu.Lock()
		q.closed = true
		q.mu.Unlock()
		close(q.stop)
	})
	<-q.done
}

// DroppedLogs returns how many request logs were dropped because the
// LogSink or a sink of LogSinks could not keep up, or a BatchLogSink
// failed to keep them.
func (g *Gateway) DroppedLogs() int64 {
	var n int64
	for _, q := range append([]*logQueue{g.logs}, g.sinks...) {
		if q != nil {
			n += q.dropped.Load()
		}
	}
	return n
}

// logging reports whether request log records are queued: for the
// LogSink, the LogSinks, or both.
func (g *Gateway) logging() bool {
	return g.logs != nil || len(g.sinks) > 0
}

// logUsage fills in what the answer's usage says of the request: tokens,
// the answer's model when the request named none, the cost, the time to
// the provider's first byte, and whether a retry or fallback rescued it.
func (g *Gateway) logUsage(st *requestState, rec *RequestLog) {
	u := st.usageDone()
	rec.PromptTokens, rec.CompletionTokens, rec.TotalTokens, rec.CachedPromptTokens, _ = u.counts()
	if rec.Model == "" {
		rec.Model = u.answerModel()
	}
	if !st.firstByte.IsZero() {
		rec.TTFB = max(st.firstByte.Sub(st.start), 0)
	}
	rec.Rescued = st.rescue && rec.Status >= 200 && rec.Status <= 299
	if rec.CacheStatus == CacheHit || st.shared || rec.PromptTokens == 0 && rec.CompletionTokens == 0 {
		return // no provider was paid for this answer, or nothing to price
	}
	var known bool
	if rec.Cost, known = st.prices.Cost(rec.Provider, rec.Model, rec.PromptTokens, rec.CompletionTokens, rec.CachedPromptTokens); known {
		rec.CostUnknown = false
		return
	}
	rec.Cost, known = g.prices.Cost(rec.Provider, rec.Model, rec.PromptTokens, rec.CompletionTokens, rec.CachedPromptTokens)
	rec.CostUnknown = !known
}

// sendLog queues rec for the LogSink and, when store says it is a
// data-plane request's, for the LogSinks, each a copy of its own, since
// a sink may keep and change its record.
func (g *Gateway) sendLog(rec *RequestLog, store bool) {
	// Each queue gets a record of its own, the last one rec itself.
	last := g.logs
	if store {
		for _, q := range g.sinks {
			if last != nil {
				last.send(cloneLog(rec))
			}
			last = q
		}
	}
	if last != nil {
		last.send(rec)
	}
}

// cloneLog returns a copy of rec sharing no memory with it.
func cloneLog(rec *RequestLog) *RequestLog {
	c := *rec
	c.Metadata = maps.Clone(rec.Metadata)
	return &c
}

// BatchLogSink is a LogSink that takes the records of its queue a batch at
// a time, in order, as a store writes them best: LogBatch is called in
// place of Log for every batch. The slice is the sink's only for the
// call; the records are its to keep. An error says the batch was not
// kept: its records are counted by Gateway.DroppedLogs.
type BatchLogSink interface {
	LogSink
	LogBatch(recs []*RequestLog) error
}

// uuidGen makes request log ids (see uuid.V7). It is safe for
// concurrent use; its zero value is ready.
type uuidGen struct{ v7 uuid.V7 }

// next returns a new id for time t.
func (u *uuidGen) next(t time.Time) string { return u.v7.Next(t) }

// redactQuery returns the raw query with the values of key-like
// parameters (key, token, secret, signature, password, auth) replaced.
func redactQuery(raw string) string {
	if raw == "" {
		return ""
	}
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		name, _, ok := strings.Cut(p, "=")
		if !ok {
			continue
		}
		if n, err := url.QueryUnescape(name); secretName(name) || err == nil && secretName(n) {
			parts[i] = name + "=REDACTED"
		}
	}
	return strings.Join(parts, "&")
}

// secretName reports whether a header or parameter name is likely to carry
// a credential.
func secretName(n string) bool {
	n = strings.ToLower(n)
	for _, s := range []string{"key", "token", "secret", "signature", "password", "auth", "credential", "sig"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}
