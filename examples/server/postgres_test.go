package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/modelgateway/gateway/sqlstore"
)

// startPostgres starts a throwaway PostgreSQL server for t (initdb and
// pg_ctl on PATH or under /usr/lib/postgresql/*/bin, data in a temporary
// directory, a free loopback port), stopped and removed when t ends, and
// returns the URL of its postgres database. Postgres refuses to run as
// root, so as root it runs as the postgres user, through runuser. It
// skips t, saying why, when that cannot be done. (POSTGRES_URL is not
// used: the server's tables would stay in that database.) This is the
// logic of sqlstore's test helpers, cut down to one server per test.
func startPostgres(t *testing.T) string {
	t.Helper()
	bin := postgresBinDir()
	if bin == "" {
		t.Skip("no PostgreSQL found (initdb and pg_ctl on PATH or under /usr/lib/postgresql/*/bin); install it (apt-get install postgresql) to test -db postgres://")
	}
	var runAs []string
	uid, gid := -1, -1
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		runuser, rerr := exec.LookPath("runuser")
		if err != nil || rerr != nil {
			t.Skip("running as root without a postgres user and runuser to run PostgreSQL as (it refuses root)")
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
		runAs = []string{runuser, "-u", "postgres", "--"}
	}
	pg := func(name string, args ...string) error {
		argv := append(append(runAs[:len(runAs):len(runAs)], filepath.Join(bin, name)), args...)
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = os.TempDir() // a directory the postgres user may enter
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", name, err, out)
		}
		return nil
	}
	// t.TempDir's parents are private to this user: the postgres user
	// could not enter them.
	dir, err := os.MkdirTemp("", "gateway-server-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if uid >= 0 {
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	if err := pg("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"); err != nil {
		t.Fatal(err)
	}
	var lastErr error
	for range 3 { // another process may take the free port first
		port := freePort(t)
		opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off", port, dir)
		if lastErr = pg("pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "-o", opts, "start"); lastErr == nil {
			t.Cleanup(func() {
				if err := pg("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"); err != nil {
					t.Errorf("stopping PostgreSQL: %v", err)
				}
			})
			return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
		}
	}
	log, _ := os.ReadFile(filepath.Join(dir, "log"))
	t.Fatalf("PostgreSQL did not start: %v\n%s", lastErr, log)
	return ""
}

// postgresBinDir returns the directory holding initdb and pg_ctl: PATH's,
// else the newest /usr/lib/postgresql/*/bin, else "".
func postgresBinDir() string {
	if initdb, err := exec.LookPath("initdb"); err == nil {
		// PATH may hold a link to the real directory, whose other programs
		// initdb needs beside it.
		if target, err := filepath.EvalSymlinks(initdb); err == nil {
			initdb = target
		}
		if dir := filepath.Dir(initdb); fileExists(filepath.Join(dir, "pg_ctl")) {
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
		if fileExists(filepath.Join(dir, "initdb")) && fileExists(filepath.Join(dir, "pg_ctl")) {
			return dir
		}
	}
	return ""
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// freePort returns a loopback port nothing listens on at the moment.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestRunPostgres: on a Postgres -db the server needs GATEWAY_MASTER_KEY,
// keeps what the control plane wrote across a restart, and refuses
// another master key at start-up.
func TestRunPostgres(t *testing.T) {
	dsn := startPostgres(t)
	start := func(args ...string) error {
		return run(context.Background(), context.Background(), append([]string{"-addr", "127.0.0.1:0"}, args...), io.Discard, newLines())
	}

	t.Setenv(masterKeyEnv, "")
	if err := start("-db", dsn); err == nil || !strings.Contains(err.Error(), masterKeyEnv) {
		t.Errorf("without %s: run() = %v, want an error naming it", masterKeyEnv, err)
	}

	t.Setenv(masterKeyEnv, newMasterKey())
	t.Setenv("GATEWAY_API_KEY", "gw-pg-admin")
	r := startRun(t, "-db", dsn)
	if status, body := probe(t, "GET", r.base, "/readyz"); status != 200 {
		t.Errorf("/readyz on Postgres: %d %q, want 200", status, body)
	}
	status, body := postJSON(t, r.base+"/v1/api-keys/workspace/service", "gw-pg-admin", `{"name": "pg", "workspace_id": "default", "scopes": ["completions.write"]}`)
	var created struct{ Key string }
	if err := json.Unmarshal([]byte(body), &created); status != http.StatusOK || err != nil || created.Key == "" {
		t.Fatalf("creating an API key: %d %s", status, body)
	}
	r.shutdown()
	if err := r.wait(); err != nil {
		t.Fatal(err)
	}

	r = startRun(t, "-db", dsn)
	res := call(t, "GET", r.base+"/v1/batches", "", map[string]string{"x-gateway-api-key": created.Key})
	if body := readAll(t, res); res.StatusCode != http.StatusBadRequest || errorCode(t, body) != "missing_provider" {
		t.Errorf("the key created before the restart: %d %s, want 400 missing_provider (authenticated)", res.StatusCode, body)
	}
	r.shutdown()
	if err := r.wait(); err != nil {
		t.Fatal(err)
	}

	t.Setenv(masterKeyEnv, newMasterKey())
	if err := start("-db", dsn); !errors.Is(err, sqlstore.ErrWrongMasterKey) {
		t.Errorf("under another %s: run() = %v, want %v", masterKeyEnv, err, sqlstore.ErrWrongMasterKey)
	}
}
