package sqlstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
	"github.com/modelgateway/gateway/sqlstore"
)

// TestDailyRollups: AddLogs puts the days of its records on the to-do
// list, CompactLogs marks the days that ended done (and off the list),
// and the aggregations of whole days read their daily rollups (the hourly ones,
// changed behind the store's back, no longer show); a record added late
// to a done day, and retention cutting into one, undo the day, and the
// figures stay those of the records throughout.
func TestDailyRollups(t *testing.T) {
	ctx := context.Background()
	dsn := sqliteDSN(t)
	s := openStore(t, dsn, sqlstore.Options{CompactInterval: -1}) // compacted by the test alone
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
	window := observe.Query{WorkspaceID: "ws-1", Start: today.Add(-6*24*time.Hour + 90*time.Minute), End: today.Add(time.Hour)}
	sums := observe.MeasureTokens | observe.MeasureCost | observe.MeasureErrors | observe.MeasureCache | observe.MeasureRescued |
		observe.MeasureLastSeen
	aggs := []*observe.Aggregation{
		{Query: window, Measures: sums | observe.MeasureLatency | observe.MeasureUsers},
		{Query: window, GroupBy: []observe.Dimension{observe.DimTime}, Bucket: 24 * time.Hour, Measures: sums | observe.MeasureLatency | observe.MeasureUsers},
		{Query: window, GroupBy: []observe.Dimension{observe.DimModel, observe.DimStatus}, Measures: sums | observe.MeasureLatency},
		{Query: observe.Query{Start: window.Start, End: window.End, StatusCodes: []int{200, 500}}, GroupBy: []observe.Dimension{observe.DimTime},
			Bucket: 24 * time.Hour, Measures: sums | observe.MeasureLatency},
		{Query: window, GroupBy: []observe.Dimension{observe.DimMetadata}, MetadataKey: "team", Measures: observe.MeasureTokens | observe.MeasureCost},
		{Query: window, GroupBy: []observe.Dimension{observe.DimMetadata}, MetadataKey: "_user", Measures: observe.MeasureCost | observe.MeasureLastSeen},
	}
	check := func(what string, recs []*gateway.RequestLog) {
		t.Helper()
		mem := memstore.New()
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
	count := func(table string) int {
		t.Helper()
		var n int
		if err := db.QueryRow(`SELECT COUNT(*) FROM ` + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	done := func() int { return count("log_days_done") }
	// The days a pass of CompactLogs has work on.
	todo := func() int { return count("log_days_todo") }
	if n := todo(); n != 6 {
		t.Fatalf("%d days to do after AddLogs, want 6", n)
	}
	check("hourly rollups", recs)
	if err := s.CompactLogs(ctx); err != nil {
		t.Fatal(err)
	}
	if n, m := done(), todo(); n != 6 || m != 0 {
		t.Fatalf("%d days done and %d to do, want the 6 that ended and none", n, m)
	}
	check("daily rollups", recs)

	// The hourly rollups of the done days changed behind the store's
	// back: the figures of whole days come from the daily ones.
	if _, err := db.Exec(`UPDATE log_hours SET prompt_tokens = prompt_tokens + 1000 WHERE hour_us < ?`, today.UnixMicro()); err != nil {
		t.Fatal(err)
	}
	a := &observe.Aggregation{Query: observe.Query{WorkspaceID: "ws-1", Start: today.Add(-3 * 24 * time.Hour),
		End: today.Add(-time.Microsecond)}, Measures: observe.MeasureTokens}
	mem := memstore.New()
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
	if n, m := done(), todo(); n != 5 || m != 1 {
		t.Errorf("%d days done and %d to do after a late record, want 5 and 1", n, m)
	}
	withLate := append(append([]*gateway.RequestLog{}, recs...), late)
	check("a day undone by a late record", withLate)
	if err := s.CompactLogs(ctx); err != nil {
		t.Fatal(err)
	}
	if n, m := done(), todo(); n != 6 || m != 0 {
		t.Errorf("%d days done and %d to do after compacting again, want 6 and 0", n, m)
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
	if n, m := done(), todo(); n != 3 || m != 1 {
		t.Errorf("%d days done and %d to do after retention, want 3 and 1 (the day of the cut)", n, m)
	}
	check("after retention", kept)
	if err := s.CompactLogs(ctx); err != nil {
		t.Fatal(err)
	}
	check("after retention, compacted again", kept)
}

// TestCompactLogsInBackground: a SQLite store compacts by itself, every
// Options.CompactInterval: the days of records added after Open get done
// with no call of CompactLogs.
func TestCompactLogsInBackground(t *testing.T) {
	ctx := context.Background()
	dsn := sqliteDSN(t)
	s := openStore(t, dsn, sqlstore.Options{CompactInterval: 20 * time.Millisecond})
	db := rawDB(t, dsn)
	yesterday := time.Now().UTC().Truncate(24 * time.Hour).Add(-24 * time.Hour)
	if err := s.AddLogs(ctx, []*gateway.RequestLog{{ID: "a", WorkspaceID: "ws-1", Status: 200, Time: yesterday.Add(-time.Hour),
		Latency: time.Second}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the record's day done in the background", func() bool {
		var n int
		return db.QueryRow(`SELECT COUNT(*) FROM log_days_done`).Scan(&n) == nil && n == 1
	})
}
