package htmltmpl_test

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelgateway/gateway/console/internal/htmltmpl"
)

var funcs = htmltmpl.FuncMap{
	"upper": strings.ToUpper,
	"add":   func(a, b int) int { return a + b },
	"fail":  func() (string, error) { return "", errors.New("failed") },
	"join":  func(sep string, s ...string) string { return strings.Join(s, sep) },
	"any":   func(v any) string { return fmt.Sprintf("%T", v) },
}

// both parses files (the first is the entry) with htmltmpl and with
// html/template and executes them with data. html/template escapes when
// it first executes, so a template htmltmpl refuses at parse time must
// fail there at execution.
func both(t *testing.T, files []string, data any) (ours, std string, errOurs, errStd error) {
	t.Helper()
	fsys := fstest.MapFS{}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = fmt.Sprintf("t%d.html", i)
		fsys[names[i]] = &fstest.MapFile{Data: []byte(f)}
	}
	var a, b bytes.Buffer
	tm, errOurs := htmltmpl.ParseFS(fsys, funcs, names...)
	if errOurs == nil {
		errOurs = tm.Execute(&a, data)
	}
	st, errStd := template.New(names[0]).Funcs(template.FuncMap(funcs)).ParseFS(fsys, names...)
	if errStd == nil {
		errStd = st.Execute(&b, data)
	}
	return a.String(), b.String(), errOurs, errStd
}

type inner struct {
	Name string
	N    int
}

func (inner) Method() string { return "method" }

type stringer struct{ s string }

func (s stringer) String() string { return "S(" + s.s + ")" }

type named string

type data struct {
	S      string
	Empty  string
	Ptr    *inner
	NilPtr *inner
	Any    any
	NilAny any
	Inner  inner
	inner
	List   []inner
	Strs   []string
	Map    map[string]string
	IntMap map[int]string
	Nil    map[string]string
	I      int
	U      uint8
	F      float64
	B      bool
	Bytes  []byte
	Str    stringer
	PStr   *stringer
	Err    error
	Named  named
	PS     *string
	T      time.Time
}

func sample() *data {
	s := "ptr <s>"
	return &data{
		S: `<a href="x">it's & "q"</a>`, Ptr: &inner{"p<", 2}, Any: inner{"any", 3}, Inner: inner{"in", 4},
		inner: inner{"embedded", 5}, List: []inner{{"a", 1}, {"b&", 2}}, Strs: []string{"x", "y"},
		Map: map[string]string{"k2": "v2", "k1": "v<1>", "a b": "sp"}, IntMap: map[int]string{10: "ten", 2: "two"},
		I: 42, U: 42, F: 2.5, B: true, Bytes: []byte("hi"), Str: stringer{"x"}, PStr: &stringer{"y"},
		Err: errors.New("bad <err>"), Named: "named&", PS: &s, T: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

// TestMatchesHTMLTemplate compares htmltmpl's output with html/template's
// for templates that use every construct and context htmltmpl supports.
func TestMatchesHTMLTemplate(t *testing.T) {
	cases := [][]string{
		{`<p>{{.S}}</p> {{.I}} {{.U}} {{.F}} {{.B}} {{.Bytes}} {{.Str}} {{.PStr}} {{.Err}} {{.Named}} {{.PS}} {{.T}}`},
		{`{{.Ptr}} {{.Inner}} {{.Any}} [{{.NilAny}}] [{{.NilPtr}}] [{{.Map.missing}}] [{{.Nil.x}}] {{.Map}} {{.List}}`},
		{`{{.Ptr.Name}} {{.Any.Name}} {{.Inner.N}} {{.Name}} {{.N}} {{.Map.k1}} {{(index .List 1).Name}}`},
		{`<title>{{.S}} x < y</title><textarea>{{.S}}</textarea>a < b <!DOCTYPE html> <!-- gone {{/* c */}} --> c<`},
		{`<a title="{{.S}}" class='{{.S}}' data-x="{{.S}}" value="{{.S}}">{{.S}}</a>`},
		{`<a href="{{.S}}">a</a><a href="/x/{{.S}}?q={{.S}}&r={{.S}}#{{.S}}">b</a><form action="{{.Map.k1}}/p"></form><img src="{{.PS}}">`},
		{`<a href="javascript:{{.S}}">a</a><a href="{{"javascript:alert(1)"}}">b</a><a href=" {{"JAVASCRIPT:x"}}">c</a><a data-url="{{"vbscript:x"}}">d</a>`},
		{`<a href="{{"http://x.y/a b?c=d&e=%41%zz"}}">a</a><a href="{{"mailto:a@b"}}">b</a><a href="{{"/a:b"}}">c</a><a xlink:href="{{"x:y"}}">d</a>`},
		{`<meta http-equiv="refresh" content="0;url={{.S}}"><meta http-equiv="refresh" content="{{.S}};url={{"javascript:x"}}"><meta name="d" content="{{.S}}">`},
		{`{{if .B}}yes{{else}}no{{end}} {{if .Empty}}e{{else if .S}}s{{else}}n{{end}} {{if not .B}}x{{end}} {{with .Ptr}}{{.Name}}{{else}}none{{end}} {{with .NilPtr}}x{{else}}nil{{end}}`},
		{`{{range .List}}<li>{{.Name}}</li>{{else}}empty{{end}}{{range $i, $v := .Strs}}{{$i}}={{$v}};{{end}}{{range $v := .Strs}}{{$v}}{{end}}{{range .Nil}}x{{else}}nil map{{end}}`},
		{`{{range $k, $v := .Map}}{{$k}}:{{$v}},{{end}} {{range $k, $v := .IntMap}}{{$k}}:{{$v}},{{end}} {{range .Strs}}[{{$.I}}]{{end}}`},
		{`{{$x := .S}}{{$y := 1}}{{if .B}}{{$x = "changed"}}{{$z := 2}}{{$z}}{{end}}{{$x}}{{$y}}{{range .Strs}}{{$y = add $y 1}}{{end}}{{$y}}`},
		{`{{template "a" .Ptr}}|{{template "b" "str"}}|{{template "c"}}|{{block "d" .}}default {{.I}}{{end}}{{define "a"}}{{.Name}}/{{$.N}}{{end}}{{define "b"}}{{.}}{{end}}{{define "c"}}[{{.}}]{{end}}`,
			`{{define "d"}}override {{.S}}{{end}}`},
		{`{{block "e" .}}kept{{end}}`, `{{define "e"}}{{end}}`},
		{`{{eq .I 42}} {{eq .I .U}} {{eq .S "x" "y"}} {{eq .Named "named&"}} {{ne .I 1}} {{lt .I 50}} {{le .I 42}} {{gt .F 2.0}} {{ge .U 43}} {{lt .I .U}} {{eq .NilAny nil}}`},
		{`{{and .B .S}} {{and .Empty .S}} {{or .Empty "dflt"}} {{or .S "dflt"}} {{and .B .NilPtr}} {{or .NilPtr .Ptr.Name}} {{not .Empty}} {{and .Empty .NilPtr.Name}}`},
		{`{{len .S}} {{len .List}} {{len .Map}} {{index .Map "k1"}} [{{index .Map "none"}}] {{index .Strs 1}} {{index .IntMap 10}} {{index .List 0 | print}}`},
		{`{{print .S 1 2 "a" "b" .NilAny .Ptr}} {{printf "%d-%s-%v-%q" .I .S .Ptr .Strs}} {{.S | printf "%s!"}} {{.I | add 1}} {{"x" | upper}} {{join "," "a" "b" .S}}`},
		{`{{upper .S}} {{add .I 8}} {{add 1 2}} {{any 1}} {{any 1.5}} {{any "s"}} {{any .Ptr}} {{any .NilAny}} {{1.5}} {{0x10}} {{'a'}} {{true}} {{"lit"}}`},
		{`<a href="/p?{{if .B}}a={{.S}}{{end}}">x</a><a href="{{if .B}}/y{{else}}/z{{end}}{{.S}}">y</a>`},
		{`<input type=checkbox checked name="n" {{if .B}}disabled{{end}}><a href="/x" {{if .B}}aria-current="page"{{end}}>z</a><br/>`},
		{`<svg viewBox="0 0 {{.I}} {{.I}}"><polyline points="{{.F}},{{.I}}"/><text x="{{add .I 1}}">{{.S}}</text></svg>`},
		{`{{define "r"}}{{if lt . 3}}{{.}}<{{template "r" add . 1}}{{end}}{{end}}{{template "r" 0}}`},
		{`<a title="{{template "t" .S}}" href="{{template "t" .S}}">{{template "t" .S}}</a>{{define "t"}}{{.}}-{{"javascript:x"}}{{end}}`},
		{`<a href="/x?{{template "u" .}}">y</a>{{define "u"}}a={{.S}}&b={{.I}}{{end}}`},
		// Execution errors: both must fail.
		{`{{.NilPtr.Name}}`},
		{`{{.Nope}}`},
		{`{{fail}}`},
		{`{{index .Strs 5}}`},
		{`{{len .I}}`},
		{`{{lt .S 1}}`},
		{`{{range .I}}{{.}}{{end}}{{range $v := 3}}{{$v}}{{end}}{{range 0}}x{{else}}none{{end}}`},
		{`{{range $i, $v := 3}}{{end}}`},
		{`{{range .F}}{{end}}`},
		{`{{template "x"}}`},
		{`{{.S.X}}`},
		{`{{add "a" 1}}`},
	}
	for i, files := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			ours, std, errOurs, errStd := both(t, files, sample())
			if (errOurs == nil) != (errStd == nil) {
				t.Fatalf("htmltmpl error %v, html/template error %v\nhtmltmpl:      %q\nhtml/template: %q", errOurs, errStd, ours, std)
			}
			if ours != std {
				t.Errorf("output differs\nhtmltmpl:      %q\nhtml/template: %q", ours, std)
			}
		})
	}
}

// TestRefusedAtParse checks that an action where htmltmpl does not escape
// fails when the template is parsed, not when a page is served, and that
// html/template would not have written it as plain text either.
func TestRefusedAtParse(t *testing.T) {
	cases := map[string]string{
		"script":          `<script>var x = {{.S}};</script>`,
		"script text":     `<script>var x = 1;</script>`,
		"style":           `<style>p { color: {{.S}} }</style>`,
		"event handler":   `<a onclick="f({{.S}})">x</a>`,
		"style attribute": `<p style="color: {{.S}}">x</p>`,
		"srcset":          `<img srcset="{{.S}}">`,
		"unquoted":        `<a title={{.S}}>x</a>`,
		"unquoted url":    `<a href={{.S}}>x</a>`,
		"attribute name":  `<a {{.S}}="x">y</a>`,
		"after name":      `<a title {{.S}}>y</a>`,
		"comment":         `<!-- {{.S}} -->`,
		"ambiguous url":   `<a href="{{if .B}}/x?a={{else}}/y/{{end}}{{.S}}">x</a>`,
		"branches differ": `{{if .B}}<a title="{{end}}x`,
		"ends in a tag":   `<a title="x`,
		"html escaper":    `{{.S | html}}`,
		"break":           `{{range .Strs}}{{break}}{{end}}`,
		"unknown func":    `{{nosuch .S}}`,
		"no such tmpl":    `{{template "nosuch" .}}`,
		"bad quote":       `<a title="x" "y">z</a>`,
		"unquoted quote":  `<a title=x"y>z</a>`,
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := htmltmpl.ParseFS(fstest.MapFS{"t.html": {Data: []byte(src)}}, funcs, "t.html")
			if err == nil {
				t.Fatalf("ParseFS(%q) succeeded, want an error", src)
			}
			if !strings.HasPrefix(err.Error(), "htmltmpl: ") {
				t.Errorf("error %q does not name the package", err)
			}
		})
	}
}

// TestMethodNotCalled checks that a template naming a method fails with
// an error that says the name is not a field, rather than calling it.
func TestMethodNotCalled(t *testing.T) {
	tm, err := htmltmpl.ParseFS(fstest.MapFS{"t.html": {Data: []byte(`<p>{{.Name}} {{.Method}}</p>`)}}, nil, "t.html")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	err = tm.Execute(&b, inner{Name: "n"})
	if err == nil || !strings.Contains(err.Error(), "can't evaluate field Method") {
		t.Fatalf("Execute error = %v, want one about the field Method", err)
	}
	if b.Len() != 0 {
		t.Errorf("a failed execution wrote %q", b.String())
	}
}

// TestBadFuncMap checks that a function that cannot be called from a
// template is refused.
func TestBadFuncMap(t *testing.T) {
	for name, fn := range map[string]any{"not a func": 1, "no result": func() {}, "second not error": func() (int, int) { return 0, 0 }} {
		_, err := htmltmpl.ParseFS(fstest.MapFS{"t.html": {Data: []byte(`x`)}}, htmltmpl.FuncMap{"f": fn}, "t.html")
		if err == nil {
			t.Errorf("%s: ParseFS succeeded", name)
		}
	}
	if _, err := htmltmpl.ParseFS(fstest.MapFS{}, nil, "none*.html"); err == nil {
		t.Error("a pattern that matches nothing is not an error")
	}
}

// TestConcurrentExecute runs one template from many goroutines; with
// -race it checks that executions share nothing they write.
func TestConcurrentExecute(t *testing.T) {
	tm, err := htmltmpl.ParseFS(fstest.MapFS{"t.html": {Data: []byte(`{{range .List}}<a href="/x/{{.Name}}">{{.N}}</a>{{end}}`)}}, nil, "t.html")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	outs := make([]string, 8)
	for i := range outs {
		wg.Go(func() {
			var b bytes.Buffer
			d := data{List: []inner{{fmt.Sprint(i), i}}}
			if err := tm.Execute(&b, d); err != nil {
				t.Error(err)
			}
			outs[i] = b.String()
		})
	}
	wg.Wait()
	for i, o := range outs {
		if want := fmt.Sprintf(`<a href="/x/%d">%d</a>`, i, i); o != want {
			t.Errorf("execution %d wrote %q, want %q", i, o, want)
		}
	}
}

// fuzzPage has an action in every context htmltmpl supports.
const fuzzPage = `<title>{{.A}}</title><p title="{{.A}}" class='{{.B}}'>{{.A}}{{.B}}</p>` +
	`<a href="{{.A}}">1</a><a href="{{.B}}/p/{{.C}}?q={{.A}}&r={{.C}}#{{.B}}">2</a><form action="/f?{{.C}}"></form>` +
	`<textarea>{{.C}}</textarea><meta http-equiv="refresh" content="{{.C}};url={{.A}}">{{index .M .A}}{{range $k, $v := .M}}{{$k}}={{$v}}{{end}}`

// FuzzMatchesHTMLTemplate writes random strings in text, attribute,
// URL-start, URL-path and URL-query positions and wants html/template's
// bytes.
func FuzzMatchesHTMLTemplate(f *testing.F) {
	f.Add("javascript:alert(1)", "/a b?c=d&e", "<script>'\"&+\x00")
	f.Add("http://x/%zz%41", "mailto:a@b", "ünï ☃ \xff")
	f.Add(" JaVaScRiPt:x", "#frag", "a:b/c")
	fsys := fstest.MapFS{"p.html": {Data: []byte(fuzzPage)}}
	ours, err := htmltmpl.ParseFS(fsys, nil, "p.html")
	if err != nil {
		f.Fatal(err)
	}
	std := template.Must(template.ParseFS(fsys, "p.html"))
	f.Fuzz(func(t *testing.T, a, b, c string) {
		d := struct {
			A, B, C string
			M       map[string]string
		}{a, b, c, map[string]string{a: b, c: a}}
		var x, y bytes.Buffer
		if err := ours.Execute(&x, d); err != nil {
			t.Fatal(err)
		}
		if err := std.Execute(&y, d); err != nil {
			t.Fatal(err)
		}
		if x.String() != y.String() {
			t.Errorf("output differs for %q, %q, %q\nhtmltmpl:      %q\nhtml/template: %q", a, b, c, x.String(), y.String())
		}
	})
}
