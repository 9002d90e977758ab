// Package prometheus exports a gateway's requests as Prometheus metrics
// through client_golang, for a host that has a prometheus.Registry of its
// own. A host without one serves the same series with package
// github.com/modelgateway/gateway/metrics alone, which does the counting
// for this package too.
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
//	reg.MustRegister(col.DroppedLogs(gw), col.AuthFailures(gw), col.Breakers(gw))
//	admin.Handle("/metrics", prometheus.Handler(reg))
//
// The series, their labels, the cap on the model label and what the
// metrics reveal are those the metrics package's documentation lists.
package prometheus
