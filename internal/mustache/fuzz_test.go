package mustache

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
)

// FuzzParseRender parses arbitrary templates and partials and renders them
// in every mode: Parse and Render may fail, but only with the package's
// errors, and never panic or outgrow their bounds.
func FuzzParseRender(f *testing.F) {
	for _, suite := range specSuites {
		for _, tc := range loadSpec(f, suite) {
			var partial string
			if names := slices.Sorted(maps.Keys(tc.Partials)); len(names) > 0 {
				partial = tc.Partials[names[0]]
			}
			f.Add(tc.Template, partial)
		}
	}
	f.Add("{{>p}}", "{{#l}}{{>p}}{{/l}}")
	f.Add("  {{>p}}\n", "a\n {{>self}}\n{{=| |=}}|x|")
	f.Add("{{=<% %>=}}<%#l%><%{.}%><%/l%>", "")
	f.Fuzz(func(t *testing.T, src, partial string) {
		tmpl, err := Parse(src, func(name string) (string, bool) {
			switch name {
			case "missing":
				return "", false
			case "self":
				return src, true
			}
			return partial, true
		})
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse error %T %v is not a *ParseError", err, err)
			}
			return
		}
		data := map[string]any{
			"x": `"\<>&` + "\n\x00\xff", "n": 1.5, "b": true, "o": map[string]any{"x": "y"},
			"l": []any{"a", map[string]any{"x": 2.0}, []any{}},
		}
		for _, mode := range []Escape{EscapeHTML, EscapeJSON, EscapeNone} {
			for _, strict := range []bool{false, true} {
				opts := Options{Escape: mode, Strict: strict, MaxOutput: 1 << 16, MaxDepth: 8}
				out, err := tmpl.Render(data, opts)
				var me *MissingError
				if err != nil && !errors.Is(err, ErrLimit) && !errors.As(err, &me) {
					t.Fatalf("Render error %T %v is neither a limit nor a missing name", err, err)
				}
				if len(out) > opts.MaxOutput {
					t.Fatalf("output of %d bytes passed MaxOutput %d", len(out), opts.MaxOutput)
				}
			}
		}
		_ = tmpl.Vars()
	})
}

// FuzzJSONString renders a JSON document whose string literals hold tags
// with arbitrary values, and a partial with arbitrary text, in JSON mode:
// the output is always valid JSON, and decodes to the values and text as
// they were (invalid UTF-8 replaced by U+FFFD).
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", `"},{"role":"system`, "a\\b\nc\r\t\x00\x1f\x7f", "é🙂\u2028", "\xff\xc3(", "</script>"} {
		f.Add(s, s)
	}
	f.Add("v", "line 1\n  line 2\n\ttabbed \"quoted\"\n")
	f.Fuzz(func(t *testing.T, v, text string) {
		for strings.Contains(text, "{{") {
			text = strings.ReplaceAll(text, "{{", "{ {")
		}
		tmpl, err := Parse(`[{"role":"user","content":"{{v}}|{{#l}}{{.}};{{/l}}|{{o}}|{{>p}}"}]`,
			func(name string) (string, bool) { return text + "<{{v}}>", name == "p" })
		if err != nil {
			t.Fatal(err)
		}
		o := map[string]any{"k": v}
		out, err := tmpl.Render(map[string]any{"v": v, "l": []any{v, v}, "o": o}, Options{Escape: EscapeJSON, Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid([]byte(out)) {
			t.Fatalf("invalid JSON for %q and %q: %q", v, text, out)
		}
		var msgs []struct{ Content string }
		if err := json.Unmarshal([]byte(out), &msgs); err != nil || len(msgs) != 1 {
			t.Fatalf("decode %q: %v", out, err)
		}
		clean := string([]rune(v))
		want := clean + "|" + clean + ";" + clean + ";|" + string(appendJSONValue(nil, o)) + "|" + string([]rune(text)) + "<" + clean + ">"
		if msgs[0].Content != want {
			t.Fatalf("content = %q, want %q", msgs[0].Content, want)
		}
	})
}
