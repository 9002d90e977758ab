package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRunMetrics: with -admin-addr, /metrics on the admin listener counts
// the gateway's requests, priced by the -prices table, and the request
// log line still goes to standard output; a request with a wrong key is
// counted as unauthenticated, with no log line. /metrics and
// /readyz?verbose count the dropped request logs.
func TestRunMetrics(t *testing.T) {
	t.Setenv("GATEWAY_API_KEY", "gw-metrics-key")
	prices := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(prices, []byte(`{"openai/gpt-4o-mini": {"input": 1000000, "output": 1000000}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startRun(t, "-demo", "-admin-addr", "127.0.0.1:0", "-prices", prices)
	adminRE := regexp.MustCompile(`admin listening on (http://\S+)`)
	admin := adminRE.FindStringSubmatch(r.stderr.wait(t, "admin line", r.done, adminRE.MatchString))[1]
	line := r.stderr.wait(t, "curl command", r.done, func(s string) bool { return strings.HasPrefix(s, "curl ") })
	req := curlRequest(t, shellWords(t, line, map[string]string{"GATEWAY_API_KEY": "gw-metrics-key"}))
	// A request with a wrong key first: counted, not a log line.
	bad := curlRequest(t, shellWords(t, line, map[string]string{"GATEWAY_API_KEY": "gw-wrong-key"}))
	res, err := http.DefaultClient.Do(bad)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, res)
	badTrace := res.Header.Get("x-gateway-trace-id")
	if res.StatusCode != 401 || badTrace == "" {
		t.Fatalf("wrong key: %d, trace %q", res.StatusCode, badTrace)
	}
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, res)
	rec := logFor(t, r.stdout, r.done, res.Header.Get("x-gateway-trace-id"))
	if res.StatusCode != 200 || rec.Status != 200 {
		t.Fatalf("demo request: %d, log line %+v", res.StatusCode, rec)
	}
	if out := r.stdout.String(); strings.Contains(out, badTrace) { // lines come in the order requests end
		t.Errorf("the wrong key's request has a log line:\n%s", out)
	}
	res, err = http.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, res)
	for _, want := range []string{
		`gateway_requests_total{cache_status="DISABLED",model=`, // the x-gateway-cache-status the caller got
		`status_class="2xx"} 1`,
		`gateway_request_logs_dropped_total 0`,
		`gateway_unauthenticated_requests_total{code="invalid_api_key"} 1`,
		`gateway_unauthenticated_requests_total{code="missing_api_key"} 0`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, body)
		}
	}
	// /readyz?verbose counts the dropped request logs too.
	res, err = http.Get(admin + "/readyz?verbose")
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, res); !strings.Contains(body, `"dropped_logs":0`) {
		t.Errorf("/readyz?verbose lacks dropped_logs: %s", body)
	}
	// The table prices the demo's model at 1 USD a token.
	if rec.Model != "gpt-4o-mini" || rec.TotalTokens == 0 || rec.Cost != float64(rec.TotalTokens) ||
		!strings.Contains(body, `gateway_cost_usd_total{model="gpt-4o-mini",provider="openai"} `) {
		t.Errorf("demo request: model %s, %d tokens, cost %v; want the -prices table's 1 USD a token, counted in /metrics",
			rec.Model, rec.TotalTokens, rec.Cost)
	}
}

// TestRunPricesErrors: a -prices file that cannot be read or parsed stops
// the server, naming the flag.
func TestRunPricesErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(bad, []byte(`{"openai/gpt-4o": {"input": -1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{bad, filepath.Join(t.TempDir(), "missing.json")} {
		err := run(t.Context(), t.Context(), []string{"-addr", "127.0.0.1:0", "-db", ":memory:", "-prices", path}, newLines(), newLines())
		if err == nil || !strings.Contains(err.Error(), "-prices") {
			t.Errorf("-prices %s: %v, want an error naming -prices", path, err)
		}
	}
}

// TestMetricsWithoutClientGolang: the server serves /metrics with the
// standard library, so that Prometheus's client libraries (client_golang,
// with protobuf, client_model, procfs: 6.9 MB of the binary) are no
// dependency of it. It reads the dependencies from go list, and is
// skipped where no go command runs.
func TestMetricsWithoutClientGolang(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command:", err)
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/prometheus/") || p == "github.com/modelgateway/gateway/prometheus" {
			t.Errorf("the server depends on %s", p)
		}
	}
}
