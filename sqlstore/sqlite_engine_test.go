package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"
)

// openSQLiteStore opens a store on a new SQLite file, with the engine of
// the build (native with cgo, pure Go with CGO_ENABLED=0 or -tags
// sqlite_wasm): the tests here hold both to the same behaviour.
func openSQLiteStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "gateway.db"),
		Options{MasterKey: bytes.Repeat([]byte{7}, MasterKeySize)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestSQLiteTimeText: a time is stored as the text of sqliteTimeFormat,
// fixed width to the microsecond (so that text order is time order, and
// a file written by one engine reads the same in the other), and a
// column declared TIMESTAMP reads back as the same instant, in UTC.
func TestSQLiteTimeText(t *testing.T) {
	ctx := context.Background()
	s := openSQLiteStore(t)
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE times (n INTEGER PRIMARY KEY, at TIMESTAMP)`); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		at   time.Time
		text string
	}{
		{time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC), "2026-01-02T03:04:05.000006Z"},
		{time.Date(2026, 11, 28, 23, 59, 0, 0, time.UTC), "2026-11-28T23:59:00.000000Z"},
		{time.Date(2027, 6, 30, 12, 0, 0, 123456789, time.UTC), "2027-06-30T12:00:00.123456Z"},
	} {
		if _, err := s.db.ExecContext(ctx, `INSERT INTO times (n, at) VALUES (?, ?)`, i, tc.at); err != nil {
			t.Fatal(err)
		}
		var text, typ string
		if err := s.db.QueryRowContext(ctx, `SELECT CAST(at AS TEXT), typeof(at) FROM times WHERE n = ?`, i).Scan(&text, &typ); err != nil {
			t.Fatal(err)
		}
		if text != tc.text || typ != "text" {
			t.Errorf("%v stored as %s %q, want text %q", tc.at, typ, text, tc.text)
		}
		var got time.Time
		if err := s.db.QueryRowContext(ctx, `SELECT at FROM times WHERE n = ?`, i).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if want := tc.at.Truncate(time.Microsecond); !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("%q read back as %v, want %v in UTC", tc.text, got, want)
		}
	}
}

// TestSQLitePercentiles: gw_percentiles gives the nearest-rank p50, p90
// and p99 of each group (as observe.Percentile), whatever the order of
// its rows, and NULL over no row.
func TestSQLitePercentiles(t *testing.T) {
	ctx := context.Background()
	s := openSQLiteStore(t)
	conn, err := s.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `CREATE TABLE vals (g INTEGER, v INTEGER)`); err != nil {
		t.Fatal(err)
	}
	// Group 1: 1..100 in descending order; group 2: 10 and 1000 (five
	// of each); group 3: one value.
	for v := 100; v >= 1; v-- {
		if _, err := conn.ExecContext(ctx, `INSERT INTO vals VALUES (1, ?)`, v); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		if _, err := conn.ExecContext(ctx, `INSERT INTO vals VALUES (2, ?)`, []int{10, 1000}[i%2]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO vals VALUES (3, 7)`); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.QueryContext(ctx, `SELECT g, gw_percentiles(v) FROM vals GROUP BY g ORDER BY g`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]string{}
	for rows.Next() {
		var g int
		var p string
		if err := rows.Scan(&g, &p); err != nil {
			t.Fatal(err)
		}
		got[g] = p
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[int]string{1: "50 90 99", 2: "10 1000 1000", 3: "7 7 7"}
	for g, w := range want {
		if got[g] != w {
			t.Errorf("group %d: gw_percentiles = %q, want %q", g, got[g], w)
		}
	}
	var none sql.NullString
	if err := conn.QueryRowContext(ctx, `SELECT gw_percentiles(v) FROM vals WHERE g = 4`).Scan(&none); err != nil {
		t.Fatal(err)
	}
	if none.Valid {
		t.Errorf("gw_percentiles over no row = %q, want NULL", none.String)
	}
}

// TestSQLiteReadTx: a read-only transaction does not take the write
// lock (a writer goes ahead while it is open, where it would wait out the
// busy timeout and fail) and refuses writes; the connection writes again
// after it.
func TestSQLiteReadTx(t *testing.T) {
	ctx := context.Background()
	s := openSQLiteStore(t)
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE t (n INTEGER)`); err != nil {
		t.Fatal(err)
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, end := range []string{"commit", "rollback"} {
		rtx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := rtx.QueryRowContext(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if _, err := rtx.ExecContext(ctx, `INSERT INTO t VALUES (1)`); err == nil {
			t.Errorf("a write in a read-only transaction succeeded")
		}
		if err := s.writeBeside(ctx); err != nil {
			rtx.Rollback()
			t.Fatalf("a write beside a read-only transaction: %v", err)
		}
		if end == "commit" {
			err = rtx.Commit()
		} else {
			err = rtx.Rollback()
		}
		if err != nil {
			t.Fatalf("%s: %v", end, err)
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO t VALUES (3)`); err != nil {
			t.Errorf("after the read-only transaction's %s: %v", end, err)
		}
	}
}

// writeBeside writes a row of t in a transaction of its own.
func (s *Store) writeBeside(ctx context.Context) error {
	wtx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer wtx.Rollback()
	if _, err := wtx.ExecContext(ctx, `INSERT INTO t VALUES (2)`); err != nil {
		return err
	}
	return wtx.Commit()
}
