package sqlstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/lib/pq" // the "postgres" driver, for the tests' own admin connections
	"github.com/modelgateway/gateway/sqlstore"
)

// testPostgres is the Postgres server of this test binary: started on
// first use, stopped by TestMain.
var testPostgres pgServer

func TestMain(m *testing.M) {
	code := m.Run()
	testPostgres.stop()
	os.Exit(code)
}

// pgServer is a throwaway Postgres server (or the one POSTGRES_URL names),
// on which each test gets a database of its own.
type pgServer struct {
	once     sync.Once
	adminURL string // a connection URL to its postgres database
	skip     string // why Postgres tests skip, when adminURL is empty

	// Set when this binary started the server.
	dir   string   // temporary directory: data/, the socket and the log
	pgCtl string   // path of pg_ctl
	runAs []string // command prefix running a program as the postgres user, when root
}

// postgresDSN returns the URL of a new, empty database for t, dropped
// when t ends. It skips t when no Postgres server is available.
func postgresDSN(t testing.TB) string {
	t.Helper()
	testPostgres.once.Do(testPostgres.start)
	if testPostgres.adminURL == "" {
		t.Skip(testPostgres.skip)
	}
	admin, err := sql.Open("postgres", testPostgres.adminURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var b [6]byte
	rand.Read(b[:])
	name := "sqlstore_test_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(`CREATE DATABASE ` + name); err != nil {
		t.Fatalf("creating a test database (the POSTGRES_URL user needs CREATEDB): %v", err)
	}
	t.Cleanup(func() {
		admin, err := sql.Open("postgres", testPostgres.adminURL)
		if err != nil {
			t.Error(err)
			return
		}
		defer admin.Close()
		if _, err := admin.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`); err != nil {
			t.Errorf("dropping the test database: %v", err)
		}
	})
	u, err := url.Parse(testPostgres.adminURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// start finds a server: POSTGRES_URL, else initdb and pg_ctl on PATH or
// under /usr/lib/postgresql/*/bin, run on a free loopback port with a
// data directory in a temporary directory. Postgres refuses to run as
// root, so as root they run as the postgres user (runuser, else su).
func (p *pgServer) start() {
	if u := os.Getenv("POSTGRES_URL"); u != "" {
		p.adminURL = u
		return
	}
	bin := postgresBinDir()
	if bin == "" {
		p.skip = "no PostgreSQL found (initdb and pg_ctl on PATH or under /usr/lib/postgresql/*/bin): install it (apt-get install postgresql) or set POSTGRES_URL"
		return
	}
	var uid, gid int = -1, -1
	if os.Geteuid() == 0 {
		pgUser, err := user.Lookup("postgres")
		if err != nil {
			p.skip = "running as root, and there is no postgres user to run PostgreSQL as (Postgres refuses root): set POSTGRES_URL"
			return
		}
		uid, _ = strconv.Atoi(pgUser.Uid)
		gid, _ = strconv.Atoi(pgUser.Gid)
		if path, err := exec.LookPath("runuser"); err == nil {
			p.runAs = []string{path, "-u", "postgres", "--"}
		} else if path, err := exec.LookPath("su"); err == nil {
			p.runAs = []string{path, "postgres", "-s", "/bin/sh", "-c", `exec "$0" "$@"`}
		} else {
			p.skip = "running as root without runuser or su to run PostgreSQL as the postgres user: set POSTGRES_URL"
			return
		}
	}
	dir, err := os.MkdirTemp("", "sqlstore-pg-")
	if err != nil {
		p.skip = "PostgreSQL: " + err.Error()
		return
	}
	p.dir = dir
	if uid >= 0 {
		if err := os.Chown(dir, uid, gid); err != nil {
			p.skip = "PostgreSQL: " + err.Error()
			return
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := p.run(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"); err != nil {
		p.skip = fmt.Sprintf("PostgreSQL: initdb: %v\n%s", err, out)
		return
	}
	p.pgCtl = filepath.Join(bin, "pg_ctl")
	var lastErr string
	for range 3 { // another process may take the free port first
		port, err := freePort()
		if err != nil {
			lastErr = err.Error()
			continue
		}
		opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off", port, dir)
		out, err := p.run(p.pgCtl, "-D", data, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "-o", opts, "start")
		if err == nil {
			p.adminURL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
			return
		}
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		lastErr = fmt.Sprintf("%v\n%s\n%s", err, out, log)
	}
	p.skip = "PostgreSQL: pg_ctl start: " + lastErr
}

// run runs a Postgres program, as the postgres user when root.
func (p *pgServer) run(name string, args ...string) ([]byte, error) {
	argv := append(append(p.runAs[:len(p.runAs):len(p.runAs)], name), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = os.TempDir() // a directory the postgres user may enter
	return cmd.CombinedOutput()
}

// stop stops the server this binary started, and removes its files.
func (p *pgServer) stop() {
	if p.pgCtl != "" {
		if out, err := p.run(p.pgCtl, "-D", filepath.Join(p.dir, "data"), "-m", "immediate", "-w", "stop"); err != nil {
			fmt.Fprintf(os.Stderr, "sqlstore tests: stopping PostgreSQL: %v\n%s", err, out)
		}
	}
	if p.dir != "" {
		os.RemoveAll(p.dir)
	}
}

// postgresBinDir returns the directory holding initdb and pg_ctl: PATH's,
// else the newest /usr/lib/postgresql/*/bin, else "".
func postgresBinDir() string {
	if initdb, err := exec.LookPath("initdb"); err == nil {
		if dir := filepath.Dir(initdb); exists(filepath.Join(dir, "pg_ctl")) {
			return dir
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { // newest version first
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, dir := range dirs {
		if exists(filepath.Join(dir, "initdb")) && exists(filepath.Join(dir, "pg_ctl")) {
			return dir
		}
	}
	return ""
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// sqliteDSN returns the path of a new SQLite file in t's temporary
// directory.
func sqliteDSN(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "gateway.db")
}

// backends are the databases every table-driven test runs against.
var backends = []struct {
	name string
	dsn  func(testing.TB) string
}{
	{"sqlite", sqliteDSN},
	{"postgres", postgresDSN},
}

// eachBackend runs f as a subtest per backend, each with a new database.
func eachBackend(t *testing.T, f func(t *testing.T, dsn string)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { f(t, b.dsn(t)) })
	}
}

// testKey is the master key of the tests.
var testKey = bytes.Repeat([]byte{0x42}, sqlstore.MasterKeySize)

// openStore opens dsn with the test key (unless opts names one) and a
// long refresh interval (unless opts names one), closed when t ends.
func openStore(t testing.TB, dsn string, opts sqlstore.Options) *sqlstore.Store {
	t.Helper()
	if opts.MasterKey == nil {
		opts.MasterKey = testKey
	}
	if opts.RefreshInterval == 0 {
		opts.RefreshInterval = time.Hour // tests that want the background refresh say so
	}
	s, err := sqlstore.Open(context.Background(), dsn, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// rawDB opens dsn with the driver alone, for tests that look under the
// store or tamper with it. Both of sqlstore's SQLite engines register
// their driver as "sqlite3".
func rawDB(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	driver, name := "sqlite3", strings.TrimPrefix(dsn, "sqlite:")
	if strings.HasPrefix(dsn, "postgres") {
		driver, name = "postgres", dsn
	}
	db, err := sql.Open(driver, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// isPostgres reports whether dsn names a Postgres database.
func isPostgres(dsn string) bool { return strings.HasPrefix(dsn, "postgres") }

// rebind writes a test's $n query in the dialect of dsn.
func rebind(dsn, q string) string {
	if isPostgres(dsn) {
		return q
	}
	return strings.ReplaceAll(q, "$", "?")
}

// waitFor polls cond until it holds or the deadline passes, and returns
// how long it took. It is for waiting on the background refresh, which
// runs on its own clock.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("%s: not seen within %v", what, within)
		case <-tick.C:
		}
	}
	return time.Since(start)
}
