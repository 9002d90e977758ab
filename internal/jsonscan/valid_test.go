package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
)

var validCases = []string{
	`{}`, `[]`, ` [ 1 , 2 ] `, `{"a":{"b":[true,false,null]}}`, `"x"`, `0`, `-0.5e+10`, `1E5`, `"\u00e9\n\t\"\\\/"`,
	`"\xff raw bytes"`, `[1,]`, `{"a"}`, `{"a":1,}`, `01`, `1.`, `.5`, `-`, `1e`, `tru`, `nul`, `"\x01"`, `"\q"`,
	`"\u12"`, `"\u12g4"`, `"open`, `[`, `{"a":1`, ``, ` `, `1 2`, `{"a" 1}`, `[1 2]`, `{1:2}`, `nullx`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
}

func TestValid(t *testing.T) {
	for _, c := range validCases {
		if got, want := Valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("Valid(%.40q) = %v, json.Valid says %v", c, got, want)
		}
	}
}

// FuzzValid holds Valid to json.Valid.
func FuzzValid(f *testing.F) {
	for _, c := range validCases[:len(validCases)-2] {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", b, got, want)
		}
	})
}

func BenchmarkValid(b *testing.B) {
	doc := []byte(`[{"role":"system","content":"` + strings.Repeat("Answer politely, cite the knowledge base, and never invent order numbers or prices. ", 25) +
		`"},{"role":"user","content":"hello \"x\" \n"}]`)
	for _, v := range []struct {
		name  string
		valid func([]byte) bool
	}{{"jsonscan", Valid}, {"encoding-json", json.Valid}} {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				if !v.valid(doc) {
					b.Fatal("invalid")
				}
			}
		})
	}
}
