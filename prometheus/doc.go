// Package prometheus exports a gateway's requests as Prometheus metrics.
//
// A Collector is a gateway.LogSink: the gateway hands it each finished
// request's log record, from which it counts requests, tokens and cost
// and observes durations, then passes the record on to the next sink, if
// any. It is also a prometheus.Collector, registered like any other:
//
//	reg := prometheus.NewRegistry() // this package: Go runtime and process metrics included
//	col := prometheus.NewCollector(prometheus.Options{Next: sink})
//	reg.MustRegister(col)
//	gw := gateway.New(gateway.Options{LogSink: col, ...})
//	reg.MustRegister(col.DroppedLogs(gw), col.AuthFailures(gw))
//	admin.Handle("/metrics", prometheus.Handler(reg))
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
//	gateway_request_logs_dropped_total                                     counter (Collector.DroppedLogs)
//	gateway_unauthenticated_requests_total{code}                           counter (Collector.AuthFailures)
//
// status_class is 1xx, 2xx, 3xx, 4xx or 5xx, or 499 for a request whose
// caller went away before the answer, kept apart from the 4xx the
// gateway answered. cache_status is the
// x-gateway-cache-status of the answer (HIT, MISS, REFRESH, DISABLED), or
// empty for a request refused before it was routed.
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
// fill the set, since the provider refuses them.
//
// # Security
//
// The metrics name providers and models and count requests; they carry
// no key, key id, workspace, trace id or metadata. Serve them on an
// address that is not public all the same.
package prometheus
