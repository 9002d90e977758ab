package observe

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelgateway/gateway"
)

func TestPercentileNearestRank(t *testing.T) {
	ten := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		vals []int64
		p    float64
		want int64
	}{
		{nil, 0.5, 0},
		{[]int64{7}, 0.99, 7},
		{ten, 0.5, 5},
		{ten, 0.9, 9},
		{ten, 0.99, 10},
		{ten, 0.91, 10},
		{ten, 0, 1},
		{[]int64{1, 2, 3}, 0.5, 2},
		{[]int64{1, 2, 3, 4}, 0.5, 2},
	} {
		if got := Percentile(tc.vals, tc.p); got != tc.want {
			t.Errorf("Percentile(%v, %v) = %d, want %d", tc.vals, tc.p, got, tc.want)
		}
	}
}

func TestBucketWidth(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		d    time.Duration
		want time.Duration
	}{{time.Hour, time.Minute}, {time.Hour + time.Second, time.Hour}, {48 * time.Hour, time.Hour}, {49 * time.Hour, 24 * time.Hour}} {
		if got := BucketWidth(t0, t0.Add(tc.d)); got != tc.want {
			t.Errorf("BucketWidth over %v = %v, want %v", tc.d, got, tc.want)
		}
	}
	got := buckets(t0.Add(90*time.Second), t0.Add(3*time.Minute), time.Minute)
	want := []time.Time{t0.Add(time.Minute), t0.Add(2 * time.Minute), t0.Add(3 * time.Minute)}
	if !slices.Equal(got, want) {
		t.Errorf("buckets = %v, want %v", got, want)
	}
}

func TestAggregateRecords(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	recs := []*gateway.RequestLog{
		{ID: "1", WorkspaceID: "w", Time: t0.Add(10 * time.Second), TraceID: "a", Status: 200, Provider: "openai", Model: "m1",
			Latency: 10 * time.Millisecond, TotalTokens: 10, Cost: 0.5, CacheStatus: gateway.CacheHit, Metadata: map[string]string{"_user": "u1", "team": "x"}},
		{ID: "2", WorkspaceID: "w", Time: t0.Add(20 * time.Second), TraceID: "a", Status: 500, Provider: "openai", Model: "m1",
			Latency: 30 * time.Millisecond, TotalTokens: 20, Cost: 0.25, CacheStatus: gateway.CacheMiss, Metadata: map[string]string{"_user": "u2"}},
		{ID: "3", WorkspaceID: "w", Time: t0.Add(70 * time.Second), TraceID: "b", Status: 200, Provider: "anthropic", Model: "m2",
			Latency: 20 * time.Millisecond, Rescued: true, FallbackIndex: 1, Attempts: 1, Metadata: map[string]string{"_user": "u1", "team": "x"}},
		{ID: "4", WorkspaceID: "other", Time: t0.Add(70 * time.Second), TraceID: "b", Status: 200},
	}
	fb := []Feedback{{WorkspaceID: "w", TraceID: "a", Value: 5, Weight: 1}, {WorkspaceID: "w", TraceID: "a", Value: -1, Weight: 0.5},
		{WorkspaceID: "other", TraceID: "b", Value: 10, Weight: 1}}
	all := Measure(1<<16 - 1)
	got := AggregateRecords(&Aggregation{Query: Query{WorkspaceID: "w"}, GroupBy: []Dimension{DimTime}, Bucket: time.Minute,
		Measures: all}, slices.Values(recs), fb)
	want := []Aggregate{
		{Time: t0, Requests: 2, Errors: 1, CacheHits: 1, CacheMisses: 1, CacheHitLatency: 10000, CacheMissLatency: 30000,
			TotalTokens: 30, Cost: 0.75, Latency: 40000, LatencyP50: 10000, LatencyP90: 30000, LatencyP99: 30000,
			Users: 2, UserRequests: 2, LastSeen: t0.Add(20 * time.Second), Feedbacks: 4, FeedbackWeight: 9, RequestsWithFeedback: 2},
		{Time: t0.Add(time.Minute), Requests: 1, RescuedFallback: 1, Latency: 20000, LatencyP50: 20000, LatencyP90: 20000,
			LatencyP99: 20000, Users: 1, UserRequests: 1, LastSeen: t0.Add(70 * time.Second)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("by time (-want +got):\n%s", diff)
	}
	got = AggregateRecords(&Aggregation{Query: Query{WorkspaceID: "w"}, GroupBy: []Dimension{DimMetadata}, MetadataKey: "team",
		Measures: MeasureCost}, slices.Values(recs), fb)
	if len(got) != 1 || got[0].MetadataValue != "x" || got[0].Requests != 2 || got[0].Cost != 0.5 {
		t.Errorf("by metadata team = %+v, want one group x of 2 requests costing 0.5", got)
	}
	got = AggregateRecords(&Aggregation{Query: Query{WorkspaceID: "w"}, GroupBy: []Dimension{DimFeedbackValue},
		Measures: MeasureFeedback}, slices.Values(recs), fb)
	if len(got) != 2 || got[0].FeedbackValue != -1 || got[0].Feedbacks != 2 || got[1].FeedbackValue != 5 || got[1].Feedbacks != 2 {
		t.Errorf("by feedback value = %+v, want -1 and 5 twice each (two records of trace a)", got)
	}
	got = AggregateRecords(&Aggregation{Query: Query{WorkspaceID: "w"}, WeightedFeedback: Range[float64]{Min: 3, HasMin: true}},
		slices.Values(recs), fb)
	if len(got) != 0 {
		t.Errorf("weighted feedback ≥ 3 = %+v, want none (trace a's mean is 2.25)", got)
	}
}
