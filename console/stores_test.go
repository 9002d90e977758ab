package console

import (
	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
)

// setOptionalStores sets the stores of the feedback and usage-limits
// routes, which memstore.Store serves too.
func setOptionalStores(o *gateway.Options, ob *observe.Options, st *memstore.Store) {
	ob.Feedback = st
	o.UsageLimits = st
}
