package sqlstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
	"github.com/modelgateway/gateway/sqlstore"
)

// analyticsLogs makes n request logs over the three days before end, with
// every aggregated field varied, users and teams in their metadata, and
// feedback on some of their traces (of their workspace and another's).
func analyticsLogs(n int, end time.Time, seed uint64) ([]*gateway.RequestLog, []*observe.Feedback) {
	rng := rand.New(rand.NewPCG(seed, 11))
	recs := genLogs(n, end, seed)
	for i, r := range recs {
		r.Time = end.Add(-time.Duration(rng.IntN(3*24*3600)) * time.Second).Add(time.Duration(i) * time.Microsecond)
		r.Latency = time.Duration(rng.IntN(5_000_000)) * time.Microsecond
		r.CacheStatus = []gateway.CacheStatus{"", gateway.CacheHit, gateway.CacheMiss, gateway.CacheRefresh}[rng.IntN(4)]
		if rng.IntN(3) > 0 {
			if r.Metadata == nil {
				r.Metadata = map[string]string{}
			}
			r.Metadata["_user"] = fmt.Sprintf("u%d", rng.IntN(7))
			if rng.IntN(9) == 0 {
				r.Metadata["_user"] = ""
			}
			r.Metadata[`odd "key"`] = fmt.Sprint(rng.IntN(2))
		}
	}
	var fbs []*observe.Feedback
	for i := range n / 5 {
		fbs = append(fbs, &observe.Feedback{ID: fmt.Sprintf("fb-%04d", i), WorkspaceID: []string{"ws-1", "ws-2", ""}[rng.IntN(3)],
			TraceID: fmt.Sprintf("trace-%d", rng.IntN(25)), Value: rng.IntN(21) - 10, Weight: float64(rng.IntN(5)) / 4,
			CreatedAt: end, UpdatedAt: end})
	}
	return recs, fbs
}

// aggregations are the groupings and measures the analytics routes use,
// and more, each under several filters.
func aggregations(end time.Time) []*observe.Aggregation {
	all := observe.MeasureTokens | observe.MeasureCost | observe.MeasureLatency | observe.MeasureCache | observe.MeasureErrors |
		observe.MeasureRescued | observe.MeasureUsers | observe.MeasureFeedback | observe.MeasureLastSeen
	queries := []observe.Query{
		{},
		{WorkspaceID: "ws-1", Start: end.Add(-30 * time.Hour), End: end},
		{WorkspaceID: "ws-2", StatusCodes: []int{200, 500}, Models: []observe.ProviderModel{{Provider: "openai", Model: "gpt-4o"}}},
		{Metadata: map[string]string{"team": "t1"}, TraceIDs: []string{"trace-1", "trace-2", "trace-3"}},
		{Cost: observe.Range[float64]{Min: 0.005, HasMin: true}, TotalTokens: observe.Range[int64]{Max: 2000, HasMax: true}},
		{WorkspaceID: "\x00"},
		{Start: end.Add(-50 * time.Hour), End: end.Add(-time.Minute)},
		{WorkspaceID: "ws-2", Start: end.Add(-71*time.Hour - 30*time.Minute), End: end.Add(-2 * time.Hour)},
		{WorkspaceID: "ws-1", Start: end.Add(-60 * time.Hour), End: end, StatusCodes: []int{200, 500},
			Models: []observe.ProviderModel{{Provider: "openai", Model: "gpt-4o"}, {Provider: "anthropic", Model: "claude-3-5-sonnet"}}},
	}
	sums := observe.MeasureErrors | observe.MeasureRescued | observe.MeasureCache | observe.MeasureTokens | observe.MeasureCost |
		observe.MeasureLastSeen
	metaSums := observe.MeasureTokens | observe.MeasureCost | observe.MeasureLastSeen | observe.MeasureFeedback
	var out []*observe.Aggregation
	for _, q := range queries {
		for _, g := range []struct {
			dims []observe.Dimension
			key  string
			m    observe.Measure
		}{
			{nil, "", all},
			{[]observe.Dimension{observe.DimTime}, "", all},
			{[]observe.Dimension{observe.DimTime, observe.DimStatus}, "", observe.MeasureErrors},
			{[]observe.Dimension{observe.DimTime, observe.DimAttempts}, "", observe.MeasureRescued},
			{[]observe.Dimension{observe.DimModel}, "", all},
			{[]observe.Dimension{observe.DimStatus}, "", observe.MeasureErrors},
			{[]observe.Dimension{observe.DimMetadata}, "team", all},
			{[]observe.Dimension{observe.DimMetadata}, "_user", observe.MeasureCost},
			{[]observe.Dimension{observe.DimMetadata}, `odd "key"`, observe.MeasureCost | observe.MeasureLastSeen},
			{[]observe.Dimension{observe.DimFeedbackValue}, "", observe.MeasureFeedback},
			// What the SQLite rollups answer for whole hours.
			{nil, "", sums},
			{[]observe.Dimension{observe.DimTime}, "", sums},
			{[]observe.Dimension{observe.DimMetadata}, "team", metaSums},
			{[]observe.Dimension{observe.DimMetadata}, "_user", observe.MeasureCost},
			{nil, "", sums | observe.MeasureUsers},
			{[]observe.Dimension{observe.DimTime}, "", observe.MeasureUsers},
			{[]observe.Dimension{observe.DimStatus}, "", sums},
			{[]observe.Dimension{observe.DimModel}, "", sums},
			{[]observe.Dimension{observe.DimTime, observe.DimModel, observe.DimStatus}, "", sums},
			{[]observe.Dimension{observe.DimTime, observe.DimFeedbackValue}, "", observe.MeasureFeedback},
			// Latency percentiles: SQLite's latency digests for whole hours.
			{nil, "", observe.MeasureLatency},
			{[]observe.Dimension{observe.DimTime}, "", sums | observe.MeasureLatency},
			{[]observe.Dimension{observe.DimTime, observe.DimModel, observe.DimStatus}, "", observe.MeasureLatency},
		} {
			for _, wf := range []observe.Range[float64]{{}, {Min: -1.5, HasMin: true}, {Min: -10, Max: 2, HasMin: true, HasMax: true}} {
				for _, bucket := range []time.Duration{time.Hour, 24 * time.Hour} {
					if bucket > time.Hour && !slices.Contains(g.dims, observe.DimTime) {
						continue
					}
					out = append(out, &observe.Aggregation{Query: q, WeightedFeedback: wf, GroupBy: g.dims, MetadataKey: g.key,
						Bucket: bucket, Measures: g.m})
				}
			}
		}
	}
	return out
}

// TestAggregateMatchesMemoryStore holds SQLite's and Postgres's
// AggregateLogs to observe.AggregateRecords (memstore.Store's) over the same
// records and feedback: every grouping, measure and filter, to the count
// (float sums to rounding).
func TestAggregateMatchesMemoryStore(t *testing.T) {
	ctx := context.Background()
	end := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	recs, fbs := analyticsLogs(1500, end, 3)
	mem := memstore.New()
	mem.AddLogs(ctx, recs)
	mem.AddFeedback(ctx, fbs)
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn, sqlstore.Options{})
		if err := s.AddLogs(ctx, recs); err != nil {
			t.Fatal(err)
		}
		if err := s.AddFeedback(ctx, fbs); err != nil {
			t.Fatal(err)
		}
		compare := func(mem *memstore.Store, rollupsOnly bool) {
			t.Helper()
			for i, a := range aggregations(end) {
				if rollupsOnly && (a.Query.Start.IsZero() || a.Query.End.IsZero() || a.WeightedFeedback != (observe.Range[float64]{})) {
					continue // what the rollups cannot answer: compared once already
				}
				want, _ := mem.AggregateLogs(ctx, a)
				got, err := s.AggregateLogs(ctx, a)
				if err != nil {
					t.Fatalf("aggregation %d (%+v): %v", i, a, err)
				}
				if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9), cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("aggregation %d (%+v): (-memory +%s)\n%s", i, a, dsn[:6], diff)
				}
			}
		}
		compare(mem, false)
		// With the latency digests of the whole hours, and the daily
		// rollups of the whole days (SQLite).
		if err := s.CompactLogs(ctx); err != nil {
			t.Fatal(err)
		}
		compare(mem, true)
		// Retention deletes records (and, on SQLite, takes them out of
		// the rollups, leaves the digests of the hour of the cut stale and
		// undoes the daily rollups of its day): the figures are those of
		// the records left, before and after compacting again.
		cut := end.Add(-40*time.Hour - 17*time.Minute)
		if _, err := s.DeleteLogsBefore(ctx, cut); err != nil {
			t.Fatal(err)
		}
		left := memstore.New()
		left.AddLogs(ctx, slices.DeleteFunc(slices.Clone(recs), func(r *gateway.RequestLog) bool { return r.Time.Before(cut) }))
		left.AddFeedback(ctx, fbs)
		compare(left, false)
		if err := s.CompactLogs(ctx); err != nil {
			t.Fatal(err)
		}
		compare(left, true)
	})
}

// TestFeedbackStore: add, update (metadata kept when absent), workspace
// scoping, and reads by trace, on both databases.
func TestFeedbackStore(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn, sqlstore.Options{})
		fs := []*observe.Feedback{
			{ID: "a", WorkspaceID: "ws-1", TraceID: "t1", Value: 3, Weight: 1, Metadata: []byte(`{"x":1}`), CreatedAt: now, UpdatedAt: now},
			{ID: "b", WorkspaceID: "ws-2", TraceID: "t1", Value: -3, Weight: 0.5, CreatedAt: now.Add(time.Second), UpdatedAt: now},
			{ID: "c", WorkspaceID: "ws-1", TraceID: "t2", Value: 0, Weight: 0, CreatedAt: now.Add(2 * time.Second), UpdatedAt: now},
		}
		if err := s.AddFeedback(ctx, fs); err != nil {
			t.Fatal(err)
		}
		got, err := s.FeedbackOf(ctx, "ws-1", nil)
		if err != nil || len(got) != 2 || got[0].ID != "a" || string(got[0].Metadata) != `{"x":1}` || !got[0].CreatedAt.Equal(now) {
			t.Fatalf("FeedbackOf(ws-1) = %+v, %v", got, err)
		}
		if got, _ := s.FeedbackOf(ctx, "", []string{"t1"}); len(got) != 2 || got[1].Weight != 0.5 || got[1].Metadata != nil {
			t.Errorf("FeedbackOf(trace t1) = %+v", got)
		}
		upd, err := s.UpdateFeedback(ctx, &observe.Feedback{ID: "a", WorkspaceID: "ws-1", Value: -7, Weight: 0.25, UpdatedAt: now.Add(time.Hour)})
		if err != nil || upd.Value != -7 || upd.Weight != 0.25 || string(upd.Metadata) != `{"x":1}` || upd.TraceID != "t1" ||
			!upd.UpdatedAt.Equal(now.Add(time.Hour)) {
			t.Errorf("UpdateFeedback = %+v, %v", upd, err)
		}
		if _, err := s.UpdateFeedback(ctx, &observe.Feedback{ID: "a", WorkspaceID: "ws-2", Value: 1}); err != gateway.ErrNotFound {
			t.Errorf("updating ws-1's feedback as ws-2: %v, want ErrNotFound", err)
		}
		upd, err = s.UpdateFeedback(ctx, &observe.Feedback{ID: "b", Value: 1, Weight: 1, Metadata: []byte(`{"y":"z"}`)})
		if err != nil || string(upd.Metadata) != `{"y":"z"}` {
			t.Errorf("UpdateFeedback of any workspace with metadata = %+v, %v", upd, err)
		}
	})
}
