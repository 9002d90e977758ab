package observe

import (
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
)

func FuzzAnalyticsParams(f *testing.F) {
	for _, s := range []string{"", "time_of_generation_min=2026-01-01T00:00:00Z&weighted_feedback_min=-3.5",
		"status_code=200,500&metadata=%7B%22a%22%3A%22b%22%7D&page_size=5&current_page=2",
		"weighted_feedback_max=NaN", "cost_min=1&cost_max=0.5", "time_of_generation_max=2026-01-01T00:00:00%2B05:30"} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		ar, err := analyticsParams(v, gateway.Identity{Type: gateway.KeyOrganisation}, now)
		if err != nil {
			if ge, ok := err.(*gateway.Error); !ok || ge.Status != 400 {
				t.Fatalf("analyticsParams(%q) = %v, want a 400", raw, err)
			}
			return
		}
		if ar.query.End.Before(ar.query.Start) || ar.size < 1 || ar.size > 100 || ar.page < 0 {
			t.Fatalf("analyticsParams(%q) = %+v", raw, ar)
		}
		if n := len(buckets(ar.query.Start, ar.query.End, ar.width)); n < 1 || n > analyticsBucketsMax+1 {
			t.Fatalf("analyticsParams(%q): %d buckets", raw, n)
		}
		if wf := ar.weightedFeedback; wf.HasMin && wf.HasMax && wf.Min > wf.Max {
			t.Fatalf("analyticsParams(%q): weighted feedback %+v", raw, wf)
		}
	})
}

func FuzzFeedbackBody(f *testing.F) {
	for _, s := range []string{`{"trace_id":"a","value":1}`, `{"trace_id":"a","value":-10,"weight":0.5,"metadata":{"x":[1]}}`,
		`[{"trace_id":"a","value":1e1}]`, `{"value":1}`, `{"trace_id":"a","value":1,"metadata":{"a":`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var b feedbackBody
		if err := decodeStrict([]byte(body), &b); err != nil {
			return
		}
		fb, err := feedbackOf(&b, "", true)
		if err != nil {
			return
		}
		if fb.Value < -10 || fb.Value > 10 || fb.Weight < 0 || fb.Weight > 1 || fb.TraceID == "" ||
			fb.Metadata != nil && !json.Valid(fb.Metadata) {
			t.Fatalf("feedbackOf(%q) = %+v", body, fb)
		}
	})
}
