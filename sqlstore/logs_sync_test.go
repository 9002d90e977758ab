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

// TestSQLitePages: a new database has pages of 8 KiB, in WAL mode, and a
// cache of 512 KiB; one made with pages of 4 KiB keeps them, and stores
// and reads its records.
func TestSQLitePages(t *testing.T) {
	ctx := context.Background()
	key := bytes.Repeat([]byte{7}, MasterKeySize)
	for _, tc := range []struct {
		name string
		pre  int // the page size of a database made beforehand, or 0
		want int
	}{{"new", 0, 8192}, {"made before", 4096, 4096}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "gateway.db")
			if tc.pre != 0 {
				db, err := sql.Open("sqlite3", path)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := db.Exec(fmt.Sprintf(`PRAGMA page_size = %d; PRAGMA journal_mode = wal; CREATE TABLE before (x)`, tc.pre)); err != nil {
					t.Fatal(err)
				}
				db.Close()
			}
			s, err := Open(ctx, path, Options{MasterKey: key})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var size, cache int
			var mode string
			if err := s.db.QueryRowContext(ctx, `SELECT page_size FROM pragma_page_size`).Scan(&size); err != nil {
				t.Fatal(err)
			}
			if err := s.db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
				t.Fatal(err)
			}
			if err := s.db.QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&cache); err != nil {
				t.Fatal(err)
			}
			if size != tc.want || mode != "wal" || cache != -512 {
				t.Errorf("page size %d, journal mode %q, cache size %d; want %d, wal, -512", size, mode, cache, tc.want)
			}
			recs := make([]*gateway.RequestLog, 30)
			for i := range recs {
				recs[i] = &gateway.RequestLog{ID: fmt.Sprintf("log-%02d", i), Time: time.Now(), WorkspaceID: "ws-1", Status: 200 + i}
			}
			if err := s.AddLogs(ctx, recs); err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				got, err := s.Log(ctx, "ws-1", r.ID)
				if err != nil || got.Status != r.Status {
					t.Fatalf("Log(%s): %+v, %v; want status %d", r.ID, got, err, r.Status)
				}
			}
		})
	}
}
