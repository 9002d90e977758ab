package console

import (
	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/budget"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
)

// setOptionalStores sets the store of the feedback routes, which
// memstore.Store serves too, and wires the budgets as a host does: kept
// by st, the first admission of o. The returned function mounts the
// budgets' usage-limits routes on the gateway made from o.
func setOptionalStores(o *gateway.Options, ob *observe.Options, st *memstore.Store) func(*gateway.Gateway) {
	ob.Feedback = st
	b := budget.New(budget.Options{Store: st, Workspaces: st, Audit: st})
	o.Admissions = append([]gateway.Admission{b}, o.Admissions...)
	return func(g *gateway.Gateway) { b.Mount(g, &observe.Auditor{Store: st}) }
}
