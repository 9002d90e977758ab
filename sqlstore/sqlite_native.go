//go:build cgo && !sqlite_wasm

package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"net/url"
	"time"

	"github.com/mattn/go-sqlite3"
	gateway "github.com/modelgateway/gateway"
)

// This file is the native SQLite engine: SQLite's C source built with
// cgo (github.com/mattn/go-sqlite3), smaller and faster than the pure-Go
// one. A build with cgo gets it unless it has the sqlite_wasm tag;
// sqlite_purego.go is the other engine. Both write the same file, times
// included, so a database moves from one to the other as it is.

// openSQLite opens the SQLite database file abs (made already) with the
// settings of sqlitePragmas, made by nativeDriver on each connection.
// SQLite makes the -wal and -shm files with the database file's mode.
func openSQLite(abs string) (*sql.DB, error) {
	q := url.Values{}
	q.Set("_txlock", "immediate")
	return sql.OpenDB(nativeConnector{sqliteURI(abs, q)}), nil
}

// nativeConnector makes the connections of one database.
type nativeConnector struct{ dsn string }

func (n nativeConnector) Connect(context.Context) (driver.Conn, error) {
	return nativeDriver{}.Open(n.dsn)
}

func (nativeConnector) Driver() driver.Driver { return nativeDriver{} }

// nativeDriver opens connections as the driver does, makes the settings
// of sqlitePragmas on them, registers gw_percentiles, and gives them the
// behaviour of the pure-Go engine's (see nativeConn).
type nativeDriver struct{}

// sqliteDriver is the driver, with nativeDriver's setup of a connection.
var sqliteDriver = &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
	ctx := context.Background()
	for _, p := range sqlitePragmas {
		if _, err := c.ExecContext(ctx, "PRAGMA "+p.name+" = "+p.value, nil); err != nil {
			return err
		}
	}
	return c.RegisterAggregator("gw_percentiles", func() *percentilesAgg { return new(percentilesAgg) }, true)
}}

func (nativeDriver) Open(dsn string) (driver.Conn, error) {
	c, err := sqliteDriver.Open(dsn)
	if err != nil {
		return nil, err
	}
	return &nativeConn{c.(*sqlite3.SQLiteConn)}, nil
}

// nativeConn is a connection of the driver that writes times as the
// pure-Go engine does, as text in sqliteTimeFormat (the driver's own
// format does not sort as text), and begins read-only transactions as
// it does: deferred (BEGIN IMMEDIATE would take the write lock) and
// with writes refused. The driver reads the times back, as UTC, from
// the columns declared TIMESTAMP.
type nativeConn struct{ *sqlite3.SQLiteConn }

// CheckNamedValue converts an argument as database/sql does, and a time
// to its text.
func (*nativeConn) CheckNamedValue(nv *driver.NamedValue) error {
	v, err := driver.DefaultParameterConverter.ConvertValue(nv.Value)
	if err != nil {
		return err
	}
	if t, ok := v.(time.Time); ok {
		v = t.Format(sqliteTimeFormat)
	}
	nv.Value = v
	return nil
}

// BeginTx begins a transaction: BEGIN IMMEDIATE for a read-write one
// (_txlock), BEGIN with query_only on for a read-only one.
func (c *nativeConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if !opts.ReadOnly {
		return c.SQLiteConn.BeginTx(ctx, opts)
	}
	if _, err := c.ExecContext(ctx, `BEGIN`, nil); err != nil {
		return nil, err
	}
	tx := nativeReadTx{c.SQLiteConn}
	if _, err := c.ExecContext(ctx, `PRAGMA query_only = on`, nil); err != nil {
		return nil, errors.Join(err, tx.Rollback())
	}
	return tx, nil
}

// nativeReadTx is a read-only transaction of nativeConn.BeginTx.
type nativeReadTx struct{ c *sqlite3.SQLiteConn }

func (t nativeReadTx) Commit() error { return t.end(`COMMIT`) }

func (t nativeReadTx) Rollback() error { return t.end(`ROLLBACK`) }

// end ends the transaction with stmt (rolling it back if that fails) and
// lets the connection write again.
func (t nativeReadTx) end(stmt string) error {
	ctx := context.Background()
	_, err := t.c.ExecContext(ctx, stmt, nil)
	if err != nil && !t.c.AutoCommit() {
		_, rerr := t.c.ExecContext(ctx, `ROLLBACK`, nil)
		err = errors.Join(err, rerr)
	}
	if _, perr := t.c.ExecContext(ctx, `PRAGMA query_only = off`, nil); perr != nil {
		err = errors.Join(err, perr, driver.ErrBadConn)
	}
	return err
}

// percentilesAgg is gw_percentiles as the driver calls it.
type percentilesAgg struct{ percentiles }

// Step adds a value, an integer (latency_us); a real is truncated and
// anything else counts as 0, as SQLite's sqlite3_value_int64 does.
func (p *percentilesAgg) Step(v any) {
	switch v := v.(type) {
	case int64:
		p.add(v)
	case float64:
		p.add(int64(v))
	default:
		p.add(0)
	}
}

// Done returns the value: the text of the percentiles, nil (NULL) over
// no row.
func (p *percentilesAgg) Done() any {
	v, ok := p.text()
	if !ok {
		return nil
	}
	return v
}

// addLogsSQLite inserts recs on conn, in the transaction open on it,
// and returns how many were stored: fewer than len(recs) when some ids
// were stored already.
//
// It runs the INSERTs on the driver's connection (conn.Raw), eight
// records to a prepared INSERT and the rest one by one, rather than
// through database/sql, which would check and convert each of the 35
// values a record again. The statements are prepared once a batch (a
// batch is a 50 ms window's records under load). An INSERT runs as a
// query: the driver binds a query's arguments and takes its first step
// in one call into C, where a run binds each argument in a call of its
// own (two fifths of AddLogs's CPU). A text or integer equal to the one
// its parameter had in the previous run keeps its boxed value (see
// logArgs). How many records went in is the change in the connection's
// count of changed rows (request_logs has no trigger on INSERT).
func (s *Store) addLogsSQLite(conn *sql.Conn, recs []*gateway.RequestLog) (int, error) {
	stored := 0
	err := conn.Raw(func(dc any) error {
		c, ok := dc.(*nativeConn)
		if !ok {
			return errors.New("not a SQLite connection")
		}
		// The driver runs a statement of a context that may end on a
		// goroutine of its own, to interrupt it; the records are stored
		// whole or not at all, as on the pure-Go engine.
		ctx := context.Background()
		before, err := totalChanges(ctx, c)
		if err != nil {
			return err
		}
		err = eachLogInsert(recs, func(q string, rows int, recs []*gateway.RequestLog) error {
			ds, err := c.PrepareContext(ctx, q)
			if err != nil {
				return err
			}
			st := ds.(driver.StmtQueryContext)
			args := newLogArgs(rows)
			for i := 0; i < len(recs); i += rows {
				for j, r := range recs[i : i+rows] {
					args.set(r, j*logColumnCount)
				}
				res, err := st.QueryContext(ctx, args)
				if err == nil {
					err = res.Close()
				}
				if err != nil {
					ds.Close()
					return err
				}
			}
			return ds.Close()
		})
		if err != nil {
			return err
		}
		after, err := totalChanges(ctx, c)
		stored = int(after - before)
		return err
	})
	return stored, err
}

// totalChanges returns how many rows the statements of c have inserted,
// changed or deleted since it opened.
func totalChanges(ctx context.Context, c *nativeConn) (int64, error) {
	rows, err := c.QueryContext(ctx, `SELECT total_changes()`, nil)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if err := rows.Next(v); err != nil {
		return 0, err
	}
	n, _ := v[0].(int64)
	return n, nil
}

// logArgs are the arguments of an INSERT of records' logColumns,
// numbered in their order from 1, one record after another.
type logArgs []driver.NamedValue

// newLogArgs returns the logArgs of an INSERT of rows records.
func newLogArgs(rows int) logArgs {
	a := make(logArgs, rows*logColumnCount)
	for i := range a {
		a[i].Ordinal = i + 1
	}
	return a
}

// set sets the values of r as the parameters from off+1 on. A value
// equal to the one there is not boxed again: most columns repeat from
// record to record (workspace, key, provider, model, method, path, the
// empty ones).
func (a logArgs) set(r *gateway.RequestLog, off int) {
	texts, ints, cost := logFields(r)
	for _, t := range texts {
		v := &a[off+t.i-1].Value
		if old, ok := (*v).(string); !ok || old != t.v {
			*v = t.v
		}
	}
	for _, n := range ints {
		v := &a[off+n.i-1].Value
		if old, ok := (*v).(int64); !ok || old != n.v {
			*v = n.v
		}
	}
	a[off+logCostParam-1].Value = cost
}
