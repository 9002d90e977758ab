package gateway

import (
	"strconv"
	"strings"
	"testing"
)

// BenchmarkConditionsWorstCase measures the worst case of one request's
// conditions at the bounds of the trust model: 32 $regex tests, none matching
// (so every one runs), whose patterns compile to nearly the 1,024
// instructions a config may hold in all and keep that many threads alive
// at every step (optional characters, no literal prefix to skip to), each
// over a 4 KiB value of a body of 1 MiB. The cost is about instructions ×
// value length: "32 small" spreads the instructions over 32 patterns,
// "2 large" puts most of them in two.
func BenchmarkConditionsWorstCase(b *testing.B) {
	value := strings.Repeat("a", maxRegexValue)
	var body strings.Builder
	body.WriteString(`{"messages":"` + strings.Repeat("x", 1<<20) + `"`)
	for i := range maxConditions {
		body.WriteString(`,"f` + strconv.Itoa(i) + `":"` + value + `"`)
	}
	body.WriteString(`}`)
	for _, bc := range []struct {
		name    string
		pattern func(i int) string // the i-th condition's pattern
	}{
		{"32 small", func(int) string { return `(?:a?){14}b` }}, // 32 × 31 instructions
		{"cheap", func(int) string { return `^b` }},             // the rest: finding and decoding the fields
		{"2 large", func(i int) string { // 2 × 451, and 30 × 4
			if i < 2 {
				return `(?:a?){224}b`
			}
			return `^b`
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			conds := make([]string, maxConditions)
			for i := range conds {
				conds[i] = `{"query":{"params.f` + strconv.Itoa(i) + `":{"$regex":"` + bc.pattern(i) + `"}},"then":"a"}`
			}
			c, err := ParseConfig([]byte(`{"strategy":{"mode":"conditional","conditions":[` + strings.Join(conds, ",") +
				`],"default":"a"},"targets":[{"name":"a"}]}`))
			if err != nil {
				b.Fatal(err)
			}
			data := []byte(body.String())
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				in := &matchInput{ctx: b.Context(), body: data}
				for _, cond := range c.Strategy.Conditions {
					if cond.match.match(in) || in.err != nil {
						b.Fatal("a condition matched or failed")
					}
				}
			}
		})
	}
}
