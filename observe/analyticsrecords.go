package observe

import (
	"context"
	"iter"
	"slices"
	"time"

	"github.com/modelgateway/gateway"
)

// AggregateRecords computes a over the records of recs that a.Query
// selects (paging aside), linking each to the feedback of its trace in
// its workspace among feedback. It is the definition Aggregator
// implementations follow, and what the gateway computes for a Store
// without one. The answer holds only groups with at least one record,
// ordered by SortAggregates.
func AggregateRecords(a *Aggregation, recs iter.Seq[*gateway.RequestLog], feedback []Feedback) []Aggregate {
	ag := newRecordAggregator(a, feedback)
	for rec := range recs {
		ag.add(rec)
	}
	return ag.result()
}

// wsTrace names a trace of a workspace.
type wsTrace struct{ workspace, trace string }

// fbPoint is one feedback as the aggregation reads it.
type fbPoint struct {
	value  int
	weight float64
}

// recordAggregator is AggregateRecords' state.
type recordAggregator struct {
	a        *Aggregation
	feedback map[wsTrace][]fbPoint
	groups   map[aggKey]*aggState
	byValue  bool // GroupBy holds DimFeedbackValue
}

type aggKey struct {
	time                   int64
	provider, model, value string
	status, attempts, fbv  int
}

type aggState struct {
	Aggregate
	latencies []int64
	users     map[string]struct{}
}

func newRecordAggregator(a *Aggregation, feedback []Feedback) *recordAggregator {
	ag := &recordAggregator{a: a, feedback: make(map[wsTrace][]fbPoint), groups: make(map[aggKey]*aggState),
		byValue: slices.Contains(a.GroupBy, DimFeedbackValue)}
	for i := range feedback {
		f := &feedback[i]
		k := wsTrace{f.WorkspaceID, f.TraceID}
		ag.feedback[k] = append(ag.feedback[k], fbPoint{f.Value, f.Weight})
	}
	return ag
}

func (ag *recordAggregator) add(rec *gateway.RequestLog) {
	a := ag.a
	if !a.Query.Match(rec) {
		return
	}
	var fb []fbPoint
	if rec.TraceID != "" {
		fb = ag.feedback[wsTrace{rec.WorkspaceID, rec.TraceID}]
	}
	if a.WeightedFeedback.HasMin || a.WeightedFeedback.HasMax {
		if len(fb) == 0 || !a.WeightedFeedback.Contains(meanWeighted(fb)) {
			return
		}
	}
	var k aggKey
	for _, d := range a.GroupBy {
		switch d {
		case DimTime:
			k.time = bucketOf(rec.Time, a.Bucket).UnixMicro()
		case DimModel:
			k.provider, k.model = rec.Provider, rec.Model
		case DimMetadata:
			v, ok := rec.Metadata[a.MetadataKey]
			if !ok {
				return
			}
			k.value = v
		case DimStatus:
			k.status = rec.Status
		case DimAttempts:
			k.attempts = rec.Attempts
		}
	}
	if ag.byValue {
		for _, f := range fb {
			k.fbv = f.value
			g := ag.group(k)
			g.Requests++
			g.Feedbacks++
			g.FeedbackWeight += float64(f.value) * f.weight
		}
		return
	}
	g := ag.group(k)
	g.Requests++
	if rec.Status >= 400 {
		g.Errors++
	}
	if rec.Rescued {
		if rec.FallbackIndex > 0 {
			g.RescuedFallback++
		} else {
			g.RescuedRetry++
		}
	}
	lat := rec.Latency.Microseconds()
	switch rec.CacheStatus {
	case gateway.CacheHit:
		g.CacheHits++
		g.CacheHitLatency += lat
	case gateway.CacheMiss, gateway.CacheRefresh:
		g.CacheMisses++
		g.CacheMissLatency += lat
	}
	g.PromptTokens += rec.PromptTokens
	g.CompletionTokens += rec.CompletionTokens
	g.TotalTokens += rec.TotalTokens
	g.Cost += rec.Cost
	g.Latency += lat
	if a.Measures&MeasureLatency != 0 {
		g.latencies = append(g.latencies, lat)
	}
	if u := rec.Metadata[UserMetadataKey]; u != "" {
		g.UserRequests++
		if g.users == nil {
			g.users = make(map[string]struct{})
		}
		g.users[u] = struct{}{}
	}
	if rec.Time.After(g.LastSeen) {
		g.LastSeen = rec.Time.UTC()
	}
	if len(fb) > 0 {
		g.RequestsWithFeedback++
		g.Feedbacks += int64(len(fb))
		for _, f := range fb {
			g.FeedbackWeight += float64(f.value) * f.weight
		}
	}
}

func (ag *recordAggregator) group(k aggKey) *aggState {
	g := ag.groups[k]
	if g == nil {
		g = &aggState{}
		for _, d := range ag.a.GroupBy {
			switch d {
			case DimTime:
				g.Time = time.UnixMicro(k.time).UTC()
			case DimModel:
				g.Provider, g.Model = k.provider, k.model
			case DimMetadata:
				g.MetadataValue = k.value
			case DimStatus:
				g.Status = k.status
			case DimAttempts:
				g.Attempts = k.attempts
			case DimFeedbackValue:
				g.FeedbackValue = k.fbv
			}
		}
		ag.groups[k] = g
	}
	return g
}

func (ag *recordAggregator) result() []Aggregate {
	out := make([]Aggregate, 0, len(ag.groups))
	for _, g := range ag.groups {
		if len(g.latencies) > 0 {
			slices.Sort(g.latencies)
			g.LatencyP50 = Percentile(g.latencies, 0.5)
			g.LatencyP90 = Percentile(g.latencies, 0.9)
			g.LatencyP99 = Percentile(g.latencies, 0.99)
		}
		g.Users = int64(len(g.users))
		out = append(out, ag.masked(g.Aggregate))
	}
	SortAggregates(out)
	return out
}

// masked returns a with the measures its aggregation did not ask for set
// to zero, so that every implementation gives the same Aggregate.
func (ag *recordAggregator) masked(a Aggregate) Aggregate {
	m := ag.a.Measures
	if ag.byValue {
		return Aggregate{Time: a.Time, Provider: a.Provider, Model: a.Model, MetadataValue: a.MetadataValue, Status: a.Status,
			Attempts: a.Attempts, FeedbackValue: a.FeedbackValue, Requests: a.Requests, Feedbacks: a.Feedbacks,
			FeedbackWeight: a.FeedbackWeight}
	}
	if m&MeasureErrors == 0 {
		a.Errors = 0
	}
	if m&MeasureRescued == 0 {
		a.RescuedRetry, a.RescuedFallback = 0, 0
	}
	if m&MeasureCache == 0 {
		a.CacheHits, a.CacheMisses, a.CacheHitLatency, a.CacheMissLatency = 0, 0, 0, 0
	}
	if m&MeasureTokens == 0 {
		a.PromptTokens, a.CompletionTokens, a.TotalTokens = 0, 0, 0
	}
	if m&MeasureCost == 0 {
		a.Cost = 0
	}
	if m&MeasureLatency == 0 {
		a.Latency = 0
	}
	if m&MeasureUsers == 0 {
		a.Users, a.UserRequests = 0, 0
	}
	if m&MeasureLastSeen == 0 {
		a.LastSeen = time.Time{}
	}
	if m&MeasureFeedback == 0 {
		a.Feedbacks, a.FeedbackWeight, a.RequestsWithFeedback = 0, 0, 0
	}
	return a
}

// meanWeighted is the mean of value × weight over fb (not empty).
func meanWeighted(fb []fbPoint) float64 {
	var sum float64
	for _, f := range fb {
		sum += float64(f.value) * f.weight
	}
	return sum / float64(len(fb))
}

// aggregatePage is how many records aggregateLogs reads at a time from a
// Store without Aggregator.
const aggregatePage = 1000

// aggregateLogs answers a from logs, with the feedback of fb (nil: none):
// through logs' own Aggregator when it has one and keeps the feedback
// too, otherwise by reading every selected record, a page at a time.
func aggregateLogs(ctx context.Context, logs Store, fb FeedbackStore, a *Aggregation) ([]Aggregate, error) {
	if agg, ok := logs.(Aggregator); ok && (fb == nil || any(fb) == any(logs)) {
		return agg.AggregateLogs(ctx, a)
	}
	var feedback []Feedback
	if fb != nil && (a.Measures&MeasureFeedback != 0 || slices.Contains(a.GroupBy, DimFeedbackValue) ||
		a.WeightedFeedback.HasMin || a.WeightedFeedback.HasMax) {
		var err error
		if feedback, err = fb.FeedbackOf(ctx, a.Query.WorkspaceID, nil); err != nil {
			return nil, err
		}
	}
	ag := newRecordAggregator(a, feedback)
	q := a.Query
	q.Limit, q.After = aggregatePage, ""
	for {
		recs, err := logs.Logs(ctx, &q)
		if err != nil {
			return nil, err
		}
		for i := range recs {
			ag.add(&recs[i])
		}
		if len(recs) < aggregatePage {
			return ag.result(), nil
		}
		q.After = recs[len(recs)-1].ID
	}
}
