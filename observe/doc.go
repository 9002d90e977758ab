// Package observe is the gateway's observability product: the audit log
// of control-plane writes, and (moving here from the root package) the
// stored request logs, their exports, analytics and feedback.
package observe
