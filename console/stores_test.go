package console

import (
	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/budget"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
)

// setOptionalStores sets the store of the feedback routes, which
// MemoryStore serves too, and wires the budgets as a host does: kept by
// a memstore.Store over st, the first admission of o. The returned
// function mounts the budgets' usage-limits routes on the gateway made
// from o.
func setOptionalStores(o *gateway.Options, st *gateway.MemoryStore) func(*gateway.Gateway) {
	o.Feedback = st
	ms := &memstore.Store{MemoryStore: st}
	b := budget.New(budget.Options{Store: ms, Workspaces: ms, Audit: ms})
	o.Admissions = append([]gateway.Admission{b}, o.Admissions...)
	return func(g *gateway.Gateway) { b.Mount(g, &observe.Auditor{Store: ms}) }
}
