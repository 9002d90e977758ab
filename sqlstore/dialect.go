package sqlstore

import (
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lib/pq"
)

// dialect is the kind of database a Store runs on.
type dialect int

const (
	dialectSQLite dialect = iota
	dialectPostgres
)

func (d dialect) String() string {
	if d == dialectPostgres {
		return "postgres"
	}
	return "sqlite"
}

// sqliteBusyTimeout is how long, in milliseconds, a SQLite connection
// waits for another connection's (or process's) write lock before it
// fails with SQLITE_BUSY.
const sqliteBusyTimeout = 10000

// openDB opens the database dsn names, without touching it yet.
//
// SQLite connections run in WAL mode (readers never wait for the writer),
// with synchronous=FULL (a committed write survives a crash of the
// process and of the machine), a busy timeout, foreign keys enforced, and
// BEGIN IMMEDIATE for read-write transactions, so that two writers queue
// on the busy timeout instead of one failing when it upgrades its read
// lock.
func openDB(dsn string) (*sql.DB, dialect, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		c, err := postgresConnector(dsn)
		if err != nil {
			return nil, 0, err
		}
		return sql.OpenDB(c), dialectPostgres, nil
	}
	path := strings.TrimPrefix(dsn, "sqlite:")
	switch {
	case path == "":
		return nil, 0, errors.New("sqlstore: empty database name: want a file path, sqlite:PATH or postgres://…")
	case path == ":memory:" || strings.HasPrefix(path, "file:"):
		return nil, 0, errors.New("sqlstore: " + path + " is not a database file path: want a file path, sqlite:PATH or postgres://… (memstore.Store keeps state in memory)")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, 0, fmt.Errorf("sqlstore: %w", err)
	}
	// The file holds key digests and sealed credentials: create it
	// readable by its owner only. openSQLite sees that the -wal file,
	// which holds the latest writes, and the -shm file are made so too.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, 0, fmt.Errorf("sqlstore: %w", err)
	}
	f.Close()
	db, err := openSQLite(abs)
	if err != nil {
		return nil, 0, fmt.Errorf("sqlstore: %w", err)
	}
	// Each connection is a SQLite instance of its own; the store needs
	// few. They all stay open once made: opening one parses the schema
	// again, and with fewer idle than open, concurrent reads (prompt
	// completions, say) closed and reopened connections all the time.
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	return db, dialectSQLite, nil
}

// postgresConnector returns the connector of the Postgres URL dsn, for
// the driver github.com/lib/pq. Without an sslmode in the URL (or
// PGSSLMODE), it prefers TLS and falls back to a plain connection, as
// libpq does, rather than the driver's default of requiring TLS. Its
// errors never quote the URL, which may hold a password.
func postgresConnector(dsn string) (*pq.Connector, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, errors.New("sqlstore: malformed postgres:// URL")
	}
	if q := u.Query(); !q.Has("sslmode") && os.Getenv("PGSSLMODE") == "" {
		q.Set("sslmode", "prefer")
		u.RawQuery = q.Encode()
	}
	c, err := pq.NewConnector(u.String())
	if err != nil {
		msg := err.Error()
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
		return nil, errors.New("sqlstore: " + msg)
	}
	return c, nil
}

// sqlitePragmas are the settings of every SQLite connection, made in
// this order when it opens (page_size before journal_mode: the first
// write of a new database fixes its page size).
//
// A new database has pages of 8 KiB rather than 4: the request logs'
// rows are wide, and with twice as many to a page their table and
// indexes split a page half as often. AddLogs takes 17% less CPU a
// record. (A database made before keeps its page size: SQLite
// changes it only by rewriting the whole file outside WAL mode.)
//
// The WAL is copied back into the database (checkpointed) every 4,096
// pages (32 MiB) rather than SQLite's 1,000: the request logs' commits
// rewrite the same pages (a table's and its indexes' last ones) again
// and again, and a page is copied back once per checkpoint however
// often it was rewritten. Checkpoints took a sixth of AddLogs's CPU.
//
// Each connection caches 512 KiB of pages rather than SQLite's 2 MiB:
// the pages AddLogs rewrites fit, the analytics over a million
// records scan far more than either and take the same time (the
// operating system caches the file), and the server's peak memory is
// 4 MB smaller.
var sqlitePragmas = [...]struct{ name, value string }{
	{"busy_timeout", strconv.Itoa(sqliteBusyTimeout)},
	{"page_size", "8192"},
	{"journal_mode", "wal"},
	{"synchronous", "full"},
	{"foreign_keys", "on"},
	{"wal_autocheckpoint", "4096"},
	{"cache_size", "-512"},
}

// sqliteURI returns the URI of the database file abs with the query q.
func sqliteURI(abs string, q url.Values) string {
	u := url.URL{Scheme: "file", OmitHost: true, Path: abs, RawQuery: q.Encode()}
	return u.String()
}

// sqliteTimeFormat is the layout of times in SQLite: RFC 3339, UTC (the
// store writes only UTC times), to the microsecond, fixed width.
const sqliteTimeFormat = "2006-01-02T15:04:05.000000Z07:00"

// rebind turns a query written with Postgres's $1, $2… placeholders into
// the dialect's: SQLite's ?1, ?2… bind by the same numbers. Queries never
// hold a $ elsewhere.
func (d dialect) rebind(q string) string {
	if d == dialectSQLite {
		return strings.ReplaceAll(q, "$", "?")
	}
	return q
}
