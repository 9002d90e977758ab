package guardrail

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// FuzzAppendString: appendString writes a string byte for byte as
// encoding/json does, with and without HTML escaping, and the hook
// results' encoders write what json.Marshal of their fields would.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain text", `quote " and \ backslash`, "line\nbreak\ttab\x01", "<a href=\"x\">&amp;</a>", "caf\u00e9 \u2028 \u2029 \U0001F600", "bad \xff utf-8"} {
		f.Add(s, int64(1500))
	}
	f.Fuzz(func(t *testing.T, s string, d int64) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s, true); !bytes.Equal(got, want) {
			t.Fatalf("appendString(%q, html) = %s, want %s", s, got, want)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.Encode(s)
		if got, want := appendString([]byte("x"), s, false), append([]byte("x"), bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...); !bytes.Equal(got, want) {
			t.Fatalf("appendString(%q) = %s, want %s", s, got, want)
		}
		cr := CheckResult{ID: s, Verdict: d%2 == 0, Explanation: s + "!", Error: s, Duration: time.Duration(d), Transformed: d%3 == 0}
		wantCR, _ := json.Marshal(struct {
			ID            string `json:"id"`
			Verdict       bool   `json:"verdict"`
			Explanation   string `json:"explanation"`
			Error         string `json:"error,omitempty"`
			ExecutionTime int64  `json:"execution_time"`
			Transformed   bool   `json:"transformed"`
		}{cr.ID, cr.Verdict, cr.Explanation, cr.Error, cr.Duration.Milliseconds(), cr.Transformed})
		if got, _ := cr.MarshalJSON(); !bytes.Equal(got, wantCR) {
			t.Fatalf("CheckResult = %s, want %s", got, wantCR)
		}
		for _, checks := range [][]CheckResult{nil, {}, {cr, {ID: "x"}}} {
			r := Result{ID: s, Verdict: d%2 == 1, Deny: d%5 == 0, Checks: checks, Duration: time.Duration(-d)}
			wantR, _ := json.Marshal(struct {
				ID            string        `json:"id"`
				Verdict       bool          `json:"verdict"`
				Deny          bool          `json:"deny"`
				Checks        []CheckResult `json:"checks"`
				ExecutionTime int64         `json:"execution_time"`
			}{r.ID, r.Verdict, r.Deny, r.Checks, r.Duration.Milliseconds()})
			if got, _ := r.MarshalJSON(); !bytes.Equal(got, wantR) {
				t.Fatalf("Result = %s, want %s", got, wantR)
			}
		}
	})
}
