package console

import "github.com/modelgateway/gateway"

// setOptionalStores sets the stores of the feedback and usage-limits
// routes, which MemoryStore serves too.
func setOptionalStores(o *gateway.Options, st *gateway.MemoryStore) {
	o.Feedback = st
	o.UsageLimits = st
}
