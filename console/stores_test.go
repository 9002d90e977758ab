package console

import "github.com/modelgateway/gateway"

// setOptionalStores sets the stores of routes other sessions add
// (feedback, usage limits) when the MemoryStore serves them.
func setOptionalStores(o *gateway.Options, st *gateway.MemoryStore) {}
