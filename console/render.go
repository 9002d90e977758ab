package console

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelgateway/gateway/console/internal/htmltmpl"
)

// pageData is what every page template gets.
type pageData struct {
	Title  string
	Nav    string // the navigation entry that is current
	Base   string // the console's path
	CSRF   string // the token every form carries
	Signed bool   // whether a session is open (the navigation shows)
	Flash  string // a success message
	Error  string // a failure message, often the API's
	Data   any    // the page's own
}

// pageNames are the page templates, each parsed with layout.html.
var pageNames = []string{"signin", "error", "overview", "logs", "log", "apikeys", "created", "confirm",
	"virtualkeys", "configs", "config", "prompts", "prompt", "policies", "audit", "guardrails", "guardrail", "workspaces",
	"integrations", "integration", "providers", "models", "invite", "users", "invited", "signedin"}

// pageTemplate is a page's parsed templates, layout included.
type pageTemplate interface {
	// Execute writes the page for data to w, or nothing and an error.
	Execute(w io.Writer, data any) error
}

// parsedPages returns every page parsed with the layout. They are parsed
// when a console first renders a page, once for all consoles, so that a
// server that never serves its console keeps no template tree in memory.
var parsedPages = sync.OnceValue(parsePages)

// parsePages parses every page with the layout. A page that does not
// parse is a programmer's error: it panics.
func parsePages() map[string]pageTemplate {
	pages := make(map[string]pageTemplate, len(pageNames))
	for _, n := range pageNames {
		t, err := htmltmpl.ParseFS(files, funcs, "templates/layout.html", "templates/partials.html", "templates/"+n+".html")
		if err != nil {
			panic("console: " + err.Error())
		}
		pages[n] = t
	}
	return pages
}

// render writes page name with d, after the status; a template failure
// is a 500 with no partial page.
func (c *console) render(w http.ResponseWriter, r *http.Request, status int, name string, s *session, d *pageData) {
	d.Base = c.base
	d.Signed = s != nil
	if s != nil && d.CSRF == "" {
		d.CSRF = s.csrf
	}
	var buf bytes.Buffer
	if err := c.pages()[name].Execute(&buf, d); err != nil {
		http.Error(w, "console: the page could not be rendered", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(buf.Bytes())
	}
}

// funcs are the template functions of every page.
var funcs = htmltmpl.FuncMap{
	"when":  when,
	"num":   num,
	"usd":   usd,
	"cents": cents,
	"link":  link,
	"add":   func(a, b int) int { return a + b },
	"roles": func() []string { return []string{"owner", "admin", "member"} },
	"sub":   func(a, b int) int { return a - b },
	"count": count,
	"guardrailRefs": func(base string, in, out []string) any {
		return struct {
			Base                              string
			InputGuardrails, OutputGuardrails []string
		}{base, in, out}
	},
	"verdictRows": func(phase string, r hookResult) any {
		return struct {
			Phase  string
			Result hookResult
		}{phase, r}
	},
	"limit": func(s string, n int) string {
		if r := []rune(s); len(r) > n {
			return string(r[:n-1]) + "…"
		}
		return s
	},
}

// when formats a time for people, in UTC to the second.
func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05") + " UTC"
}

// num formats a number with thousands separators, and at most 2
// decimals when it is not whole.
func num(v any) string {
	var f float64
	switch n := v.(type) {
	case int:
		f = float64(n)
	case int64:
		f = float64(n)
	case float64:
		f = n
	default:
		return "—"
	}
	neg := f < 0
	f = math.Abs(f)
	whole := math.Floor(f)
	s := strconv.FormatFloat(whole, 'f', 0, 64)
	var b strings.Builder
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	if frac := f - whole; frac >= 0.005 {
		b.WriteString(strings.TrimPrefix(strconv.FormatFloat(frac, 'f', 2, 64), "0"))
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// usd formats a cost in US dollars, to the tenth of a thousandth under a
// cent, where model prices live.
func usd(f float64) string {
	switch {
	case f == 0:
		return "$0"
	case f < 0.01:
		return "$" + strconv.FormatFloat(f, 'f', 6, 64)
	}
	return "$" + strconv.FormatFloat(f, 'f', 2, 64)
}

// cents formats an amount the analytics routes give in US cents as
// dollars.
func cents(f float64) string { return usd(f / 100) }

// link returns path with the query of pairs (name, value, …), empty
// values left out.
func link(path string, pairs ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			q.Set(pairs[i], pairs[i+1])
		}
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// count says how many of a thing there are: "1 config", "3 configs".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return num(n) + " " + thing + "s"
}
