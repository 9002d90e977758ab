//go:build !cgo || sqlite_wasm

package sqlstore

import (
	"database/sql"
	"errors"
	"net/url"
	"os"

	gateway "github.com/modelgateway/gateway"
	"github.com/ncruces/go-sqlite3"
	sqlite "github.com/ncruces/go-sqlite3/driver"
)

// This file is the pure-Go SQLite engine: SQLite compiled to
// WebAssembly and translated to Go (github.com/ncruces/go-sqlite3). A
// build gets it without cgo (CGO_ENABLED=0) or with the sqlite_wasm tag;
// sqlite_native.go is the other engine. (The file is not named
// sqlite_wasm.go: Go would build that one for GOARCH=wasm only.)

// openSQLite opens the SQLite database file abs (made already) with the
// settings of sqlitePragmas, and gw_percentiles on every connection.
func openSQLite(abs string) (*sql.DB, error) {
	// modeof gives the -wal file the database's mode; the -shm file (the
	// WAL's index: page numbers, no records) is made so here, as the
	// driver creates it with the default mode.
	f, err := os.OpenFile(abs+"-shm", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	f.Close()
	q := url.Values{}
	q.Set("_txlock", "immediate")
	q.Set("modeof", abs)
	// Times are written in one fixed width (the driver's default,
	// RFC 3339 with trailing zeros trimmed, does not sort as text), so
	// that ORDER BY and range conditions on them are time order.
	q.Set("_timefmt", sqliteTimeFormat)
	for _, p := range sqlitePragmas {
		q.Add("_pragma", p.name+"("+p.value+")")
	}
	return sqlite.Open(sqliteURI(abs, q), registerPercentiles)
}

// registerPercentiles registers gw_percentiles (see percentiles) on c,
// each connection as it opens.
func registerPercentiles(c *sqlite3.Conn) error {
	return c.CreateWindowFunction("gw_percentiles", 1, sqlite3.DETERMINISTIC|sqlite3.INNOCUOUS,
		func() sqlite3.AggregateFunction { return new(percentilesFunc) })
}

// percentilesFunc is gw_percentiles as the driver calls it.
type percentilesFunc struct{ percentiles }

func (p *percentilesFunc) Step(_ sqlite3.Context, arg ...sqlite3.Value) {
	p.add(arg[0].Int64())
}

func (p *percentilesFunc) Value(ctx sqlite3.Context) {
	v, ok := p.text()
	if !ok {
		ctx.ResultNull()
		return
	}
	ctx.ResultText(v)
}

// addLogsSQLite inserts recs on conn, in the transaction open on it,
// and returns how many were stored: fewer than len(recs) when some ids
// were stored already.
//
// It binds each record's columns through the driver's SQLite connection
// (conn.Raw), eight records to a prepared INSERT and the rest one by one,
// rather than through database/sql: there, boxing 35 values a record
// into []any and converting them back cost about as much CPU as SQLite's
// storing the row. The statements are prepared once a batch (a batch is
// a 50 ms window's records under load), and a value bound already for
// the same parameter is not bound again (see logBinder).
func (s *Store) addLogsSQLite(conn *sql.Conn, recs []*gateway.RequestLog) (int, error) {
	stored := 0
	err := conn.Raw(func(dc any) error {
		c, ok := dc.(interface{ Raw() *sqlite3.Conn })
		if !ok {
			return errors.New("not a SQLite connection")
		}
		db := c.Raw()
		return eachLogInsert(recs, func(q string, rows int, recs []*gateway.RequestLog) error {
			st, _, err := db.Prepare(q)
			if err != nil {
				return err
			}
			b := newLogBinder(st, rows)
			for i := 0; i < len(recs); i += rows {
				for j, r := range recs[i : i+rows] {
					if err := b.bind(r, j*logColumnCount); err != nil {
						st.Close()
						return err
					}
				}
				if err := st.Exec(); err != nil {
					st.Close()
					return err
				}
				stored += int(db.Changes())
			}
			return st.Close()
		})
	})
	return stored, err
}

// logBinder binds the values of records' logColumns to the INSERT st,
// numbered in their order from 1, one record after another. SQLite keeps
// a statement's bindings from one run to the next, so a parameter whose
// value is the one it holds from the previous run is left as it is: most
// columns repeat from record to record (workspace, key, provider, model,
// method, path, the empty ones), and binding a text copies it into
// SQLite's memory and frees the copy it replaces, a sixth of the CPU of
// storing a record.
type logBinder struct {
	st    *sqlite3.Stmt
	texts []string // by parameter number, what was bound last
	ints  []int64
	bound []bool // the parameter holds texts[i] or ints[i]
}

// newLogBinder returns a logBinder for st, an INSERT of rows records.
func newLogBinder(st *sqlite3.Stmt, rows int) *logBinder {
	n := rows*logColumnCount + 1
	return &logBinder{st: st, texts: make([]string, n), ints: make([]int64, n), bound: make([]bool, n)}
}

// bind binds the values of r to the parameters from off+1 on.
func (b *logBinder) bind(r *gateway.RequestLog, off int) error {
	texts, ints, cost := logFields(r)
	for _, t := range texts {
		i := off + t.i
		if b.bound[i] && b.texts[i] == t.v {
			continue
		}
		if err := b.st.BindText(i, t.v); err != nil {
			return err
		}
		b.texts[i], b.bound[i] = t.v, true
	}
	for _, n := range ints {
		i := off + n.i
		if b.bound[i] && b.ints[i] == n.v {
			continue
		}
		if err := b.st.BindInt64(i, n.v); err != nil {
			return err
		}
		b.ints[i], b.bound[i] = n.v, true
	}
	return b.st.BindFloat(off+logCostParam, cost)
}
