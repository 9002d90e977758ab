package sqlstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/sqlstore"
)

// TestDailyRollups: CompactLogs marks the days that ended done, and the
// aggregations of whole days read their daily rollups (the hourly ones,
// changed behind the store's back, no longer show); a record added late
// to a done day, and retention cutting into one, undo the day, and the
// figures stay those of the records throughout.
func TestDailyRollups(t *testing.T) {
	ctx := context.Background()
	dsn := sqliteDSN(t)
	s := openStore(t, dsn, sqlstore.Options{})
	db := rawDB(t, dsn)
	// The records are of the 6 days before yesterday: days that ended a
	// day ago at least, whenever the test runs.
	today := time.Now().UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour)
	var recs []*gateway.RequestLog
	for i := range 2000 {
		recs = append(recs, &gateway.RequestLog{ID: fmt.Sprintf("log-%04d", i), TraceID: fmt.Sprintf("trace-%d", i),
			WorkspaceID: []string{"ws-1", "ws-2"}[i%2], Provider: "openai", Model: []string{"a", "b", "c"}[i%3],
			Status: []int{200, 200, 429, 500}[i%4], Time: today.Add(-time.Duration(i+1) * 6 * 24 * time.Hour / 2000),
			Latency: time.Duration(i*7919%3000) * time.Millisecond, PromptTokens: int64(i % 100), TotalTokens: int64(i % 100),
			Cost: float64(i%7) / 1000, CacheStatus: []gateway.CacheStatus{"", gateway.CacheHit, gateway.CacheMiss}[i%3],
			Metadata: map[string]string{"_user": fmt.Sprintf("u%d", i%13), "team": fmt.Sprintf("t%d", i%4)}})
	}
	if err := s.AddLogs(ctx, recs); err != nil {
		t.Fatal(err)
	}
	window := gateway.LogQuery{WorkspaceID: "ws-1", Start: today.Add(-6*24*time.Hour + 90*time.Minute), End: today.Add(time.Hour)}
	sums := gateway.MeasureTokens | gateway.MeasureCost | gateway.MeasureErrors | gateway.MeasureCache | gateway.MeasureRescued |
		gateway.MeasureLastSeen
	aggs := []*gateway.Aggregation{
		{Query: window, Measures: sums | gateway.MeasureLatency | gateway.MeasureUsers},
		{Query: window, GroupBy: []gateway.Dimension{gateway.DimTime}, Bucket: 24 * time.Hour, Measures: sums | gateway.MeasureLatency | gateway.MeasureUsers},
		{Query: window, GroupBy: []gateway.Dimension{gateway.DimModel, gateway.DimStatus}, Measures: sums | gateway.MeasureLatency},
		{Query: gateway.LogQuery{Start: window.Start, End: window.End, StatusCodes: []int{200, 500}}, GroupBy: []gateway.Dimension{gateway.DimTime},
			Bucket: 24 * time.Hour, Measures: sums | gateway.MeasureLatency},
		{Query: window, GroupBy: []gateway.Dimension{gateway.DimMetadata}, MetadataKey: "team", Measures: gateway.MeasureTokens | gateway.MeasureCost},
		{Query: window, GroupBy: []gateway.Dimension{gateway.DimMetadata}, MetadataKey: "_user", Measures: gateway.MeasureCost | gateway.MeasureLastSeen},
	}
	check := func(what string, recs []*gateway.RequestLog) {
		t.Helper()
		mem := &gateway.MemoryStore{}
		mem.AddLogs(ctx, recs)
		for i, a := range aggs {
			want, _ := mem.AggregateLogs(ctx, a)
			got, err := s.AggregateLogs(ctx, a)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s: aggregation %d: (-records +store)\n%s", what, i, diff)
			}
		}
	}
	done := func() int {
		t.Helper()
		var n int
		if err := db.QueryRow(`SELECT COUNT(*) FROM log_days_done`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	check("hourly rollups", recs)
	if err := s.CompactLogs(ctx); err != nil {
		t.Fatal(err)
	}
	if n := done(); n != 6 {
		t.Fatalf("%d days done, want the 6 that ended", n)
	}
	check("daily rollups", recs)

	// The hourly rollups of the done days changed behind the store's
	// back: the figures of whole days come from the daily ones.
	if _, err := db.Exec(`UPDATE log_hours SET prompt_tokens = prompt_tokens + 1000 WHERE hour_us < ?`, today.UnixMicro()); err != nil {
		t.Fatal(err)
	}
	a := &gateway.Aggregation{Query: gateway.LogQuery{WorkspaceID: "ws-1", Start: today.Add(-3 * 24 * time.Hour),
		End: today.Add(-time.Microsecond)}, Measures: gateway.MeasureTokens}
	mem := &gateway.MemoryStore{}
	mem.AddLogs(ctx, recs)
	want, _ := mem.AggregateLogs(ctx, a)
	if got, err := s.AggregateLogs(ctx, a); err != nil || len(got) != 1 || got[0].PromptTokens != want[0].PromptTokens {
		t.Errorf("three whole days: %+v, %v; want the daily rollups' %d prompt tokens", got, err, want[0].PromptTokens)
	}
	if _, err := db.Exec(`UPDATE log_hours SET prompt_tokens = prompt_tokens - 1000 WHERE hour_us < ?`, today.UnixMicro()); err != nil {
		t.Fatal(err)
	}

	// A record added to a done day undoes it.
	late := &gateway.RequestLog{ID: "late", WorkspaceID: "ws-1", Provider: "openai", Model: "a", Status: 200,
		Time: today.Add(-2*24*time.Hour + time.Hour), Latency: time.Hour, PromptTokens: 5, TotalTokens: 5,
		Metadata: map[string]string{"_user": "late-user"}}
	if err := s.AddLogs(ctx, []*gateway.RequestLog{late}); err != nil {
		t.Fatal(err)
	}
	if n := done(); n != 5 {
		t.Errorf("%d days done after a late record, want 5", n)
	}
	withLate := append(append([]*gateway.RequestLog{}, recs...), late)
	check("a day undone by a late record", withLate)
	if err := s.CompactLogs(ctx); err != nil {
		t.Fatal(err)
	}
	if n := done(); n != 6 {
		t.Errorf("%d days done after compacting again, want 6", n)
	}
	check("the day done again", withLate)

	// Retention cutting into a day undoes it and drops the days before.
	cut := today.Add(-4*24*time.Hour + 5*time.Hour)
	if _, err := s.DeleteLogsBefore(ctx, cut); err != nil {
		t.Fatal(err)
	}
	var kept []*gateway.RequestLog
	for _, r := range withLate {
		if !r.Time.Before(cut) {
			kept = append(kept, r)
		}
	}
	if n := done(); n != 3 {
		t.Errorf("%d days done after retention, want 3", n)
	}
	check("after retention", kept)
	if err := s.CompactLogs(ctx); err != nil {
		t.Fatal(err)
	}
	check("after retention, compacted again", kept)
}
