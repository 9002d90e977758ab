package console

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math/rand/v2"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// The console renders its pages with internal/htmltmpl, which must write
// exactly what html/template writes for the same templates and data. The
// harness (newEnvServer) wraps every page in parityPage, so that every
// page any test renders through the console's handlers is also rendered
// by html/template and compared; TestPagesMatchHTMLTemplate renders every
// page with generated data full of hostile values.

// stdPages parses every page with html/template, as the console did
// before it had htmltmpl.
func stdPages() map[string]*template.Template {
	layout := template.Must(template.New("layout.html").Funcs(template.FuncMap(funcs)).ParseFS(files, "templates/layout.html", "templates/partials.html"))
	pages := make(map[string]*template.Template, len(pageNames))
	for _, n := range pageNames {
		pages[n] = template.Must(template.Must(layout.Clone()).ParseFS(files, "templates/"+n+".html"))
	}
	return pages
}

// stdPagesOnce is stdPages, parsed once for the whole test binary.
var stdPagesOnce = sync.OnceValue(stdPages)

// parityPage renders a page with the console's template and with
// html/template, writes the console's, and reports a difference in the
// bytes or in whether rendering failed.
type parityPage struct {
	t    testing.TB
	name string
	ours pageTemplate
	std  *template.Template
}

func (p parityPage) Execute(w io.Writer, data any) error {
	var a, b bytes.Buffer
	errA := p.ours.Execute(&a, data)
	errB := p.std.ExecuteTemplate(&b, "layout.html", data)
	if msg := parity(a.Bytes(), b.Bytes(), errA, errB); msg != "" {
		p.t.Errorf("page %s: %s", p.name, msg)
	}
	if errA == nil {
		_, errA = w.Write(a.Bytes())
	}
	return errA
}

// parity describes how the output and error of htmltmpl (a, errA) differ
// from html/template's (b, errB), or returns "".
func parity(a, b []byte, errA, errB error) string {
	switch {
	case (errA == nil) != (errB == nil):
		return fmt.Sprintf("htmltmpl error %v, html/template error %v", errA, errB)
	case errA != nil:
		return ""
	case !bytes.Equal(a, b):
		i := 0
		for i < len(a) && i < len(b) && a[i] == b[i] {
			i++
		}
		from := max(0, i-80)
		return fmt.Sprintf("output differs at byte %d:\nhtmltmpl:      %q\nhtml/template: %q", i, a[from:min(len(a), i+80)], b[from:min(len(b), i+80)])
	}
	return ""
}

// withParity returns pages wrapped in parityPage, reporting to t.
func withParity(t testing.TB, pages map[string]pageTemplate) map[string]pageTemplate {
	std := stdPagesOnce()
	out := make(map[string]pageTemplate, len(pages))
	for n, p := range pages {
		out[n] = parityPage{t: t, name: n, ours: p, std: std[n]}
	}
	return out
}

// hostile are strings that test escaping: markup, quotes, schemes that
// must be filtered, URLs with queries, fragments, spaces and percents,
// Unicode, NUL and invalid UTF-8.
var hostile = []string{
	"", "plain", "<script>alert(1)</script>", `"><img src=x onerror=alert(1)>`, `it's "quoted" & <b>bold</b>`,
	"javascript:alert(1)", "JaVaScRiPt:alert(1)", " javascript:alert(1)", "data:text/html,<b>x</b>", "vbscript:x",
	"http://example.com/a b?c=d&e=f#g h", "https://example.com/%zz%41%2F?q=50%&r=a+b", "mailto:a@example.com?subject=hi there",
	"/console/logs?api_key_ids=k&x=<y>", "?a=1&b=2", "#frag'ment", "a:b/c", "/a:b", "//evil.example/x", "%", "%%41",
	"ünïcödé ☃ 𝔘𝔫𝔦", "nul\x00byte", "bad\xff\xfeutf8", "+plus+", "tab\tnew\nline", "&amp; &#34; &lt;", "{{.Title}}",
	"</title><script>x</script>", "</textarea><b>x</b>", "0;url=javascript:alert(1)", "a,b 1x, c 2x",
}

// templateWords are the string literals of the templates, so that the
// generated data also meets the branches that compare with them.
var templateWords = sync.OnceValue(func() []string {
	var words []string
	re := regexp.MustCompile(`{{[^}]*}}`)
	lit := regexp.MustCompile(`"([^"]*)"`)
	entries, _ := files.ReadDir("templates")
	seen := map[string]bool{}
	for _, e := range entries {
		b, _ := files.ReadFile("templates/" + e.Name())
		for _, action := range re.FindAllString(string(b), -1) {
			for _, m := range lit.FindAllStringSubmatch(action, -1) {
				if !seen[m[1]] {
					seen[m[1]] = true
					words = append(words, m[1])
				}
			}
		}
	}
	return words
})

// filler fills values with random data.
type filler struct {
	r     *rand.Rand
	words []string
}

func (f *filler) str() string {
	if f.r.IntN(3) == 0 {
		return f.words[f.r.IntN(len(f.words))]
	}
	return hostile[f.r.IntN(len(hostile))]
}

// fill sets v, which must be settable, to random data.
func (f *filler) fill(v reflect.Value, depth int) {
	if v.Type() == reflect.TypeFor[time.Time]() {
		if f.r.IntN(4) > 0 {
			v.Set(reflect.ValueOf(time.Unix(f.r.Int64N(4e9), f.r.Int64N(1e9)).In(time.FixedZone("X", 3600))))
		}
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(f.str())
	case reflect.Bool:
		v.SetBool(f.r.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt([]int64{0, 1, 2, -1, 7, 999, 1234567, -98765}[f.r.IntN(8)])
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(f.r.IntN(300)))
	case reflect.Float32, reflect.Float64:
		v.SetFloat([]float64{0, 0.5, 1, 0.004, 12345.678, -3.25, 1e21, 1e-7}[f.r.IntN(8)])
	case reflect.Pointer:
		if depth > 6 || f.r.IntN(8) == 0 {
			return
		}
		p := reflect.New(v.Type().Elem())
		f.fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		if depth > 6 {
			return
		}
		n := f.r.IntN(4)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			f.fill(s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			f.fill(v.Index(i), depth+1)
		}
	case reflect.Map:
		if depth > 6 {
			return
		}
		m := reflect.MakeMap(v.Type())
		for range f.r.IntN(4) {
			k := reflect.New(v.Type().Key()).Elem()
			e := reflect.New(v.Type().Elem()).Elem()
			f.fill(k, depth+1)
			f.fill(e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			fv := v.Field(i)
			if !fv.CanSet() {
				// Unexported, such as an embedded struct whose fields
				// are promoted: reach it anyway, the test owns it.
				fv = reflect.NewAt(fv.Type(), unsafe.Pointer(fv.UnsafeAddr())).Elem()
			}
			f.fill(fv, depth+1)
		}
	case reflect.Interface:
		if v.NumMethod() == 0 {
			switch f.r.IntN(4) {
			case 0:
				v.Set(reflect.ValueOf(f.str()))
			case 1:
				v.Set(reflect.ValueOf(float64(f.r.IntN(1000)) / 8))
			case 2:
				v.Set(reflect.ValueOf(f.r.IntN(100)))
			}
		}
	}
}

// pageDataTypes are the types of each page's data, as the console's
// handlers give it.
var pageDataTypes = map[string]any{
	"signin":       signInChoices{},
	"error":        nil,
	"overview":     &overviewPage{},
	"logs":         &logsPage{},
	"log":          &logRecord{},
	"apikeys":      &listPage[apiKey]{},
	"created":      &created{},
	"confirm":      &confirmation{},
	"virtualkeys":  &listPage[virtualKey]{},
	"configs":      &listPage[savedConfig]{},
	"config":       &configPage{},
	"prompts":      &listPage[promptItem]{},
	"prompt":       &promptPage{},
	"policies":     &policiesPage{},
	"audit":        &auditPage{},
	"guardrails":   &listPage[guardrailRecord]{},
	"guardrail":    &guardrailPage{},
	"workspaces":   &listPage[workspace]{},
	"integrations": &listPage[integration]{},
	"integration":  &integrationPage{},
	"providers":    &listPage[provider]{},
	"models":       &listPage[model]{},
	"invite":       inviteData{},
	"users":        &usersData{},
	"invited":      invited{},
	"signedin":     "",
}

// TestPagesMatchHTMLTemplate renders every page, many times, with random
// data made of hostile strings and the templates' own words, with the
// console's templates and with html/template, and wants the same bytes
// (or both failing). Each page must also render without error in most
// rounds, so that the comparison covers it.
func TestPagesMatchHTMLTemplate(t *testing.T) {
	ours := parsePages()
	std := stdPagesOnce()
	if len(pageDataTypes) != len(pageNames) {
		t.Fatalf("pageDataTypes has %d pages, pageNames %d", len(pageDataTypes), len(pageNames))
	}
	rounds := 300
	if testing.Short() {
		rounds = 40
	}
	for _, name := range pageNames {
		t.Run(name, func(t *testing.T) {
			proto, ok := pageDataTypes[name]
			if !ok {
				t.Fatalf("no data type for page %s", name)
			}
			f := &filler{r: rand.New(rand.NewPCG(1, uint64(len(name)))), words: templateWords()}
			rendered := 0
			for i := range rounds {
				d := &pageData{}
				f.fill(reflect.ValueOf(d).Elem(), 0)
				d.Data = nil
				if proto != nil {
					pt := reflect.TypeOf(proto)
					v := reflect.New(pt).Elem()
					if pt.Kind() == reflect.Pointer {
						v.Set(reflect.New(pt.Elem()))
						f.fill(v.Elem(), 1)
					} else {
						f.fill(v, 1)
					}
					d.Data = v.Interface()
				}
				if lp, ok := d.Data.(*logsPage); ok {
					lp.Ranges = []struct{ Name, Label string }{{f.str(), f.str()}, {"1h", "Last hour"}}
				}
				var a, b bytes.Buffer
				errA := ours[name].Execute(&a, d)
				errB := std[name].ExecuteTemplate(&b, "layout.html", d)
				if msg := parity(a.Bytes(), b.Bytes(), errA, errB); msg != "" {
					t.Fatalf("round %d: %s", i, msg)
				}
				if errA == nil {
					rendered++
				}
			}
			if rendered < rounds/2 {
				t.Errorf("only %d of %d rounds rendered without error", rendered, rounds)
			}
		})
	}
}

// TestParityCatchesDifference makes sure that the comparison the harness
// and TestPagesMatchHTMLTemplate rely on notices a page that differs.
func TestParityCatchesDifference(t *testing.T) {
	if parity([]byte("<p>a&amp;b</p>"), []byte("<p>a&b</p>"), nil, nil) == "" {
		t.Error("different bytes are reported as the same")
	}
	if parity(nil, []byte("x"), io.EOF, nil) == "" {
		t.Error("one engine failing alone is not reported")
	}
	if strings.TrimSpace(parity([]byte("same"), []byte("same"), nil, nil)) != "" {
		t.Error("equal output is reported as different")
	}
}

// BenchmarkRenderLogs renders the logs page with 100 rows with the
// console's templates and with html/template.
func BenchmarkRenderLogs(b *testing.B) {
	p := &logsPage{Filters: logsFilters{filters: filters{Model: "openai/gpt-4o"}, Any: true}, Ranges: ranges,
		Next: "/console/logs?after=log-99", First: "/console/logs"}
	at := time.Date(2026, 11, 28, 1, 2, 3, 0, time.UTC)
	for i := range 100 {
		r := logRecord{ID: fmt.Sprintf("log-%08d", i), CreatedAt: at.Add(-time.Duration(i) * time.Minute),
			TraceID: fmt.Sprintf("trace-%d", i), APIKeyID: "key-ws1", VirtualKey: "vk-openai", AIOrg: "openai",
			AIModel: "gpt-4o-mini", ResponseStatusCode: 200, IsSuccess: i%17 != 0, ResponseTimeUS: int64(420 + i*1000),
			TotalUnits: int64(20 + i), Cost: 0.0001 * float64(i), CacheStatus: []string{"", "HIT"}[i%2],
			Metadata: map[string]string{"team": fmt.Sprintf("t%d", i%5), "_user": "ana@example.com"}}
		r.setTimes()
		p.Logs = append(p.Logs, r)
	}
	d := &pageData{Title: "Logs", Nav: "logs", Base: "/console", CSRF: "csrf-token", Signed: true, Data: p}
	ours := parsePages()["logs"]
	std := stdPagesOnce()["logs"]
	var a, c bytes.Buffer
	if err := ours.Execute(&a, d); err != nil {
		b.Fatal(err)
	}
	if err := std.ExecuteTemplate(&c, "layout.html", d); err != nil {
		b.Fatal(err)
	}
	if msg := parity(a.Bytes(), c.Bytes(), nil, nil); msg != "" {
		b.Fatal(msg)
	}
	for _, e := range []struct {
		name string
		out  *bytes.Buffer
		run  func(*bytes.Buffer) error
	}{
		{"htmltmpl", &a, func(w *bytes.Buffer) error { return ours.Execute(w, d) }},
		{"html-template", &c, func(w *bytes.Buffer) error { return std.ExecuteTemplate(w, "layout.html", d) }},
	} {
		b.Run(e.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(e.out.Len()))
			for b.Loop() {
				e.out.Reset()
				if err := e.run(e.out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
