// Package budget enforces budgets on a gateway's data plane: usage-limits
// policies (a credit limit of tokens or USD per entity, over a weekly,
// monthly or n-day period or in all), and the usage_limits of API keys
// and workspaces. A request whose budget is spent is refused with 412
// budget_exhausted; an admitted one reserves an estimate of its usage and
// is charged what its answer reported once it is done. It also serves
// the usage-limits control plane under /policies/usage-limits.
//
// A host wires it in two lines: the Stage New returns is an Admission of
// the gateway, and Mount serves its routes:
//
//	b := budget.New(budget.Options{Store: st, Workspaces: st, Audit: st})
//	g := gateway.New(gateway.Options{Keys: st, Admissions: []gateway.Admission{b}})
//	b.Mount(g, &observe.Auditor{Store: st})
//
// A gateway whose host does not wire it enforces no budget: the
// usage_limits of keys and workspaces are still checked where they are
// written (gateway.UsageLimitsJSON) and stored, but not applied, and
// /policies/usage-limits… answers 404.
//
// memstore.Store and sqlstore.Store keep the policies (Store); the
// counters are the Stage's own MemoryCounter unless Options.Counter
// shares them between replicas (sqlstore.Store, redis.Budget).
package budget
