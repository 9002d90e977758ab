package sqlstore_test

import (
	"testing"

	"github.com/modelgateway/gateway/sqlstore"
	"github.com/modelgateway/gateway/users"
	"github.com/modelgateway/gateway/users/storetest"
)

// TestUsersStore runs the users.Store tests on SQLite and Postgres, each
// store on a database of its own.
func TestUsersStore(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) users.Store { return openStore(t, b.dsn(t), sqlstore.Options{}) })
		})
	}
}
