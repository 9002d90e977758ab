package memstore_test

import (
	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/memstore"
)

// A *memstore.Store is every store of the data plane and of admin.
var (
	_ gateway.KeyStore              = (*memstore.Store)(nil)
	_ gateway.VirtualKeyStore       = (*memstore.Store)(nil)
	_ gateway.ConfigStore           = (*memstore.Store)(nil)
	_ gateway.PolicyStore           = (*memstore.Store)(nil)
	_ gateway.WorkspaceLookup       = (*memstore.Store)(nil)
	_ admin.KeyStore                = (*memstore.Store)(nil)
	_ admin.VirtualKeyStore         = (*memstore.Store)(nil)
	_ admin.ConfigStore             = (*memstore.Store)(nil)
	_ admin.WorkspaceStore          = (*memstore.Store)(nil)
	_ admin.PolicyStore             = (*memstore.Store)(nil)
	_ admin.PolicyCompareAndSwapper = (*memstore.Store)(nil)
)
