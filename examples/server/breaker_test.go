package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelgateway/gateway/gatewaytest"
)

// breakerServer runs the server with an admin listener, a key and two
// virtual keys, primary and secondary, on fake providers; it returns the
// server, its admin base URL and the providers.
func breakerServer(t *testing.T) (r *running, admin string, primary, secondary *gatewaytest.Server) {
	t.Helper()
	primary, secondary = newProvider(t, "sk-primary"), newProvider(t, "sk-secondary")
	cfg := filepath.Join(t.TempDir(), "gateway.json")
	data := fmt.Sprintf(`{"api_keys": [{"id": "k", "key": "gw-breaker"}],
		"virtual_keys": [{"slug": "primary", "provider": "openai", "api_key": "sk-primary", "base_url": %q},
			{"slug": "secondary", "provider": "openai", "api_key": "sk-secondary", "base_url": %q}]}`, primary.URL, secondary.URL)
	if err := os.WriteFile(cfg, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	r = startRun(t, "-config", cfg, "-admin-addr", "127.0.0.1:0")
	adminRE := regexp.MustCompile(`admin listening on (http://\S+)`)
	admin = adminRE.FindStringSubmatch(r.stderr.wait(t, "admin line", r.done, adminRE.MatchString))[1]
	return r, admin, primary, secondary
}

// chatVia sends a chat completion routed by the inline config cfg, with
// extra headers, and returns the response, its body and its log line.
func chatVia(t *testing.T, r *running, cfg string, hdr map[string]string) (*http.Response, string, logRecord) {
	t.Helper()
	h := map[string]string{"x-gateway-api-key": "gw-breaker", "x-gateway-config": cfg, "Content-Type": "application/json"}
	for k, v := range hdr {
		h[k] = v
	}
	res := call(t, "POST", r.base+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, h)
	body := readAll(t, res)
	return res, body, logFor(t, r.stdout, r.done, res.Header.Get("x-gateway-trace-id"))
}

// verbose reads /readyz?verbose on the admin listener.
func verbose(t *testing.T, admin string) (int, verboseReadyz) {
	t.Helper()
	res := call(t, "GET", admin+"/readyz?verbose", "", nil)
	var v verboseReadyz
	if err := json.Unmarshal([]byte(readAll(t, res)), &v); err != nil {
		t.Fatalf("/readyz?verbose: %v", err)
	}
	return res.StatusCode, v
}

const (
	primaryKey = "virtual_key:/primary"
	chat       = "/v1/chat/completions"
)

// TestRunBreaker: over real HTTP, a failing primary opens its breaker at
// the threshold; later requests skip it for the secondary without calling
// it; /readyz?verbose on the admin address shows it open, then half open
// once the cool-down ended; the probe that follows closes it, and the
// primary answers again. The request logs name the trip and the skips.
func TestRunBreaker(t *testing.T) {
	r, admin, primary, secondary := breakerServer(t)
	const cfg = `{"strategy":{"mode":"fallback","cb_config":{"failure_threshold":2,"cooldown_interval":1000}},"targets":[{"virtual_key":"primary"},{"virtual_key":"secondary"}]}`
	primary.Script(chat, gatewaytest.Response{Status: 500}, gatewaytest.Response{Status: 503})
	for i, tripped := range [][]string{nil, {primaryKey}} {
		res, body, rec := chatVia(t, r, cfg, nil)
		if res.StatusCode != 200 || !slices.Equal(rec.TrippedTargets, tripped) || rec.SkippedTargets != nil {
			t.Fatalf("request %d: %d %s, tripped %q skipped %q; want the secondary's 200, tripped %q", i, res.StatusCode, body, rec.TrippedTargets, rec.SkippedTargets, tripped)
		}
	}
	for range 3 {
		res, _, rec := chatVia(t, r, cfg, nil)
		if res.StatusCode != 200 || !slices.Equal(rec.SkippedTargets, []string{primaryKey}) {
			t.Fatalf("while open: %d, skipped %q; want 200 skipping the primary", res.StatusCode, rec.SkippedTargets)
		}
	}
	if primary.Count(chat) != 2 || secondary.Count(chat) != 5 {
		t.Errorf("primary called %d times, secondary %d; want 2 and 5", primary.Count(chat), secondary.Count(chat))
	}
	code, v := verbose(t, admin)
	if code != 200 || v.Status != "ok" || len(v.Targets) != 2 || v.Targets[0].Target != primaryKey || v.Targets[0].State != "open" ||
		v.Targets[0].Failures != 2 || v.Targets[1].State != "closed" {
		t.Errorf("/readyz?verbose: %d %+v; want the primary open after 2 failures, the secondary closed", code, v)
	}
	for _, base := range []string{admin, r.base} {
		if status, body := probe(t, "GET", base, "/readyz"); status != 200 || body != "ok\n" {
			t.Errorf("plain /readyz on %s: %d %q, want 200 ok", base, status, body)
		}
	}
	if status, body := probe(t, "GET", r.base, "/readyz?verbose"); body != "ok\n" {
		t.Errorf("/readyz?verbose on the gateway's listener: %d %q, want plain ok: target health is the admin's", status, body)
	}

	// The cool-down ends on its own; the admin endpoint says when.
	deadline := time.Now().Add(waitLimit)
	for {
		if _, v := verbose(t, admin); v.Targets[0].State == "half_open" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the primary's breaker never became half open")
		}
		time.Sleep(50 * time.Millisecond)
	}
	res, _, rec := chatVia(t, r, cfg, nil)
	if res.StatusCode != 200 || primary.Count(chat) != 3 || rec.SkippedTargets != nil {
		t.Fatalf("probe: %d, primary called %d times, skipped %q; want the primary's 200 (3 calls)", res.StatusCode, primary.Count(chat), rec.SkippedTargets)
	}
	if _, v := verbose(t, admin); v.Targets[0].State != "closed" || v.Targets[0].Failures != 0 {
		t.Errorf("after the probe: %+v, want the primary closed", v.Targets[0])
	}
}

// TestRunBreakerAllOpen: with every target's breaker open, the server
// answers 503 all_targets_unavailable with Retry-After, calling no
// provider.
func TestRunBreakerAllOpen(t *testing.T) {
	r, _, primary, _ := breakerServer(t)
	const cfg = `{"strategy":{"cb_config":{"failure_threshold":1,"cooldown_interval":30000}},"virtual_key":"primary"}`
	primary.Script(chat, gatewaytest.Response{Status: 502})
	if res, _, _ := chatVia(t, r, cfg, nil); res.StatusCode != 502 {
		t.Fatalf("first: %d, want the provider's 502", res.StatusCode)
	}
	res, body, rec := chatVia(t, r, cfg, nil)
	if res.StatusCode != 503 || errorCode(t, body) != "all_targets_unavailable" || primary.Count(chat) != 1 {
		t.Fatalf("all open: %d %s after %d provider calls; want 503 all_targets_unavailable after 1", res.StatusCode, body, primary.Count(chat))
	}
	if ra := res.Header.Get("Retry-After"); ra != "30" && ra != "29" {
		t.Errorf("Retry-After %q, want the cool-down's end, about 30 s away", ra)
	}
	if rec.Status != 503 || rec.ErrorCode != "all_targets_unavailable" || !slices.Equal(rec.SkippedTargets, []string{primaryKey}) {
		t.Errorf("log line %+v, want the 503 skipping the primary", rec)
	}
}

// TestRunSticky: requests with one value of the sticky header reach one
// target, however many are sent, and while that target's breaker is open
// they go to the other one.
func TestRunSticky(t *testing.T) {
	r, _, primary, secondary := breakerServer(t)
	const cfg = `{"strategy":{"mode":"loadbalance","sticky":{"key":"header.x-session"},"cb_config":{"failure_threshold":1,"cooldown_interval":60000}},"targets":[{"virtual_key":"primary"},{"virtual_key":"secondary"}]}`
	counts := func() [2]int { return [2]int{primary.Count(chat), secondary.Count(chat)} }
	for _, session := range []string{"conversation-1", "conversation-2", "conversation-3", "conversation-4"} {
		before := counts()
		for range 4 {
			if res, body, _ := chatVia(t, r, cfg, map[string]string{"x-session": session}); res.StatusCode != 200 {
				t.Fatalf("%s: %d %s", session, res.StatusCode, body)
			}
		}
		after := counts()
		if d := [2]int{after[0] - before[0], after[1] - before[1]}; d != [2]int{4, 0} && d != [2]int{0, 4} {
			t.Errorf("%s: calls to primary and secondary %v, want all 4 on one", session, d)
		}
	}
	// Open the breaker of whichever target conversation-1 sticks to.
	before := counts()
	chatVia(t, r, cfg, map[string]string{"x-session": "conversation-1"})
	stuck := 0
	if counts()[1] > before[1] {
		stuck = 1
	}
	fakes := []*gatewaytest.Server{primary, secondary}
	fakes[stuck].Script(chat, gatewaytest.Response{Status: 500})
	chatVia(t, r, cfg, map[string]string{"x-session": "conversation-1"})
	before = counts()
	for range 3 {
		res, _, rec := chatVia(t, r, cfg, map[string]string{"x-session": "conversation-1"})
		if res.StatusCode != 200 || len(rec.SkippedTargets) != 1 {
			t.Fatalf("with its target open: %d, skipped %q; want 200 from the other", res.StatusCode, rec.SkippedTargets)
		}
	}
	if after := counts(); after[stuck] != before[stuck] || after[1-stuck] != before[1-stuck]+3 {
		t.Errorf("calls %v -> %v, want the 3 requests on the other target", before, after)
	}
	if !strings.Contains(r.stdout.String(), `"tripped_targets":["virtual_key:/`) {
		t.Error("no log line names the trip")
	}
}
