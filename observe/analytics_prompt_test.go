package observe_test

import (
	"testing"
	"time"

	"github.com/modelgateway/gateway"
)

// TestPromptFilter: prompt_slug, a comma-separated list of prompt slugs
// or ids, selects the records of those prompts' completions (metadata
// _prompt, the slug, and _prompt_id, the id, as package prompt records
// them), in the analytics, the logs list and the log exports' filters.
func TestPromptFilter(t *testing.T) {
	e, _ := newAnalyticsEnv(t)
	now := time.Now()
	rec := func(id, slug, promptID string) *gateway.RequestLog {
		r := &gateway.RequestLog{ID: id, WorkspaceID: "ws-1", Time: now.Add(-time.Minute), TraceID: "t-" + id, Status: 200,
			Provider: "openai", Model: "gpt-4o", PromptTokens: 10, TotalTokens: 10}
		if slug != "" {
			r.Metadata = map[string]string{gateway.MetadataPrompt: slug, "_prompt_id": promptID, "_prompt_version": "1"}
		}
		return r
	}
	if err := e.store.AddLogs(t.Context(), []*gateway.RequestLog{
		rec("r1", "greet", "pp-1"), rec("r2", "greet", "pp-1"), rec("r3", "summarise", "pp-2"), rec("r4", "", ""),
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		query string
		want  int
	}{
		{"", 4},
		{"prompt_slug=greet", 2},
		{"prompt_slug=pp-2", 1},
		{"prompt_slug=greet,pp-2", 3},
		{"prompt_slug=nope", 0},
	} {
		var g struct {
			Summary struct{ Total int } `json:"summary"`
		}
		if st, b := e.getJSON(coreAdminKey, "/v1/analytics/graphs/requests?"+c.query, &g); st != 200 || g.Summary.Total != c.want {
			t.Errorf("graphs/requests?%s: %d %s, want %d requests", c.query, st, b, c.want)
		}
		var l struct{ Data []struct{ ID string } }
		if st, b := e.getJSON(coreAdminKey, "/v1/logs?"+c.query, &l); st != 200 || len(l.Data) != c.want {
			t.Errorf("logs?%s: %d %s, want %d records", c.query, st, b, c.want)
		}
	}
	if st, _ := e.getJSON(coreAdminKey, "/v1/analytics/graphs/requests?prompt_slug=a,,b", nil); st != 400 {
		t.Errorf("an empty prompt in the list: %d, want 400", st)
	}
}
