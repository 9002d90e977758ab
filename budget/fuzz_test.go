package gateway

import (
	"encoding/json"
	"testing"
	"time"
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
		out, err := UsageLimitsJSON(json.RawMessage(raw), workspace)
		if err != nil {
			e, ok := err.(*Error)
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

// FuzzMaxTokens: maxTokens never panics and finds only a cap that is
// there.
func FuzzMaxTokens(f *testing.F) {
	for _, s := range []string{`{"max_tokens":5}`, `{"a":{"max_tokens":3},"max_completion_tokens":7}`, `{"max_tokens":-1}`, `{`, `[]`, `{"max_output_tokens":1e3}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		n, ok := maxTokens(body)
		if !ok {
			return
		}
		var v map[string]json.RawMessage
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatalf("%q: found %d in a body that is not a JSON object", body, n)
		}
		if n < 0 {
			t.Fatalf("%q: negative cap %d", body, n)
		}
	})
}
