package jsonscan

import (
	"strings"
	"testing"
)

// FuzzSkipString: SkipString ends where the loop over the bytes does,
// escapes, unterminated strings and trailing backslashes included.
func FuzzSkipString(f *testing.F) {
	for _, s := range []string{`"abc"`, `"a\"b"`, `"a\\"b"`, `"a\\\"b"`, `"\\\\"`, `"abc`, `"ab\`, `"`, `""`, `"x\"`, `"` + strings.Repeat(`\\`, 40) + `"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != '"' {
			return
		}
		if got, want := SkipString(b, 0), skipStringSlow(b, 0); got != want {
			t.Fatalf("SkipString(%q) = %d, want %d", b, got, want)
		}
	})
}

func BenchmarkSkipString(b *testing.B) {
	doc := []byte(`"` + strings.Repeat("Answer politely, cite the knowledge base, and never invent order numbers. ", 55) + `\"quoted\" end"`)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if SkipString(doc, 0) != len(doc) {
			b.Fatal("wrong end")
		}
	}
}
