package guardrail

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzScanPII(f *testing.F) {
	for _, s := range []string{"mail a.b@c.example now", "4111 1111 1111 1111", "123-45-6789", "GB82 WEST 1234 5698 7654 32",
		"+44 20 7946 0958", "(415) 555-2671", "::1 and 2001:db8::1", "10.0.0.1.", "@@@@", "1-1-1-1-1", "x@y@z.example"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fs := scanPII(s, allPII)
		end := 0
		for _, x := range fs {
			if x.start < end || x.end <= x.start || x.end > len(s) {
				t.Fatalf("bad finding %+v after %d in %q", x, end, s)
			}
			end = x.end
		}
		out := redact(s, fs)
		// Redacting again finds nothing new: placeholders are not data.
		if again := scanPII(out, allPII); len(again) != 0 && utf8.ValidString(s) {
			for _, x := range again {
				t.Errorf("second pass found %s %q in %q", x.category, out[x.start:x.end], out)
			}
		}
		if len(fs) == 0 && out != s {
			t.Fatal("redact changed a text without findings")
		}
	})
}

func FuzzSchema(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{"type":"string","pattern":"^x"}},"required":["a"],"additionalProperties":false}`, `{"a":"xy"}`)
	f.Add(`{"anyOf":[{"type":"integer","minimum":1},{"enum":[null,"a"]}],"not":{"const":3}}`, `3`)
	f.Add(`{"items":{"oneOf":[{"type":"number"},{"type":"string","maxLength":2}]},"maxItems":3}`, `[1,"ab",[]]`)
	f.Add(`{"allOf":[true,{"type":["null","boolean"]}]}`, `false`)
	f.Fuzz(func(t *testing.T, schema, value string) {
		s, err := CompileSchema(json.RawMessage(schema))
		if err != nil {
			if !strings.Contains(err.Error(), ":") && err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		var v any
		if json.Unmarshal([]byte(value), &v) != nil {
			return
		}
		errs := s.Validate(v)
		if len(errs) > maxSchemaErrors {
			t.Fatalf("%d errors", len(errs))
		}
		if len(s.Validate(v)) != len(errs) {
			t.Fatal("validation is not deterministic")
		}
	})
}

func FuzzRequestTexts(f *testing.F) {
	f.Add(`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`)
	f.Add(`{"prompt":["x","y"]}`)
	f.Add(`{"messages":[{"role":"user","content":"é\u0000"}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		texts, err := RequestTexts([]byte(body))
		if err != nil {
			return
		}
		parts := make([]string, len(texts.Parts))
		for i, p := range texts.Parts {
			parts[i] = "<" + p + ">"
		}
		out, err := texts.Replace(parts)
		if err != nil || !json.Valid(out) {
			t.Fatalf("replace: %v, %s", err, out)
		}
		again, err := RequestTexts(out)
		if err != nil || strings.Join(again.Parts, "\x00") != strings.Join(parts, "\x00") {
			t.Fatalf("after replacing: %q, want %q", again, parts)
		}
	})
}
