package memstore_test

import (
	"testing"

	"github.com/modelgateway/gateway/catalog/storetest"
	"github.com/modelgateway/gateway/memstore"
)

func TestCatalogStore(t *testing.T) {
	storetest.Run(t, func(*testing.T) storetest.Store { return memstore.New() })
}
