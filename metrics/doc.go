// Package metrics counts a gateway's requests and serves them, with the Go
// runtime's and the process's, at a /metrics endpoint in the Prometheus
// text format, with nothing but the standard library.
//
// A Collector is a gateway.LogSink: the gateway hands it each finished
// request's log record, from which it counts requests, tokens and cost
// and observes durations, then passes the record on to the next sink, if
// any. Handler serves what Gatherers (the Collector, the watches of a
// gateway, Runtime) return:
//
//	col := metrics.New(metrics.Options{Next: sink})
//	gw := gateway.New(gateway.Options{LogSink: col, ...})
//	admin.Handle("GET /metrics", metrics.Handler(col, col.DroppedLogs(gw),
//		col.AuthFailures(gw), col.Breakers(gw), metrics.Runtime()))
//
// Gather returns the same series as data, for an exporter to convert: the
// module github.com/modelgateway/gateway/prometheus turns them into a
// client_golang prometheus.Collector for hosts that have a registry.
//
// The series, with the default namespace "gateway":
//
//	gateway_requests_total{provider,model,status_class,cache_status}       counter
//	gateway_request_duration_seconds{provider,status_class}                histogram
//	gateway_upstream_time_to_first_byte_seconds{provider}                  histogram
//	gateway_prompt_tokens_total{provider,model}                            counter
//	gateway_completion_tokens_total{provider,model}                        counter
//	gateway_cost_usd_total{provider,model}                                 counter
//	gateway_rate_limited_requests_total                                    counter
//	gateway_budget_exhausted_requests_total                                counter
//	gateway_guardrail_verdicts_total{verdict}                              counter
//	gateway_breaker_skipped_targets_total                                  counter
//	gateway_breaker_trips_total                                            counter
//	gateway_request_logs_dropped_total                                     counter (Collector.DroppedLogs)
//	gateway_unauthenticated_requests_total{code}                           counter (Collector.AuthFailures)
//	gateway_breaker_open{target}                                           gauge (Collector.Breakers)
//	gateway_breaker_consecutive_failures{target}                           gauge (Collector.Breakers)
//
// status_class is 1xx, 2xx, 3xx, 4xx or 5xx, or 499 for a request whose
// caller went away before the answer, kept apart from the 4xx the
// gateway answered. cache_status is the
// x-gateway-cache-status of the answer (HIT, MISS, REFRESH, DISABLED), or
// empty for a request refused before it was routed. verdict is passed,
// failed (answered 246) or denied (refused 446), for a request whose
// config attached guardrails. A labelled series appears with its first
// count: a model's token counters, say, once a provider reported tokens
// for it.
//
// A request that failed authentication (no key, an unknown, disabled or
// expired one) is no request log: the gateway hands it to no LogSink, so
// the series above never count it, and an anonymous flood cannot crowd
// real records out of the log queue. gateway_unauthenticated_requests_total
// counts those requests by the code the caller got (missing_api_key,
// invalid_api_key, key_store_error).
//
// # Cardinality
//
// Every label takes a bounded set of values. provider is one of the
// gateway's provider kinds, status_class and cache_status are fixed sets.
// model is the one label the caller chooses, so it is capped: a model
// name becomes a label value when a request for it is answered 2xx while
// fewer than Options.MaxModels names (200 by default) have; every other
// request, including a failed one for a model not yet seen, is counted
// under model="other". A caller sending made-up model names thus cannot
// fill the set, since the provider refuses them. target, of the breaker
// gauges, is capped at 1,000 targets, open ones first.
//
// # Security
//
// The metrics name providers and models and count requests; they carry
// no key, key id, trace id or metadata. The breaker gauges name their
// targets: a virtual key (its workspace and slug), or a provider, host and
// digest of the credential, never the credential. Serve them on an
// address that is not public all the same.
package metrics
