package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/sqlstore"
)

// newMasterKey returns a random master key as GATEWAY_MASTER_KEY takes it.
func newMasterKey() string {
	b := make([]byte, sqlstore.MasterKeySize)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// writeFile writes data to a new file name in dir, mode 0600, and returns
// its path.
func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// dirEntries returns the names in dir.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestRunStoreErrors: a -db, master key or -redis the server cannot use
// stops it before it listens, with an error naming the flag, variable or
// file, never a key or password, and without creating a database.
func TestRunStoreErrors(t *testing.T) {
	const password = "pw-never-printed"
	for _, tc := range []struct {
		name      string
		masterKey string // GATEWAY_MASTER_KEY
		keyFile   string // contents of the database's key file, if any
		keyMode   os.FileMode
		args      func(db string) []string
		want      []string // in the error text
	}{
		{name: "unknown scheme", args: func(string) []string { return []string{"-db", "mysql://db/gw"} },
			want: []string{"-db", `"mysql"`}},
		{name: "empty sqlite path", args: func(string) []string { return []string{"-db", "sqlite:"} },
			want: []string{"-db", "empty"}},
		{name: "sqlite URI", args: func(string) []string { return []string{"-db", "file:gw.db?mode=rwc"} },
			want: []string{"-db", "file:…"}},
		{name: "-demo with a database", args: func(db string) []string { return []string{"-demo", "-db", db} },
			want: []string{"-demo", "-db :memory:"}},
		{name: "postgres without a master key",
			args: func(string) []string {
				return []string{"-db", "postgres://gw:" + password + "@127.0.0.1:1/gw?sslmode=disable"}
			},
			want: []string{"postgres://127.0.0.1:1/gw", "GATEWAY_MASTER_KEY"}},
		{name: "malformed GATEWAY_MASTER_KEY", masterKey: "not-a-key-" + password,
			args: func(db string) []string { return []string{"-db", db} },
			want: []string{"GATEWAY_MASTER_KEY", "32 bytes"}},
		{name: "malformed key file", keyFile: "0123 not hex " + password, keyMode: 0o600,
			args: func(db string) []string { return []string{"-db", db} },
			want: []string{"gw.db.key", "does not hold a key"}},
		{name: "key file readable by others", keyFile: newMasterKey() + "\n", keyMode: 0o644,
			args: func(db string) []string { return []string{"-db", "sqlite:" + db} },
			want: []string{"gw.db.key", "0644", "chmod 600"}},
		{name: "bad -redis URL", args: func(db string) []string { return []string{"-db", db, "-redis", "ftp://cache"} },
			want: []string{"-redis", "scheme"}},
		{name: "unreachable -redis", args: func(db string) []string {
			return []string{"-db", db, "-redis", "redis://:" + password + "@127.0.0.1:1/0"}
		},
			want: []string{"-redis", "127.0.0.1:1", "does not answer"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(masterKeyEnv, tc.masterKey)
			dir := t.TempDir()
			db := filepath.Join(dir, "gw.db")
			if tc.keyFile != "" {
				path := writeFile(t, dir, "gw.db.key", tc.keyFile)
				if err := os.Chmod(path, tc.keyMode); err != nil {
					t.Fatal(err)
				}
			}
			stderr := newLines()
			args := append([]string{"-addr", "127.0.0.1:0"}, tc.args(db)...)
			err := run(context.Background(), context.Background(), args, io.Discard, stderr)
			if err == nil || !strings.HasPrefix(err.Error(), "gateway: ") {
				t.Fatalf("run() = %v, want an error starting gateway:", err)
			}
			t.Logf("run() = %v", err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("run() = %v, want it to name %s", err, w)
				}
			}
			if strings.Contains(err.Error()+stderr.String(), password) {
				t.Errorf("a secret was printed: %v\n%s", err, stderr)
			}
			if strings.Contains(stderr.String(), "listening") {
				t.Errorf("the server started:\n%s", stderr)
			}
			if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a database was created (%v)", err)
			}
		})
	}
}

// TestRunDefaultDB: the -db a server runs with, given its flags: gateway.db
// with or without -config; :memory: only for -demo without -db.
func TestRunDefaultDB(t *testing.T) {
	for _, tc := range []struct {
		value string
		set   bool
		demo  bool
		want  string
	}{
		{"gateway.db", false, false, "gateway.db"},
		{"gateway.db", false, true, ":memory:"},
		{"x.db", true, false, "x.db"},
		{":memory:", true, true, ":memory:"},
		{":memory:", true, false, ":memory:"},
	} {
		if got := chooseDB(tc.value, tc.set, tc.demo); got != tc.want {
			t.Errorf("chooseDB(%q, set %v, demo %v) = %q, want %q", tc.value, tc.set, tc.demo, got, tc.want)
		}
	}
}

// TestReadyzStore: /readyz answers 503 while the store does not answer,
// and 200 again once it does; /healthz is not affected.
func TestReadyzStore(t *testing.T) {
	var down atomic.Bool
	ping := func(context.Context) error {
		if down.Load() {
			return errors.New("database unreachable")
		}
		return nil
	}
	var ready atomic.Bool
	ready.Store(true)
	h := health(&ready, ping, http.NotFoundHandler())
	probe := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec.Code, rec.Body.String()
	}
	for _, tc := range []struct {
		down       bool
		readyz     int
		readyzBody string
	}{
		{false, 200, "ok\n"},
		{true, 503, "unavailable\n"},
		{false, 200, "ok\n"},
	} {
		down.Store(tc.down)
		if code, body := probe("/readyz"); code != tc.readyz || body != tc.readyzBody {
			t.Errorf("store down %v: /readyz %d %q, want %d %q", tc.down, code, body, tc.readyz, tc.readyzBody)
		}
		if code, _ := probe("/healthz"); code != 200 {
			t.Errorf("store down %v: /healthz %d, want 200", tc.down, code)
		}
	}
}

// TestRunDurableInProcess runs the server in-process on a SQLite file:
// /readyz pings it, and the control plane's writes are kept in it.
func TestRunDurableInProcess(t *testing.T) {
	t.Setenv(masterKeyEnv, "")
	t.Setenv("GATEWAY_API_KEY", "gw-in-process")
	db := filepath.Join(t.TempDir(), "gw.db")
	r := startRun(t, "-db", db)
	if status, body := probe(t, "GET", r.base, "/readyz"); status != 200 || body != "ok\n" {
		t.Errorf("/readyz on a SQLite store: %d %q, want 200 ok", status, body)
	}
	res := call(t, "GET", r.base+"/v1/batches", "", map[string]string{"x-gateway-api-key": "gw-in-process"})
	if body := readAll(t, res); res.StatusCode != http.StatusBadRequest || errorCode(t, body) != "missing_provider" {
		t.Errorf("with GATEWAY_API_KEY: %d %s, want 400 missing_provider", res.StatusCode, body)
	}
	r.shutdown()
	if err := r.wait(); err != nil {
		t.Fatal(err)
	}
	if out := r.stderr.String(); strings.Contains(out, "gw-in-process") || strings.Contains(out, "generated") {
		t.Errorf("stderr mentions a key:\n%s", out)
	}
	// The key is in the database, the organisation admin key.
	s, err := sqlstore.Open(context.Background(), db, sqlstore.Options{MasterKey: readMasterKeyFile(t, db+".key")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k, err := s.APIKey(context.Background(), gateway.HashAPIKey("gw-in-process"))
	if err != nil || k.ID != "key-default" || k.WorkspaceID != "" || k.Type != gateway.KeyOrganisation || k.Role != gateway.RoleAdmin {
		t.Errorf("stored key: %+v, %v; want key-default, organisation admin", k, err)
	}
}

// readMasterKeyFile reads the key file at path, checking that it is
// private to its owner.
func readMasterKeyFile(t *testing.T, path string) []byte {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("the master key file: %v", err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("%s has mode %#o, want 0600", path, perm)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	k, err := sqlstore.ParseMasterKey(string(data))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return k
}

// postJSON sends body to url with the gateway key and returns the status
// and the response body.
func postJSON(t *testing.T, url, key, body string) (int, string) {
	t.Helper()
	res := call(t, "POST", url, body, map[string]string{"x-gateway-api-key": key, "Content-Type": "application/json"})
	return res.StatusCode, readAll(t, res)
}

// TestServerDurableState drives the built binary on a SQLite file: what
// the control plane answered 2xx for (an API key, a virtual key, their
// audit records) survives kill -9, the master key
// file is created once (mode 0600) and reused, another key is refused at
// start-up, and -config without -db keeps its state in gateway.db.
func TestServerDurableState(t *testing.T) {
	bin := buildServer(t)

	t.Run("a 2xx write survives kill -9", func(t *testing.T) {
		dir := t.TempDir()
		db := filepath.Join(dir, "gw.db")
		upKey, adminKey := secret("sk-up-"), secret("gw-admin-")
		fake := newProvider(t, upKey)
		fakeURL, err := url.Parse(fake.URL)
		if err != nil {
			t.Fatal(err)
		}
		cfg := writeFile(t, t.TempDir(), "gateway.json", fmt.Sprintf(`{
			"api_keys": [{"id": "key-admin", "key": "${E2E_ADMIN_KEY}", "workspace_id": "ws-1", "role": "admin"}],
			"custom_hosts": {"allow": [%q]}}`, fakeURL.Host))
		env := []string{"E2E_ADMIN_KEY=" + adminKey}
		args := []string{"-addr", "127.0.0.1:0", "-drain", "0s", "-db", db, "-config", cfg}

		p1 := startProc(t, bin, env, args...)
		base := baseURL(t, p1.stderr, p1.done)
		keyFile := db + ".key"
		p1.stderr.wait(t, "key file message", p1.done, func(s string) bool {
			return s == "gateway: created master key file "+keyFile+"; back it up with the database"
		})
		masterKey := readMasterKeyFile(t, keyFile)

		status, body := postJSON(t, base+"/v1/api-keys/workspace/service", adminKey, `{"name": "survivor", "scopes": ["completions.write"]}`)
		var created struct{ ID, Key string }
		if err := json.Unmarshal([]byte(body), &created); status != http.StatusOK || err != nil || created.Key == "" {
			t.Fatalf("creating an API key: %d %s", status, body)
		}
		status, body = postJSON(t, base+"/v1/virtual-keys", adminKey,
			fmt.Sprintf(`{"name": "Survivor", "slug": "survivor", "provider": "openai", "key": %q, "base_url": %q}`, upKey, fake.URL))
		if status/100 != 2 {
			t.Fatalf("creating a virtual key: %d %s", status, body)
		}
		if err := p1.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		p1.exit(t)

		p2 := startProc(t, bin, env, args...)
		base = baseURL(t, p2.stderr, p2.done)
		res := call(t, "GET", base+"/v1/batches", "", map[string]string{"x-gateway-api-key": created.Key})
		if body := readAll(t, res); res.StatusCode != http.StatusBadRequest || errorCode(t, body) != "missing_provider" {
			t.Errorf("the key created before kill -9: %d %s, want 400 missing_provider (authenticated)", res.StatusCode, body)
		}
		res = call(t, "POST", base+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
			map[string]string{"x-gateway-api-key": created.Key, "x-gateway-virtual-key": "survivor", "Content-Type": "application/json"})
		if body := readAll(t, res); res.StatusCode != http.StatusOK {
			t.Errorf("through the virtual key created before kill -9: %d %s, want 200", res.StatusCode, body)
		}
		if got := lastReceived(t, fake).Authorization; got != "Bearer "+upKey {
			t.Errorf("the provider got Authorization %q, want the virtual key's credential", got)
		}
		// The audit log is the database's too: both writes are in it.
		res = call(t, "GET", base+"/v1/audit-logs", "", map[string]string{"x-gateway-api-key": adminKey})
		var audit struct{ Total int }
		if body := readAll(t, res); res.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &audit) != nil || audit.Total != 2 {
			t.Errorf("GET /audit-logs after kill -9: %d %s, want 200 and the 2 writes", res.StatusCode, body)
		}
		if err := p2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := p2.exit(t); code != 0 {
			t.Errorf("exit code %d, want 0; stderr:\n%s", code, p2.stderr)
		}
		if strings.Contains(p2.stderr.String(), "created master key file") {
			t.Errorf("the restart created a key file again:\n%s", p2.stderr)
		}
		if again := readMasterKeyFile(t, keyFile); !bytes.Equal(again, masterKey) {
			t.Error("the key file changed on restart")
		}

		p3 := startProc(t, bin, append(env, "GATEWAY_MASTER_KEY="+newMasterKey()), args...)
		if code := p3.exit(t); code == 0 {
			t.Errorf("started under another GATEWAY_MASTER_KEY: exit 0")
		}
		if out := p3.stderr.String(); !strings.Contains(out, "GATEWAY_MASTER_KEY is not the one") || strings.Contains(out, "listening") {
			t.Errorf("under another GATEWAY_MASTER_KEY, stderr does not say so, or the server started:\n%s", out)
		}

		out := p1.stdout.String() + p1.stderr.String() + p2.stdout.String() + p2.stderr.String() + p3.stderr.String()
		for name, s := range map[string]string{"master key": hex.EncodeToString(masterKey), "admin key": adminKey,
			"created key": created.Key, "virtual key credential": upKey} {
			if strings.Contains(out, s) {
				t.Errorf("the %s appears in the output:\n%s", name, out)
			}
		}
	})

	t.Run("-config without -db keeps its state in gateway.db", func(t *testing.T) {
		dir := t.TempDir()
		cfg := writeFile(t, t.TempDir(), "gateway.json", `{"api_keys": [{"id": "k", "key": "gw-config-admin", "role": "admin"}]}`)
		args := []string{"-addr", "127.0.0.1:0", "-drain", "0s", "-config", cfg}
		stateLine := "gateway: state kept in the SQLite database " + filepath.Join(dir, "gateway.db")
		p1 := startProcIn(t, dir, bin, nil, args...)
		base := baseURL(t, p1.stderr, p1.done)
		p1.stderr.wait(t, "state line", p1.done, func(s string) bool { return s == stateLine })
		status, body := postJSON(t, base+"/v1/api-keys/workspace/service", "gw-config-admin",
			`{"name": "made over HTTP", "workspace_id": "ws-1", "scopes": ["completions.write"]}`)
		var created struct{ Key string }
		if err := json.Unmarshal([]byte(body), &created); status != http.StatusOK || err != nil || created.Key == "" {
			t.Fatalf("creating an API key: %d %s", status, body)
		}
		p1.cmd.Process.Signal(syscall.SIGTERM)
		if code := p1.exit(t); code != 0 {
			t.Errorf("exit code %d, want 0; stderr:\n%s", code, p1.stderr)
		}

		p2 := startProcIn(t, dir, bin, nil, args...)
		base = baseURL(t, p2.stderr, p2.done)
		p2.stderr.wait(t, "state line", p2.done, func(s string) bool { return s == stateLine })
		for _, key := range []string{created.Key, "gw-config-admin"} {
			res := call(t, "GET", base+"/v1/batches", "", map[string]string{"x-gateway-api-key": key})
			if body := readAll(t, res); res.StatusCode != http.StatusBadRequest || errorCode(t, body) != "missing_provider" {
				t.Errorf("after the restart: %d %s, want 400 missing_provider (authenticated)", res.StatusCode, body)
			}
		}
		p2.cmd.Process.Signal(syscall.SIGTERM)
		p2.exit(t)
		if out := p1.stderr.String() + p2.stderr.String(); strings.Contains(out, "generated") {
			t.Errorf("a key was generated beside the config file's:\n%s", out)
		}
		if names := dirEntries(t, dir); !slices.Contains(names, "gateway.db") || !slices.Contains(names, "gateway.db.key") {
			t.Errorf("the working directory holds %q, want gateway.db and its key file", names)
		}
	})

	t.Run("default database in the working directory", func(t *testing.T) {
		dir := t.TempDir()
		p1 := startProcIn(t, dir, bin, nil, "-addr", "127.0.0.1:0", "-drain", "0s")
		baseURL(t, p1.stderr, p1.done)
		line := p1.stderr.wait(t, "generated key", p1.done, func(s string) bool { return strings.Contains(s, "generated API key") })
		m := regexp.MustCompile(`generated API key (gw-[A-Za-z0-9]+) \(the organisation admin key key-default\), stored in gateway.db; it is not printed again$`).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("unexpected line %q", line)
		}
		p1.cmd.Process.Signal(syscall.SIGTERM)
		if code := p1.exit(t); code != 0 {
			t.Errorf("exit code %d, want 0; stderr:\n%s", code, p1.stderr)
		}
		readMasterKeyFile(t, filepath.Join(dir, "gateway.db.key"))

		p2 := startProcIn(t, dir, bin, nil, "-addr", "127.0.0.1:0", "-drain", "0s")
		base := baseURL(t, p2.stderr, p2.done)
		p2.stderr.wait(t, "stored keys line", p2.done, func(s string) bool { return s == "gateway: using the API keys stored in gateway.db" })
		res := call(t, "GET", base+"/v1/batches", "", map[string]string{"x-gateway-api-key": m[1]})
		if body := readAll(t, res); res.StatusCode != http.StatusBadRequest || errorCode(t, body) != "missing_provider" {
			t.Errorf("the key generated by the first run: %d %s, want 400 missing_provider", res.StatusCode, body)
		}
		p2.cmd.Process.Signal(syscall.SIGTERM)
		p2.exit(t)
		if out := p2.stderr.String(); strings.Contains(out, "generated") || strings.Contains(out, m[1]) {
			t.Errorf("the restart generated or printed a key:\n%s", out)
		}
	})
}
