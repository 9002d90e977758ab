package memstore_test

import (
	"testing"

	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/users"
	"github.com/modelgateway/gateway/users/storetest"
)

func TestUsersStore(t *testing.T) {
	storetest.Run(t, func(*testing.T) users.Store { return memstore.New() })
}
