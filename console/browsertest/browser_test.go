// Package browsertest drives the gateway's web console (package console)
// in a real headless Chromium, against examples/server built from this
// repository: sign-in, a graph's total against the API's, logs filtered
// by a trace id, a key created and revoked, a budget's exhausted entity,
// axe-core on every page, and screenshots of every page at 1280×800 and
// 390×844. Tests are skipped when no Chromium is installed.
package browsertest

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

//go:embed testdata/axe.min.js
var axeSource string

// findChromium returns the path of a Chromium or Chrome binary: $CHROMIUM,
// else the first of the usual names on $PATH; "" when there is none.
func findChromium() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// newTab starts a headless browser and returns a context of one tab,
// closed at the end of the test.
func newTab(t *testing.T) context.Context {
	t.Helper()
	path := findChromium()
	if path == "" {
		t.Skip("no chromium on $PATH (apt-get install chromium, or set $CHROMIUM): the console's browser tests are skipped")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 800))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(alloc)
	ctx, cancelTime := context.WithTimeout(ctx, 10*time.Minute)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return ctx
}

// step bounds each step of a test, so that a page that never shows what
// a step waits for fails that step alone.
const step = 30 * time.Second

// do runs actions and fails the test on an error.
func do(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, step)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// run runs one action that returns a value.
func run[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, step)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// screenshotDir is where screenshots go: $CONSOLE_SCREENSHOTS, else a
// directory of the test's.
func screenshotDir(t *testing.T) string {
	if d := os.Getenv("CONSOLE_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// violation is an axe-core finding.
type violation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// axe runs axe-core on the current page and fails the test on a serious
// or critical violation; lesser ones are logged.
func axe(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	do(t, ctx, "loading axe-core", chromedp.Evaluate[chromedp.Void](axeSource))
	res := run(t, ctx, "axe.run on "+page, chromedp.Evaluate[struct {
		Version    string      `json:"version"`
		Passes     int         `json:"passes"`
		Violations []violation `json:"violations"`
	}](`axe.run(document).then(r => ({version: axe.version, passes: r.passes.length,
		violations: r.violations.map(v => ({id: v.id, impact: v.impact || '', help: v.help, nodes: v.nodes.slice(0, 5).map(n => n.target.join(' '))}))}))`,
		chromedp.EvalAwaitPromise))
	if res.Passes == 0 {
		t.Fatalf("axe-core %q checked nothing on %s", res.Version, page)
	}
	t.Logf("axe-core %s on %s: %d rules passed, %d violated", res.Version, page, res.Passes, len(res.Violations))
	for _, v := range res.Violations {
		if v.Impact == "serious" || v.Impact == "critical" {
			t.Errorf("axe on %s: %s violation %s (%s) at %v", page, v.Impact, v.ID, v.Help, v.Nodes)
		} else {
			t.Logf("axe on %s: %s violation %s (%s) at %v", page, v.Impact, v.ID, v.Help, v.Nodes)
		}
	}
}

// sizes are the viewports every page is checked and shot at.
var sizes = []struct {
	name string
	w, h int64
}{{"1280x800", 1280, 800}, {"390x844", 390, 844}}

// shoot checks the page at path at both sizes (no horizontal scrolling
// of the whole page on a phone) and saves a screenshot of each, named
// after name.
func shoot(t *testing.T, ctx context.Context, dir, name, path, base string) {
	t.Helper()
	for _, sz := range sizes {
		opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
		if sz.w < 500 {
			opts = append(opts, chromedp.EmulateMobile)
		}
		do(t, ctx, "viewport", chromedp.EmulateViewport(sz.w, sz.h, opts...))
		if path != "" {
			do(t, ctx, "open "+path, chromedp.Navigate(base+path), chromedp.WaitVisible(chromedp.CSS("main h1")))
		}
		wide := run(t, ctx, "page width", chromedp.Evaluate[int](`document.documentElement.scrollWidth - document.documentElement.clientWidth`))
		if wide > 0 {
			culprits := run(t, ctx, "wide elements", chromedp.Evaluate[[]string](
				`[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1).slice(0, 6).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))`))
			t.Errorf("%s at %s: the page scrolls sideways by %d px; too wide: %v", name, sz.name, wide, culprits)
		}
		png := run(t, ctx, "screenshot", chromedp.CaptureScreenshot())
		if err := os.WriteFile(filepath.Join(dir, "console-"+name+"-"+sz.name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	do(t, ctx, "viewport", chromedp.EmulateViewport(1280, 800, chromedp.EmulateScale(1)))
}

// signIn signs in through the form with key.
func signIn(t *testing.T, ctx context.Context, base, key string) {
	t.Helper()
	do(t, ctx, "sign in",
		chromedp.Navigate(base+"/console/signin"),
		chromedp.WaitVisible(chromedp.ID("key")),
		chromedp.SendKeys(chromedp.ID("key"), key),
		chromedp.Submit(chromedp.ID("key")),
		chromedp.WaitVisible(chromedp.CSS(`nav[aria-label="Console"]`)))
}

func TestConsole(t *testing.T) {
	for _, backend := range []string{"memory", "sqlite"} {
		t.Run(backend, func(t *testing.T) { testConsole(t, backend) })
	}
}

// testConsole drives the console of examples/server on backend; the
// SQLite run saves the screenshots.
func testConsole(t *testing.T, backend string) {
	ctx := newTab(t)
	s := startServer(t, backend)
	const requests = 12
	s.traffic(requests)
	dir := t.TempDir()
	if backend == "sqlite" {
		dir = screenshotDir(t)
		t.Logf("screenshots in %s", dir)
	}
	base := s.url

	// Signed out: the sign-in page.
	do(t, ctx, "sign-in page", chromedp.Navigate(base+"/console/"), chromedp.WaitVisible(chromedp.ID("key")))
	axe(t, ctx, "sign-in")
	shoot(t, ctx, dir, "signin", "", base)
	signIn(t, ctx, base, adminKey)

	t.Run("graph total equals the API's", func(t *testing.T) {
		do(t, ctx, "overview", chromedp.Navigate(base+"/console/?range=24h"), chromedp.WaitVisible(chromedp.ID("requests-total")))
		shown := run(t, ctx, "total", chromedp.AttributeValue(chromedp.ID("requests-total"), "data-value"))
		now := time.Now().UTC()
		q := url.Values{"time_of_generation_min": {now.Add(-24 * time.Hour).Format(time.RFC3339)},
			"time_of_generation_max": {now.Add(time.Minute).Format(time.RFC3339)}}
		var g struct {
			Summary struct {
				Total json.Number `json:"total"`
			} `json:"summary"`
		}
		if st := s.api(adminKey, "GET", "/analytics/graphs/requests?"+q.Encode(), "", &g); st != 200 {
			t.Fatalf("GET /analytics/graphs/requests: %d", st)
		}
		if shown.Value != g.Summary.Total.String() || shown.Value != fmt.Sprint(requests) {
			t.Errorf("requests graph total: the console shows %q, the API answers %s, %d were sent", shown.Value, g.Summary.Total, requests)
		}
	})

	t.Run("logs filtered by a trace id", func(t *testing.T) {
		do(t, ctx, "filter",
			chromedp.Navigate(base+"/console/logs"),
			chromedp.WaitVisible(chromedp.ID("f-trace")),
			chromedp.SendKeys(chromedp.ID("f-trace"), "bt-3"))
		// The URL the form submits to, opened with Navigate, which waits
		// for the page: the unfiltered page shows bt-3 too, so waiting for
		// it after a Submit could count the rows (and open the next page)
		// while the form's navigation is still under way.
		filtered := run(t, ctx, "the form's URL", chromedp.Evaluate[string](
			`(f => f.action + "?" + new URLSearchParams(new FormData(f)))(document.getElementById("f-trace").form)`))
		if !strings.Contains(filtered, "bt-3") {
			t.Fatalf("the filter form submits to %q, without the trace id", filtered)
		}
		do(t, ctx, "filtered", chromedp.Navigate(filtered),
			chromedp.WaitVisible(chromedp.CSS(`a[title="Requests of trace bt-3"]`)))
		n := run(t, ctx, "rows", chromedp.Evaluate[int](`document.querySelectorAll('tbody a[href^="/console/logs/"]').length`))
		if n != 1 {
			t.Fatalf("logs of trace bt-3: %d rows, want 1", n)
		}
		do(t, ctx, "open the record", chromedp.Click(chromedp.CSS(`tbody a[href^="/console/logs/"]`)), chromedp.WaitVisible(chromedp.CSS("dl.fields")))
		text := run(t, ctx, "record", chromedp.TextContent(chromedp.CSS("dl.fields")))
		if !strings.Contains(text, "bt-3") || !strings.Contains(text, "gpt-4o-mini") {
			t.Errorf("the record's page: %q", text)
		}
	})

	var keyID string
	t.Run("create and revoke a key", func(t *testing.T) {
		do(t, ctx, "create",
			chromedp.Navigate(base+"/console/api-keys"),
			chromedp.WaitVisible(chromedp.ID("k-name")),
			chromedp.SendKeys(chromedp.ID("k-name"), "browser-made"),
			// The admin key is -demo's organisation key, or the config's
			// admin of default: either may create a key in default.
			chromedp.SendKeys(chromedp.ID("k-ws"), "default"),
			chromedp.Click(chromedp.CSS(`input[value="logs.read"]`)),
			chromedp.Submit(chromedp.ID("k-name")),
			chromedp.WaitVisible(chromedp.ID("secret")))
		key := run(t, ctx, "the new key", chromedp.Value(chromedp.ID("secret")))
		// The copy button, shown by the console's script, puts the key on
		// the clipboard and says so.
		do(t, ctx, "copy", chromedp.Click(chromedp.ID("copy-secret")),
			chromedp.Poll[chromedp.Void](`document.getElementById("copy-status").textContent !== ""`))
		if said := run(t, ctx, "copy status", chromedp.TextContent(chromedp.ID("copy-status"))); said != "Copied to the clipboard." {
			t.Errorf("after Copy key: %q", said)
		}
		if st := s.api(key, "GET", "/logs", "", nil); st != 200 {
			t.Fatalf("the new key reading logs: %d", st)
		}
		do(t, ctx, "list", chromedp.Navigate(base+"/console/api-keys"), chromedp.WaitVisible(chromedp.ID("k-name")))
		revoke := run(t, ctx, "revoke link", chromedp.Evaluate[string](
			`[...document.querySelectorAll('tbody tr')].find(r => r.cells[0].textContent === 'browser-made').querySelector('a[href$="/revoke"]').getAttribute('href')`))
		keyID = strings.TrimSuffix(strings.TrimPrefix(revoke, "/console/api-keys/"), "/revoke")
		do(t, ctx, "revoke",
			chromedp.Navigate(base+revoke),
			chromedp.WaitVisible(chromedp.CSS("button.danger")))
		axe(t, ctx, "confirm")
		shoot(t, ctx, dir, "confirm", revoke, base)
		do(t, ctx, "confirm",
			chromedp.Click(chromedp.CSS("button.danger")),
			chromedp.WaitVisible(chromedp.CSS("p.flash")))
		if st := s.api(key, "GET", "/logs", "", nil); st != 401 {
			t.Errorf("the revoked key: %d, want 401", st)
		}
	})

	t.Run("phone: the logs' filters fold away", func(t *testing.T) {
		phoneLogs(t, ctx, base)
	})

	t.Run("API keys: the session's key, ids on one line", func(t *testing.T) {
		apiKeysPage(t, ctx, base, backend)
	})

	t.Run("budget exhausted", func(t *testing.T) {
		budget(t, ctx, s)
	})

	t.Run("keyboard", func(t *testing.T) {
		do(t, ctx, "logs", chromedp.Navigate(base+"/console/logs"), chromedp.WaitVisible(chromedp.CSS("main h1")),
			chromedp.KeyEvent("\t"))
		focus := run(t, ctx, "focus", chromedp.Evaluate[string](
			`document.activeElement.className + ' ' + getComputedStyle(document.activeElement).outlineStyle`))
		if focus != "skip solid" {
			t.Errorf("first Tab: focus %q, want the skip link with a visible outline", focus)
		}
	})

	// Every page: axe-core and screenshots at both sizes.
	var cfg struct {
		Data struct {
			Slug string `json:"slug"`
		} `json:"data"`
	}
	s.api(adminKey, "POST", "/configs", `{"name":"Fallback","config":{"strategy":{"mode":"fallback"},"targets":[{"virtual_key":"demo"},{"virtual_key":"demo"}]}}`, &cfg)
	var logs struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	s.api(adminKey, "GET", "/logs?page_size=1", "", &logs)
	pages := []struct{ name, path string }{
		{"overview", "/console/?range=24h"},
		{"logs", "/console/logs"},
		{"log", "/console/logs/" + logs.Data[0].ID},
		{"api-keys", "/console/api-keys"},
		{"virtual-keys", "/console/virtual-keys"},
		{"configs", "/console/configs"},
		{"config", "/console/configs/" + cfg.Data.Slug},
		{"policies", "/console/policies"},
		{"audit", "/console/audit"},
		{"integrations", "/console/integrations"},
		{"providers", "/console/providers"},
		{"models", "/console/models"},
	}
	if backend == "memory" {
		// -demo's key is the organisation's: it sees the workspaces and
		// may write an integration.
		if st := s.api(adminKey, "POST", "/integrations", `{"name":"OpenAI Prod","slug":"openai-prod","ai_provider_id":"openai","key":"sk-browsertest-integration","configurations":{"custom_host":"https://api.openai.com/v1"}}`, nil); st != 200 {
			t.Fatalf("POST /integrations: %d", st)
		}
		pages = append(pages, struct{ name, path string }{"workspaces", "/console/workspaces"},
			struct{ name, path string }{"integration", "/console/integrations/openai-prod"})
	}
	for _, p := range pages {
		t.Run("page "+p.name, func(t *testing.T) {
			do(t, ctx, "open", chromedp.Navigate(base+p.path), chromedp.WaitVisible(chromedp.CSS("main h1")))
			if e := run(t, ctx, "error", chromedp.Evaluate[string](`(document.querySelector('p.error') || {}).textContent || ''`)); e != "" {
				t.Errorf("%s shows an error: %s", p.path, e)
			}
			axe(t, ctx, p.name)
			shoot(t, ctx, dir, p.name, p.path, base)
		})
	}
	_ = keyID
}
