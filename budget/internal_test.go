package budget

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
)

// FuzzUsageLimitsJSON: any usage_limits body is either refused with a 400
// naming a usage_limits field, or accepted as given and then enforceable:
// its budget set parses without error.
func FuzzUsageLimitsJSON(f *testing.F) {
	for _, s := range []string{`{"type":"tokens","credit_limit":5}`, `{"credit_limit":1,"alert_threshold":1,"periodic_reset":"weekly"}`,
		`[{"type":"cost","credit_limit":0.5,"periodic_reset_days":30}]`, `null`, `{"credit_limit":-1}`, `[{},{}]`, `{"next_usage_reset_at":"2026-01-01T00:00:00Z","credit_limit":3}`} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, raw []byte, workspace bool) {
		out, err := gateway.UsageLimitsJSON(json.RawMessage(raw), workspace)
		if err != nil {
			e, ok := err.(*gateway.Error)
			if !ok || e.Status != 400 || e.Param == "" {
				t.Fatalf("%q: error %v, want a 400 naming a parameter", raw, err)
			}
			return
		}
		if out == nil {
			return
		}
		kind := "api_key"
		if workspace {
			kind = "workspace"
		}
		if s := newBudgetSet(kind, "id", "ws", out, time.Time{}); s.err != nil {
			t.Fatalf("%q accepted, then not enforceable: %v", raw, s.err)
		}
	})
}

// FuzzMaxTokens: scanBody never panics and finds only a cap that is
// there, and a model only in a JSON object.
func FuzzMaxTokens(f *testing.F) {
	for _, s := range []string{`{"max_tokens":5}`, `{"a":{"max_tokens":3},"max_completion_tokens":7}`, `{"max_tokens":-1}`, `{`, `[]`, `{"max_output_tokens":1e3}`, `{"model":"gpt-4o","max_tokens":9}`, `{"model":5}`, `{"model":"a\\u00e9"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		model, n, ok := scanBody(body)
		if !ok && model == "" {
			return
		}
		var v map[string]json.RawMessage
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatalf("%q: found %d, model %q in a body that is not a JSON object", body, n, model)
		}
		if n < 0 {
			t.Fatalf("%q: negative cap %d", body, n)
		}
	})
}

// TestUsagePeriod: weekly periods start on Mondays, monthly ones on the
// 1st, both at 00:00 UTC; periods of days run from the anchor.
func TestUsagePeriod(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		reset       string
		days        int
		now         string
		start, next string
	}{
		{"weekly", 0, "2026-11-29T23:59:59Z", "2026-11-23T00:00:00Z", "2026-11-30T00:00:00Z"}, // a Sunday
		{"weekly", 0, "2026-11-30T00:00:00Z", "2026-11-30T00:00:00Z", "2026-12-07T00:00:00Z"}, // the Monday
		{"weekly", 0, "2026-11-30T05:00:00+09:00", "2026-11-23T00:00:00Z", "2026-11-30T00:00:00Z"},
		{"monthly", 0, "2026-12-31T23:59:59Z", "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"monthly", 0, "2027-01-01T00:00:00Z", "2027-01-01T00:00:00Z", "2027-02-01T00:00:00Z"},
		{"", 10, "2026-11-25T12:00:00Z", "2026-11-21T06:00:00Z", "2026-12-01T06:00:00Z"},
		{"", 0, "2026-11-25T12:00:00Z", "", ""},
	} {
		start, next := usagePeriod(c.reset, c.days, "2026-11-01T06:00:00Z", at(c.now))
		got := [2]string{}
		if !start.IsZero() {
			got = [2]string{start.Format(time.RFC3339), next.Format(time.RFC3339)}
		}
		if got != [2]string{c.start, c.next} {
			t.Errorf("%s/%d at %s: %v, want %s %s", c.reset, c.days, c.now, got, c.start, c.next)
		}
	}
}
