package sqlstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
	"github.com/modelgateway/gateway/sqlstore"
)

// promptLogs are analyticsLogs of which three in four are the
// completions of one of three prompts, as package prompt logs them: the
// slug under _prompt, the id under _prompt_id.
func promptLogs(n int, end time.Time) []*gateway.RequestLog {
	recs, _ := analyticsLogs(n, end, 5)
	for i, r := range recs {
		if i%4 == 3 {
			continue
		}
		if r.Metadata == nil {
			r.Metadata = map[string]string{}
		}
		r.Metadata[gateway.MetadataPrompt] = fmt.Sprintf("p%d", i%3)
		r.Metadata[observe.MetadataPromptID] = fmt.Sprintf("pp-%d", i%3)
	}
	return recs
}

// TestPromptFilter: the analytics (whatever the rollups hold) and the
// logs list select the records of the prompts Query.Prompts names, by
// slug or id, as memstore.Store does.
func TestPromptFilter(t *testing.T) {
	ctx := context.Background()
	end := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	recs := promptLogs(300, end)
	mem := memstore.New()
	mem.AddLogs(ctx, recs)
	queries := []observe.Query{
		{Prompts: []string{"p1"}},
		{Prompts: []string{"pp-0", "p2"}},
		{WorkspaceID: "ws-1", Start: end.Add(-30 * time.Hour), End: end, Prompts: []string{"nope", "pp-1"}},
	}
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn, sqlstore.Options{})
		if err := s.AddLogs(ctx, recs); err != nil {
			t.Fatal(err)
		}
		compare := func() {
			t.Helper()
			for _, q := range queries {
				want, _ := mem.Logs(ctx, &q)
				got, err := s.Logs(ctx, &q)
				if err != nil {
					t.Fatal(err)
				}
				if len(want) == 0 || len(got) != len(want) {
					t.Fatalf("logs of %v: %d records, want %d", q.Prompts, len(got), len(want))
				}
				for i := range want {
					if got[i].ID != want[i].ID {
						t.Errorf("logs of %v: record %d is %s, want %s", q.Prompts, i, got[i].ID, want[i].ID)
					}
				}
				for _, dims := range [][]observe.Dimension{nil, {observe.DimTime}, {observe.DimModel}} {
					a := &observe.Aggregation{Query: q, GroupBy: dims, Bucket: time.Hour,
						Measures: observe.MeasureTokens | observe.MeasureCost | observe.MeasureErrors | observe.MeasureLastSeen}
					want, _ := mem.AggregateLogs(ctx, a)
					got, err := s.AggregateLogs(ctx, a)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9), cmpopts.EquateEmpty()); diff != "" {
						t.Errorf("analytics of %v by %v (-memory +sql):\n%s", q.Prompts, dims, diff)
					}
				}
			}
		}
		compare()
		if err := s.CompactLogs(ctx); err != nil { // the rollups cannot tell prompts apart
			t.Fatal(err)
		}
		compare()
	})
}
