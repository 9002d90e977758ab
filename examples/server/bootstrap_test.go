package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// send sends a control-plane request with key and returns the status and
// the body.
func send(t *testing.T, base, key, method, path, body string) (int, string) {
	t.Helper()
	hdr := map[string]string{"x-gateway-api-key": key}
	if body != "" {
		hdr["Content-Type"] = "application/json"
	}
	res := call(t, method, base+path, body, hdr)
	return res.StatusCode, readAll(t, res)
}

// authenticated reports whether key passes authentication: GET /v1/batches
// without a provider is then 400 missing_provider, else 401.
func authenticated(t *testing.T, base, key string) bool {
	t.Helper()
	status, body := send(t, base, key, "GET", "/v1/batches", "")
	switch {
	case status == http.StatusBadRequest && errorCode(t, body) == "missing_provider":
		return true
	case status == http.StatusUnauthorized:
		return false
	}
	t.Fatalf("GET /v1/batches: %d %s, want 400 missing_provider or 401", status, body)
	return false
}

// stop shuts r down and waits for run to return.
func (r *running) stop(t *testing.T) {
	t.Helper()
	r.shutdown()
	if err := r.wait(); err != nil {
		t.Fatal(err)
	}
}

// allScopesJSON is every scope, as the body of a key that holds them all.
const allScopesJSON = `["completions.write", "api_keys.read", "api_keys.write", "virtual_keys.read", "virtual_keys.write",
	"configs.read", "configs.write", "policies.read", "policies.write", "logs.read", "logs.write", "analytics.read",
	"workspaces.read", "workspaces.write", "audit_logs.read", "guardrails.read", "guardrails.write", "prompts.read", "prompts.write"]`

var generatedRE = regexp.MustCompile(`^gateway: generated API key (gw-[A-Za-z0-9]+) \(the organisation admin key key-default\)`)

// TestRunBootstrapOrganisationKey: a new database gets one generated
// organisation admin key, printed once, which can create workspaces and
// read the organisation-wide audit log; the next start on the database
// generates none and keeps it (docs/architecture.md, Trust).
func TestRunBootstrapOrganisationKey(t *testing.T) {
	t.Setenv(masterKeyEnv, "")
	t.Setenv(apiKeyEnv, "")
	db := filepath.Join(t.TempDir(), "gw.db")
	r := startRun(t, "-db", db)
	line := r.stderr.wait(t, "generated key", r.done, generatedRE.MatchString)
	key := generatedRE.FindStringSubmatch(line)[1]
	abs, _ := filepath.Abs(db)
	r.stderr.wait(t, "state line", r.done, func(s string) bool { return s == "gateway: state kept in the SQLite database "+abs })

	if status, body := send(t, r.base, key, "POST", "/v1/admin/workspaces", `{"name": "Team A", "slug": "team-a"}`); status != http.StatusOK {
		t.Fatalf("POST /admin/workspaces with the generated key: %d %s, want 200", status, body)
	}
	status, body := send(t, r.base, key, "GET", "/v1/audit-logs", "")
	var audit struct {
		Records []struct {
			Action string `json:"action"`
		}
	}
	if err := json.Unmarshal([]byte(body), &audit); status != http.StatusOK || err != nil || len(audit.Records) != 1 ||
		audit.Records[0].Action != "workspaces.create" {
		t.Errorf("GET /audit-logs with the generated key: %d %s, want 200 with the workspace's creation", status, body)
	}
	r.stop(t)

	r2 := startRun(t, "-db", db)
	r2.stderr.wait(t, "stored keys line", r2.done, func(s string) bool { return s == "gateway: using the API keys stored in "+db })
	if !authenticated(t, r2.base, key) {
		t.Error("the generated key was refused after a restart")
	}
	r2.stop(t)
	out := r.stderr.String() + r2.stderr.String()
	if n := strings.Count(out, key); n != 1 {
		t.Errorf("the generated key appears %d times in the output, want once:\n%s", n, out)
	}
}

// TestRunRestartKeepsRevocations: GATEWAY_API_KEY seeds only a store that
// holds no API key; rotated or deleted over HTTP, it does not come back
// at the next start (docs/architecture.md, Trust).
func TestRunRestartKeepsRevocations(t *testing.T) {
	t.Setenv(masterKeyEnv, "")
	const envKey = "gw-seed-from-env"
	t.Setenv(apiKeyEnv, envKey)
	db := filepath.Join(t.TempDir(), "gw.db")

	r := startRun(t, "-db", db)
	r.stderr.wait(t, "seed line", r.done, func(s string) bool {
		return s == "gateway: added the key of GATEWAY_API_KEY as the organisation admin key key-default"
	})
	if status, body := send(t, r.base, envKey, "POST", "/v1/admin/workspaces", `{"name": "Team A"}`); status != http.StatusOK {
		t.Fatalf("POST /admin/workspaces with GATEWAY_API_KEY: %d %s, want 200 (an organisation admin key)", status, body)
	}
	// A second organisation admin, which rotates the first.
	status, body := send(t, r.base, envKey, "POST", "/v1/api-keys/organisation/service", `{"name": "second admin", "scopes": `+allScopesJSON+`}`)
	var second struct{ Key string }
	if err := json.Unmarshal([]byte(body), &second); status != http.StatusOK || err != nil || second.Key == "" {
		t.Fatalf("creating a second organisation key: %d %s", status, body)
	}
	status, body = send(t, r.base, second.Key, "POST", "/v1/api-keys/key-default/rotate", `{}`)
	var rotated struct{ Key string }
	if err := json.Unmarshal([]byte(body), &rotated); status != http.StatusOK || err != nil || rotated.Key == "" {
		t.Fatalf("rotating key-default: %d %s", status, body)
	}
	r.stop(t)

	r2 := startRun(t, "-db", db)
	r2.stderr.wait(t, "warning", r2.done, func(s string) bool {
		return strings.HasPrefix(s, "gateway: warning: the key of GATEWAY_API_KEY is not one of the keys in "+db)
	})
	if authenticated(t, r2.base, envKey) {
		t.Error("the rotated GATEWAY_API_KEY came back after a restart")
	}
	if !authenticated(t, r2.base, rotated.Key) {
		t.Error("key-default's new value was refused after a restart")
	}
	if status, body := send(t, r2.base, second.Key, "DELETE", "/v1/api-keys/key-default", ""); status != http.StatusOK {
		t.Fatalf("deleting key-default: %d %s", status, body)
	}
	r2.stop(t)

	r3 := startRun(t, "-db", db)
	if authenticated(t, r3.base, envKey) || authenticated(t, r3.base, rotated.Key) {
		t.Error("the deleted key-default came back after a restart")
	}
	if status, body := send(t, r3.base, second.Key, "GET", "/v1/api-keys/key-default", ""); status != http.StatusNotFound {
		t.Errorf("GET /api-keys/key-default after a restart: %d %s, want 404", status, body)
	}
	r3.stop(t)
	out := r.stderr.String() + r2.stderr.String() + r3.stderr.String()
	if strings.Contains(out, envKey) || strings.Contains(out, "generated") {
		t.Errorf("the output shows GATEWAY_API_KEY or a generated key:\n%s", out)
	}
	if n := strings.Count(out, "added the key of GATEWAY_API_KEY"); n != 1 {
		t.Errorf("GATEWAY_API_KEY was added %d times, want once (the first start):\n%s", n, out)
	}
}

// TestRunConfigOrganisationKey: a config file's api_keys entry without
// workspace_id is an organisation key, which creates workspaces and reads
// the organisation-wide audit log; an entry with workspace_id is that
// workspace's. Config keys are applied at every start: the file's
// value of a key rotated over HTTP is back after a restart.
func TestRunConfigOrganisationKey(t *testing.T) {
	t.Setenv(masterKeyEnv, "")
	t.Setenv(apiKeyEnv, "")
	dir := t.TempDir()
	cfg := writeFile(t, dir, "gateway.json", `{"api_keys": [
		{"id": "key-org", "key": "gw-config-org", "role": "admin"},
		{"id": "key-ws", "key": "gw-config-ws", "workspace_id": "ws-1", "role": "admin"}]}`)
	db := filepath.Join(dir, "gw.db")
	r := startRun(t, "-db", db, "-config", cfg)
	if status, body := send(t, r.base, "gw-config-org", "POST", "/v1/admin/workspaces", `{"name": "From the config's key", "slug": "ws-cfg"}`); status != http.StatusOK {
		t.Fatalf("POST /admin/workspaces with the config's organisation key: %d %s, want 200", status, body)
	}
	if status, body := send(t, r.base, "gw-config-org", "GET", "/v1/audit-logs", ""); status != http.StatusOK || !strings.Contains(body, "/v1/admin/workspaces") {
		t.Errorf("GET /audit-logs with the config's organisation key: %d %s, want 200 with the workspace's creation", status, body)
	}
	if status, body := send(t, r.base, "gw-config-ws", "POST", "/v1/admin/workspaces", `{"name": "x"}`); status != http.StatusForbidden {
		t.Errorf("POST /admin/workspaces with the config's workspace key: %d %s, want 403", status, body)
	}
	status, body := send(t, r.base, "gw-config-org", "POST", "/v1/api-keys/key-ws/rotate", `{}`)
	if status != http.StatusOK {
		t.Fatalf("rotating the config's workspace key: %d %s", status, body)
	}
	if authenticated(t, r.base, "gw-config-ws") {
		t.Fatal("the rotated key still authenticates")
	}
	r.stop(t)
	if strings.Contains(r.stderr.String(), "generated") {
		t.Errorf("a key was generated beside the config file's:\n%s", r.stderr)
	}

	r2 := startRun(t, "-db", db, "-config", cfg)
	if !authenticated(t, r2.base, "gw-config-ws") {
		t.Error("the config file's key was not applied again at the restart")
	}
	r2.stop(t)
}

// TestRunStateLine: the server says at start where its state is kept:
// gateway.db in the working directory by default, with or without
// -config; in memory with -demo alone or -db :memory:.
func TestRunStateLine(t *testing.T) {
	t.Setenv(masterKeyEnv, "")
	t.Setenv(apiKeyEnv, "")
	dir := t.TempDir()
	t.Chdir(dir)
	cfg := writeFile(t, t.TempDir(), "gateway.json", `{"api_keys": [{"id": "k", "key": "gw-state-line"}]}`)
	const memory = "gateway: state kept in memory: nothing survives a restart"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no flags", nil, "gateway: state kept in the SQLite database " + filepath.Join(dir, "gateway.db")},
		{"-config", []string{"-config", cfg}, "gateway: state kept in the SQLite database " + filepath.Join(dir, "gateway.db")},
		{"-db :memory:", []string{"-db", ":memory:"}, memory},
		{"-demo", []string{"-demo"}, memory},
		{"-demo -config", []string{"-demo", "-config", cfg}, memory},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startRunArgs(t, append([]string{"-addr", "127.0.0.1:0", "-drain", "0s"}, tc.args...)...)
			r.stderr.wait(t, "state line", r.done, func(s string) bool { return strings.HasPrefix(s, "gateway: state kept") })
			r.stop(t)
			if got := stateLines(r.stderr.String()); len(got) != 1 || got[0] != tc.want {
				t.Errorf("state lines %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "gateway.db")); err != nil {
		t.Errorf("no gateway.db in the working directory: %v", err)
	}
}

// stateLines returns the lines of out that say where the state is kept.
func stateLines(out string) []string {
	var got []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "gateway: state kept") {
			got = append(got, l)
		}
	}
	return got
}

// TestStateLineRedactsPassword: a Postgres DSN is named by its host and
// database, never its user, password or parameters.
func TestStateLineRedactsPassword(t *testing.T) {
	spec, err := parseDB("postgres://gw:pw-secret@db.internal:5432/gateway?sslmode=disable&password=pw-param")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := spec.where(), "in the Postgres database postgres://db.internal:5432/gateway"; got != want {
		t.Errorf("where() = %q, want %q", got, want)
	}
}

// TestRunPublicURL: the signed_url of a log export starts with
// -public-url whatever Host the request names, serves the export without
// a key, and stays valid across a restart on the same database (its key
// is derived from the master key, as on every replica).
func TestRunPublicURL(t *testing.T) {
	t.Setenv(masterKeyEnv, "")
	const key = "gw-public-url"
	t.Setenv(apiKeyEnv, key)
	db := filepath.Join(t.TempDir(), "gw.db")
	args := []string{"-db", db, "-public-url", "https://gateway.example.com"}
	r := startRun(t, args...)
	// A request to log: authenticated, then refused for want of a provider.
	authenticated(t, r.base, key)
	var created struct{ ID string }
	waitFor(t, "the request log", func() bool {
		status, body := send(t, r.base, key, "POST", "/v1/logs/exports", `{"filters": {}, "requested_data": ["id", "response_status_code"]}`)
		return status == http.StatusOK && json.Unmarshal([]byte(body), &created) == nil && strings.Contains(body, `"total":1`)
	})
	if status, body := send(t, r.base, key, "POST", "/v1/logs/exports/"+created.ID+"/start", ""); status != http.StatusOK {
		t.Fatalf("start: %d %s", status, body)
	}
	waitFor(t, "the export", func() bool {
		_, body := send(t, r.base, key, "GET", "/v1/logs/exports/"+created.ID, "")
		return strings.Contains(body, `"status":"success"`)
	})
	req, _ := http.NewRequest("GET", r.base+"/v1/logs/exports/"+created.ID+"/download", nil)
	req.Host = "evil.example"
	req.Header.Set("x-gateway-api-key", key)
	req.Header.Set("X-Forwarded-Host", "evil.example")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var dl struct {
		SignedURL string `json:"signed_url"`
	}
	body := readAll(t, res)
	if err := json.Unmarshal([]byte(body), &dl); res.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("download: %d %s", res.StatusCode, body)
	}
	want := "https://gateway.example.com/v1/logs/exports/" + created.ID + "/content?"
	if !strings.HasPrefix(dl.SignedURL, want) {
		t.Fatalf("signed_url %q, want it to start with %q", dl.SignedURL, want)
	}
	u, _ := url.Parse(dl.SignedURL)
	fetch := func(base string) (int, string) {
		res := call(t, "GET", base+u.RequestURI(), "", nil)
		return res.StatusCode, readAll(t, res)
	}
	if status, body := fetch(r.base); status != http.StatusOK || !strings.Contains(body, `"response_status_code":400`) {
		t.Errorf("the signed URL without a key: %d %s, want 200 and the record", status, body)
	}
	r.stop(t)

	r2 := startRun(t, args...)
	if status, body := fetch(r2.base); status != http.StatusOK {
		t.Errorf("the signed URL after a restart: %d %s, want 200", status, body)
	}
	r2.stop(t)
}

// waitFor polls cond until it holds, failing the test after waitLimit.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s", what, waitLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPublicURLFlag: -public-url must be an absolute http or https URL
// without user, query or fragment.
func TestPublicURLFlag(t *testing.T) {
	for _, v := range []string{"gateway.example.com", "ftp://gateway.example.com", "https://", "https://u:p@gw.example", "https://gw.example/?a=1", "https://gw.example/#f"} {
		if err := checkPublicURL(v); err == nil || !strings.Contains(err.Error(), "-public-url") {
			t.Errorf("checkPublicURL(%q) = %v, want an error naming -public-url", v, err)
		}
	}
	for _, v := range []string{"", "https://gw.example", "http://10.0.0.1:8080/base/"} {
		if err := checkPublicURL(v); err != nil {
			t.Errorf("checkPublicURL(%q) = %v, want nil", v, err)
		}
	}
}

// TestRunConsoleCookies: the console's cookies are not Secure when the
// server listens on loopback only, and Secure on any other address
// (docs/architecture.md, Trust).
func TestRunConsoleCookies(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		secure bool
	}{
		{"127.0.0.1:0", false},
		{"0.0.0.0:0", true},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			r := startRun(t, "-addr", tc.addr)
			res := call(t, "GET", r.base+"/console/signin", "", nil)
			readAll(t, res)
			cookies := res.Cookies()
			if res.StatusCode != http.StatusOK || len(cookies) == 0 {
				t.Fatalf("GET /console/signin: %d with cookies %v", res.StatusCode, cookies)
			}
			for _, ck := range cookies {
				if ck.Secure != tc.secure {
					t.Errorf("cookie %s: Secure %v, want %v", ck.Name, ck.Secure, tc.secure)
				}
			}
			r.stop(t)
		})
	}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// consoleSignIn signs in to the console at base with key and returns the
// session cookie.
func consoleSignIn(t *testing.T, base, key string) *http.Cookie {
	t.Helper()
	res, err := http.DefaultTransport.RoundTrip(mustRequest(t, "GET", base+"/console/signin", ""))
	if err != nil {
		t.Fatal(err)
	}
	m := csrfRE.FindStringSubmatch(readAll(t, res))
	if m == nil || len(res.Cookies()) == 0 {
		t.Fatalf("the sign-in page: %d, no form token or cookie", res.StatusCode)
	}
	req := mustRequest(t, "POST", base+"/console/signin", url.Values{"key": {key}, "csrf": {m[1]}}.Encode())
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, ck := range res.Cookies() {
		req.AddCookie(ck)
	}
	res, err = http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, res)
	for _, ck := range res.Cookies() {
		if ck.Name == "gateway_console" && ck.Value != "" {
			return ck
		}
	}
	t.Fatalf("sign-in: %d without a session cookie", res.StatusCode)
	return nil
}

func mustRequest(t *testing.T, method, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// consolePage returns the status of GET path on the console with the
// session cookie ck (303: sent to the sign-in page).
func consolePage(t *testing.T, base, path string, ck *http.Cookie) int {
	t.Helper()
	req := mustRequest(t, "GET", base+path, "")
	req.AddCookie(ck)
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, res)
	return res.StatusCode
}

// TestRunConsoleSessionsInDatabase: on a database the console's sessions
// are kept there, so that a restart (or another replica) keeps a
// signed-in person signed in; the key they signed in with is in no file
// of the database (docs/architecture.md, Trust).
func TestRunConsoleSessionsInDatabase(t *testing.T) {
	t.Setenv(masterKeyEnv, "")
	const key = "gw-console-session-key-7c1d"
	t.Setenv(apiKeyEnv, key)
	dir := t.TempDir()
	db := filepath.Join(dir, "gw.db")
	r := startRun(t, "-db", db)
	ck := consoleSignIn(t, r.base, key)
	if st := consolePage(t, r.base, "/console/logs", ck); st != http.StatusOK {
		t.Fatalf("the console's logs page: %d, want 200", st)
	}
	r.stop(t)

	r2 := startRun(t, "-db", db)
	if st := consolePage(t, r2.base, "/console/logs", ck); st != http.StatusOK {
		t.Errorf("the console's logs page after a restart: %d, want 200 (the session kept)", st)
	}
	r2.stop(t)
	files, _ := filepath.Glob(filepath.Join(dir, "gw.db*"))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), key) {
			t.Errorf("%s holds the signed-in key", filepath.Base(name))
		}
	}

	// In memory, a restart signs everyone out.
	m := startRun(t)
	ck = consoleSignIn(t, m.base, key)
	m.stop(t)
	m2 := startRun(t)
	if st := consolePage(t, m2.base, "/console/logs", ck); st != http.StatusSeeOther {
		t.Errorf("in memory, the console's logs page after a restart: %d, want 303 to the sign-in page", st)
	}
}
