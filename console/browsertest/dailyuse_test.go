package browsertest

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
)

// phone is the viewport of a phone, as the screenshots use.
func phone(t *testing.T, ctx context.Context) {
	t.Helper()
	do(t, ctx, "phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(1), chromedp.EmulateMobile))
	t.Cleanup(func() { do(t, ctx, "viewport", chromedp.EmulateViewport(1280, 800, chromedp.EmulateScale(1))) })
}

// phoneLogs checks that on a phone the logs page keeps its first screen
// for results: the filters are folded (unless one is set) and the first
// record is on the first screen; at 1280 px the filters show unfolded.
func phoneLogs(t *testing.T, ctx context.Context, base string) {
	phone(t, ctx)
	do(t, ctx, "logs", chromedp.Navigate(base+"/console/logs"), chromedp.WaitVisible(chromedp.CSS("tbody tr")))
	type layout struct {
		Open         bool    `json:"open"`
		FieldShown   bool    `json:"fieldShown"`
		FirstRowTop  float64 `json:"firstRowTop"`
		ScreenHeight float64 `json:"screenHeight"`
	}
	const measure = `(() => { const d = document.querySelector("details.filterbox"), f = document.getElementById("f-trace");
		return {open: !!(d && d.open), fieldShown: f.checkVisibility(),
			firstRowTop: document.querySelector("tbody tr").getBoundingClientRect().top, screenHeight: window.innerHeight}; })()`
	l := run(t, ctx, "measure", chromedp.Evaluate[layout](measure))
	if l.Open || l.FieldShown || l.FirstRowTop >= l.ScreenHeight {
		t.Errorf("logs at 390×844: filters open %v, trace field shown %v, first record at %.0f px of %.0f; want folded filters and a record on the first screen",
			l.Open, l.FieldShown, l.FirstRowTop, l.ScreenHeight)
	}
	do(t, ctx, "unfold", chromedp.Click(chromedp.CSS("details.filterbox summary")), chromedp.WaitVisible(chromedp.ID("f-trace")))

	do(t, ctx, "filtered logs", chromedp.Navigate(base+"/console/logs?trace_id=bt-3"), chromedp.WaitVisible(chromedp.CSS("main h1")))
	if l := run(t, ctx, "measure", chromedp.Evaluate[layout](measure)); !l.Open || !l.FieldShown {
		t.Errorf("logs filtered by a trace id at 390×844: filters open %v, trace field shown %v; want them open, showing the filter", l.Open, l.FieldShown)
	}

	do(t, ctx, "wide viewport", chromedp.EmulateViewport(1280, 800, chromedp.EmulateScale(1)))
	do(t, ctx, "logs", chromedp.Navigate(base+"/console/logs"), chromedp.WaitVisible(chromedp.CSS("tbody tr")))
	if l := run(t, ctx, "measure", chromedp.Evaluate[layout](measure)); !l.FieldShown {
		t.Errorf("logs at 1280×800: the filters are folded; want them shown")
	}
	if summary := run(t, ctx, "summary", chromedp.Evaluate[bool](`document.querySelector("details.filterbox summary").checkVisibility()`)); summary {
		t.Errorf("logs at 1280×800: the filters' fold shows, with nothing to fold")
	}
}

// apiKeysPage checks the API keys page on a phone: each id and masked key
// on one line, and the key the session is signed in with marked and not
// offered for revocation. On the SQLite backend that key comes from the
// config file, which names and dates it.
func apiKeysPage(t *testing.T, ctx context.Context, base, backend string) {
	phone(t, ctx)
	do(t, ctx, "API keys", chromedp.Navigate(base+"/console/api-keys"), chromedp.WaitVisible(chromedp.CSS("tbody tr")))
	type keys struct {
		Cells    int      `json:"cells"`
		Wrapped  []string `json:"wrapped"`
		Self     int      `json:"self"`
		SelfRow  []string `json:"selfRow"`
		Revoke   bool     `json:"revoke"`
		Revokers int      `json:"revokers"`
	}
	k := run(t, ctx, "keys", chromedp.Evaluate[keys](`(() => {
		const spans = [...document.querySelectorAll("tbody td .mono.nowrap")];
		const self = [...document.querySelectorAll("tbody tr")].filter(r => r.cells[0].textContent.includes("signed in with it"));
		return {cells: spans.length, wrapped: spans.filter(s => s.getClientRects().length > 1).map(s => s.textContent),
			self: self.length, selfRow: self.length ? [...self[0].cells].map(c => c.textContent) : [],
			revoke: self.length > 0 && !!self[0].querySelector('a[href$="/revoke"]'),
			revokers: document.querySelectorAll('tbody a[href$="/revoke"]').length}; })()`))
	if k.Cells == 0 || len(k.Wrapped) > 0 {
		t.Errorf("API keys at 390×844: %d ids and keys, wrapped across lines: %q", k.Cells, k.Wrapped)
	}
	if k.Self != 1 || k.Revoke {
		t.Errorf("API keys: %d rows marked as the session's key, revoke offered %v; want one, not offered", k.Self, k.Revoke)
	}
	t.Logf("the session's key: %q; %d other keys offered for revocation", k.SelfRow, k.Revokers)
	if backend == "sqlite" && (len(k.SelfRow) < 8 || !containsDate(k.SelfRow[7])) {
		t.Errorf("the config file's key: %q, want a name and a creation date", k.SelfRow)
	}
}

// containsDate reports whether s holds a date as the console writes one.
func containsDate(s string) bool {
	return len(s) >= 10 && s[4] == '-' && s[7] == '-'
}
