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

// TestRollupsCountEachRecordOnce: a batch stored again (retried after a
// lost answer), partly or whole, and a batch naming a record twice, add
// each record to the hourly rollups once: the rollup-served aggregation
// of whole hours equals memstore.Store's over the same records.
func TestRollupsCountEachRecordOnce(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, sqliteDSN(t), sqlstore.Options{})
	mem := memstore.New()
	end := time.Now().UTC().Truncate(time.Hour)
	gen := trafficLogs(end.Add(-3*time.Hour), 7, false)
	a, b := gen(150), gen(150)
	for _, batch := range [][]*gateway.RequestLog{
		a,
		a, // retried whole
		append(append([]*gateway.RequestLog{}, a[100:]...), b...), // retried in part, with new records
		{b[0], b[0], b[1]}, // one record twice
	} {
		if err := s.AddLogs(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	if err := mem.AddLogs(ctx, append(append([]*gateway.RequestLog{}, a...), b...)); err != nil {
		t.Fatal(err)
	}
	// Whole hours, filtered by workspace and time alone: served by the
	// rollups.
	for _, ws := range []string{"ws-1", "ws-2"} {
		agg := &observe.Aggregation{
			Query:    observe.Query{WorkspaceID: ws, Start: end.Add(-4 * time.Hour), End: end.Add(-time.Microsecond)},
			GroupBy:  []observe.Dimension{observe.DimTime},
			Bucket:   time.Hour,
			Measures: observe.MeasureTokens | observe.MeasureCost,
		}
		got, err := s.AggregateLogs(ctx, agg)
		if err != nil {
			t.Fatal(err)
		}
		want, err := mem.AggregateLogs(ctx, agg)
		if err != nil {
			t.Fatal(err)
		}
		var n, m int64
		for _, g := range got {
			n += g.Requests
		}
		for _, w := range want {
			m += w.Requests
		}
		if n != m || len(got) != len(want) {
			t.Fatalf("workspace %s: the rollups count %d records in %d hours, MemoryStore %d in %d", ws, n, len(got), m, len(want))
		}
		for i := range got {
			if got[i].Requests != want[i].Requests || got[i].TotalTokens != want[i].TotalTokens {
				t.Errorf("workspace %s hour %v: %d requests, %d tokens; want %d, %d", ws, got[i].Time,
					got[i].Requests, got[i].TotalTokens, want[i].Requests, want[i].TotalTokens)
			}
		}
	}
}
