package gateway

import "context"

// logHookKey is the context key of a request's log hook.
type logHookKey struct{}

// WithLogHook returns a copy of ctx carrying fn. A Gateway serving a
// request whose context carries fn calls it once with the request's
// finished log record, synchronously on the request's goroutine, before
// ServeHTTP returns and just before the record is handed to the log
// sinks, whether or not the Gateway has any (Options.LogSink,
// Options.LogSinks). It is called for a request that failed authentication
// too, whose record then goes to no sink (see Gateway.AuthFailures). It is called for an aborted answer too (rec.Aborted),
// before the abort panic goes on.
//
// It lets middleware in front of the Gateway see what the gateway learned
// of a request (provider, model, tokens, status, cache status) while the
// request is still its own, e.g. to put it on a trace span before the span
// ends. fn must neither keep rec nor modify it: once fn returns, rec
// belongs to the sinks.
//
// A hook already in ctx stays: both are called, the one set first first.
// A nil fn returns ctx unchanged. A request whose context carries no hook
// costs one context lookup and no allocation.
func WithLogHook(ctx context.Context, fn func(rec *RequestLog)) context.Context {
	if fn == nil {
		return ctx
	}
	if prev := logHookFrom(ctx); prev != nil {
		next := fn
		fn = func(rec *RequestLog) {
			prev(rec)
			next(rec)
		}
	}
	return context.WithValue(ctx, logHookKey{}, fn)
}

// logHookFrom returns the log hook ctx carries, or nil.
func logHookFrom(ctx context.Context) func(*RequestLog) {
	fn, _ := ctx.Value(logHookKey{}).(func(*RequestLog))
	return fn
}
