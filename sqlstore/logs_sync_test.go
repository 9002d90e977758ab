package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	gateway "github.com/modelgateway/gateway"
)

// TestAddLogsRestoresSynchronous: AddLogs commits with synchronous=NORMAL
// on SQLite, and every connection of the pool is back at FULL after it,
// for the store's other writes.
func TestAddLogsRestoresSynchronous(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "gateway.db"), Options{MasterKey: bytes.Repeat([]byte{7}, MasterKeySize)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 20 {
				rec := &gateway.RequestLog{ID: fmt.Sprintf("%d-%d", w, i), Time: time.Now()}
				if err := s.AddLogs(ctx, []*gateway.RequestLog{rec}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	var conns []*sql.Conn
	for range 4 { // the whole pool (openDB: at most 4)
		c, err := s.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	for i, c := range conns {
		var level int
		if err := c.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&level); err != nil || level != 2 {
			t.Errorf("connection %d: synchronous = %d (%v), want 2 (FULL)", i, level, err)
		}
	}
}
