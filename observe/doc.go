// Package observe is the gateway's observability product: the stored
// request logs and their routes, log exports, analytics, feedback, and
// the audit log of control-plane writes (Auditor, and its reading route).
//
// A host keeps request logs by putting Sink(store) among the gateway's
// Options.LogSinks, and serves them by mounting the routes on the
// gateway with Mount. Under the gateway's prefix (/v1 by default) they
// are:
//
//	GET  /logs, GET /logs/{id}              stored request logs (logs.read)
//	POST /logs                              custom logs (logs.write)
//	/logs/exports…                          exports as JSON Lines, with signed download URLs
//	GET  /analytics/graphs/*, /analytics/summary/cache, /analytics/groups/*  (analytics.read)
//	POST /feedback, PUT /feedback/{id}      feedback on a trace
//	GET  /audit-logs                        the audit log (audit_logs.read)
//
// Every route answers 404 when the store it needs is missing from
// Options. A workspace key sees only its own workspace's records.
package observe
