package sqlstore_test

import (
	"testing"

	"github.com/modelgateway/gateway/prompt"
	"github.com/modelgateway/gateway/prompt/storetest"
	"github.com/modelgateway/gateway/sqlstore"
)

// TestPromptStore runs the prompt store's tests on SQLite and Postgres;
// on each, a second store on the same database sees the first's writes
// at once (prompts are read from the database, not the snapshot).
func TestPromptStore(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) prompt.Store { return openStore(t, b.dsn(t), sqlstore.Options{}) })
		})
	}
	eachBackend(t, func(t *testing.T, dsn string) {
		a, b := openStore(t, dsn, sqlstore.Options{}), openStore(t, dsn, sqlstore.Options{})
		rec := &prompt.Record{Kind: prompt.KindCollection, ID: "c1", WorkspaceID: "ws", Slug: "c", Name: "C", Status: "active"}
		if err := a.CreateRecord(t.Context(), rec, nil); err != nil {
			t.Fatal(err)
		}
		if got, err := b.Record(t.Context(), prompt.KindCollection, "ws", "c"); err != nil || got.ID != "c1" {
			t.Fatalf("the other store read %+v, %v", got, err)
		}
	})
}
