package sqlstore_test

import (
	"context"
	"testing"
	"time"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
	"github.com/modelgateway/gateway/sqlstore"
)

// TestLatencyDigests: once CompactLogs has run, the percentiles of
// whole hours come from the digests, not the records (a record's latency
// changed behind the store's back does not show); a record added late to
// a digested hour makes its digest stale, and the figures are the
// records' again until the next digest; retention deletes the digests of
// the hours it empties.
func TestLatencyDigests(t *testing.T) {
	ctx := context.Background()
	dsn := sqliteDSN(t)
	s := openStore(t, dsn, sqlstore.Options{})
	db := rawDB(t, dsn)
	end := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	var recs []*gateway.RequestLog
	for i := range 600 { // 100 a ten minutes, over the 10 hours before end
		recs = append(recs, &gateway.RequestLog{ID: "log-" + time.Duration(i).String(), WorkspaceID: "ws-1", Provider: "openai",
			Model: []string{"a", "b"}[i%2], Status: []int{200, 500}[i%3/2], Time: end.Add(-time.Duration(i+1) * time.Minute),
			Latency: time.Duration(i*7919%1000) * time.Millisecond})
	}
	if err := s.AddLogs(ctx, recs); err != nil {
		t.Fatal(err)
	}
	agg := func() *observe.Aggregation {
		return &observe.Aggregation{Query: observe.Query{WorkspaceID: "ws-1", Start: end.Add(-10 * time.Hour), End: end.Add(-time.Microsecond)},
			GroupBy: []observe.Dimension{observe.DimModel}, Measures: observe.MeasureLatency}
	}
	check := func(what string, recs []*gateway.RequestLog) {
		t.Helper()
		mem := memstore.New()
		mem.AddLogs(ctx, recs)
		want, _ := mem.AggregateLogs(ctx, agg())
		got, err := s.AggregateLogs(ctx, agg())
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d groups, want %d", what, len(got), len(want))
		}
		for i := range got {
			g, w := got[i], want[i]
			if g.Requests != w.Requests || g.Latency != w.Latency || g.LatencyP50 != w.LatencyP50 || g.LatencyP90 != w.LatencyP90 ||
				g.LatencyP99 != w.LatencyP99 {
				t.Errorf("%s: model %s: %d requests, latency %d p50 %d p90 %d p99 %d; want %d, %d %d %d %d", what, g.Model,
					g.Requests, g.Latency, g.LatencyP50, g.LatencyP90, g.LatencyP99, w.Requests, w.Latency, w.LatencyP50, w.LatencyP90, w.LatencyP99)
			}
		}
	}
	check("before the digests", recs)
	if err := s.CompactLogs(ctx); err != nil {
		t.Fatal(err)
	}
	var digests int
	if err := db.QueryRow(`SELECT COUNT(*) FROM log_latency_hours`).Scan(&digests); err != nil || digests != 10*2*2 {
		t.Fatalf("%d digests (%v), want 40: 10 hours, 2 models, 2 statuses", digests, err)
	}
	check("from the digests", recs)

	// Latencies changed in the records alone: the digests answer, so the
	// figures are those of before.
	if _, err := db.Exec(`UPDATE request_logs SET latency_us = latency_us + 1`); err != nil {
		t.Fatal(err)
	}
	check("digests, records changed behind the store's back", recs)
	if _, err := db.Exec(`UPDATE request_logs SET latency_us = latency_us - 1`); err != nil {
		t.Fatal(err)
	}

	// A record added late to a digested hour: read from the records.
	late := &gateway.RequestLog{ID: "late", WorkspaceID: "ws-1", Provider: "openai", Model: "a", Status: 200,
		Time: end.Add(-90 * time.Minute), Latency: 999 * time.Second}
	if err := s.AddLogs(ctx, []*gateway.RequestLog{late}); err != nil {
		t.Fatal(err)
	}
	withLate := append(append([]*gateway.RequestLog{}, recs...), late)
	check("a record added to a digested hour", withLate)
	if err := s.CompactLogs(ctx); err != nil {
		t.Fatal(err)
	}
	check("digested again", withLate)

	// Retention: the digests of the hours before the cut's go.
	cut := end.Add(-5*time.Hour - 30*time.Minute)
	if _, err := s.DeleteLogsBefore(ctx, cut); err != nil {
		t.Fatal(err)
	}
	var old int
	if err := db.QueryRow(`SELECT COUNT(*) FROM log_latency_hours WHERE hour_us < ?`, cut.Truncate(time.Hour).UnixMicro()).Scan(&old); err != nil || old != 0 {
		t.Errorf("%d digests of hours retention emptied (%v)", old, err)
	}
	var kept []*gateway.RequestLog
	for _, r := range withLate {
		if !r.Time.Before(cut) {
			kept = append(kept, r)
		}
	}
	check("after retention", kept)
	if err := s.CompactLogs(ctx); err != nil {
		t.Fatal(err)
	}
	check("after retention, digested again", kept)
}
