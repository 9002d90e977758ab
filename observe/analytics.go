package observe

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"
)

// Aggregator is an optional capability of a Store: it computes the
// figures of the analytics routes itself (in SQL, say) instead of having
// the gateway read every record the filters select. The gateway finds it
// by type assertion on Options.Logs, and uses it only when
// Options.Feedback is nil or is the same store, since an aggregator
// links records to the feedback it keeps itself.
//
// AggregateLogs must give what AggregateRecords gives over the records
// a.Query selects (paging aside) and the store's feedback, to the last
// count; float sums may differ by rounding. It must be safe for
// concurrent use.
type Aggregator interface {
	AggregateLogs(ctx context.Context, a *Aggregation) ([]Aggregate, error)
}

// Dimension is one key AggregateLogs groups records by.
type Dimension int

// Dimensions of an Aggregation.
const (
	// DimTime groups by bucket: the record's time rounded down to a
	// multiple of Aggregation.Bucket since the Unix epoch (UTC).
	DimTime Dimension = iota + 1
	// DimModel groups by provider and model.
	DimModel
	// DimMetadata groups by the value of the metadata key
	// Aggregation.MetadataKey; records without that key are left out.
	DimMetadata
	// DimStatus groups by response status code.
	DimStatus
	// DimAttempts groups by the number of retries made (RequestLog.Attempts).
	DimAttempts
	// DimFeedbackValue groups the feedback of the selected records'
	// traces by value; each feedback counts once per selected record of
	// its trace, and records without feedback are left out. Only the
	// feedback measures (Feedbacks, FeedbackWeight) are given with it.
	DimFeedbackValue
)

// Measure selects figures of an Aggregate beyond Requests, which is
// always counted; the figures not asked for are zero.
type Measure uint

// Measures of an Aggregation.
const (
	MeasureTokens   Measure = 1 << iota // PromptTokens, CompletionTokens, TotalTokens
	MeasureCost                         // Cost
	MeasureLatency                      // Latency, LatencyP50, LatencyP90, LatencyP99
	MeasureCache                        // CacheHits, CacheMisses, CacheHitLatency, CacheMissLatency
	MeasureErrors                       // Errors
	MeasureRescued                      // RescuedRetry, RescuedFallback
	MeasureUsers                        // Users, UserRequests
	MeasureFeedback                     // Feedbacks, FeedbackWeight, RequestsWithFeedback
	MeasureLastSeen                     // LastSeen
)

// UserMetadataKey is the metadata key whose value names the end user of a
// request (x-gateway-metadata {"_user": …}): the users of the analytics
// routes are its distinct non-empty values.
const UserMetadataKey = "_user"

// Aggregation asks for the figures of the request logs a query selects,
// grouped by some dimensions.
type Aggregation struct {
	// Query selects the records (its After and Limit are ignored).
	Query Query
	// WeightedFeedback bounds a record's weighted feedback: the mean of
	// value × weight over the feedback of its trace (in its workspace).
	// A bound on either side leaves out records without feedback.
	WeightedFeedback Range[float64]

	// GroupBy lists the dimensions of the groups; none gives one group of
	// every selected record (no group at all when none is selected).
	GroupBy []Dimension
	// Bucket is the width of DimTime's buckets; it must be positive, in
	// whole microseconds, when GroupBy holds DimTime.
	Bucket time.Duration
	// MetadataKey is the key of DimMetadata.
	MetadataKey string

	// Measures selects the figures to compute.
	Measures Measure
}

// Aggregate is the figures of one group of request logs. Only the keys of
// the Aggregation's GroupBy are set, and only the measures it asks for.
// Latencies are in microseconds, cost in USD.
type Aggregate struct {
	Time            time.Time // DimTime: the bucket's start, UTC
	Provider, Model string    // DimModel
	MetadataValue   string    // DimMetadata
	Status          int       // DimStatus
	Attempts        int       // DimAttempts
	FeedbackValue   int       // DimFeedbackValue

	Requests int64
	// Errors counts records of status 400 or above.
	Errors int64
	// RescuedRetry and RescuedFallback count rescued records (a 2xx after
	// a failed attempt): by a fallback when a target after the first
	// answered, by a retry of the first target otherwise.
	RescuedRetry, RescuedFallback int64
	// CacheHits counts cache status HIT; CacheMisses MISS and REFRESH
	// (the cache was asked, the provider answered). CacheHitLatency and
	// CacheMissLatency are the sums of their latencies.
	CacheHits, CacheMisses            int64
	CacheHitLatency, CacheMissLatency int64

	PromptTokens, CompletionTokens, TotalTokens int64
	Cost                                        float64

	// Latency is the sum of the records' latencies; the percentiles are
	// nearest-rank (Percentile).
	Latency                            int64
	LatencyP50, LatencyP90, LatencyP99 int64

	// Users counts the distinct non-empty values of the UserMetadataKey
	// metadata; UserRequests the records that carry one.
	Users, UserRequests int64

	LastSeen time.Time // the newest record's time

	// Feedbacks counts the feedback of the records' traces (once per
	// record of the trace), FeedbackWeight sums their value × weight, and
	// RequestsWithFeedback counts the records with any.
	Feedbacks            int64
	FeedbackWeight       float64
	RequestsWithFeedback int64
}

// Percentile returns the nearest-rank p-quantile of sorted (ascending):
// the value at 1-based position ⌈p·n⌉, the first whose cumulative share
// reaches p, as Postgres's percentile_disc computes it (in float64); 0
// for no value.
func Percentile(sorted []int64, p float64) int64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(n))) - 1
	return sorted[min(max(i, 0), n-1)]
}

// BucketWidth returns the width of the time buckets of a graph over
// [start, end] (the observability routes): a minute up to an hour, an hour up to two
// days, a day beyond.
func BucketWidth(start, end time.Time) time.Duration {
	switch d := end.Sub(start); {
	case d <= time.Hour:
		return time.Minute
	case d <= 48*time.Hour:
		return time.Hour
	default:
		return 24 * time.Hour
	}
}

// bucketOf returns the start of the bucket of width w holding t.
func bucketOf(t time.Time, w time.Duration) time.Time {
	us, wus := t.UnixMicro(), w.Microseconds()
	b := us / wus * wus
	if us < 0 && us%wus != 0 {
		b -= wus
	}
	return time.UnixMicro(b).UTC()
}

// buckets returns the starts of every bucket of width w from the one
// holding start to the one holding end.
func buckets(start, end time.Time, w time.Duration) []time.Time {
	var out []time.Time
	for t, last := bucketOf(start, w), bucketOf(end, w); !t.After(last); t = t.Add(w) {
		out = append(out, t)
	}
	return out
}

// compareAggregates orders aggregates by their keys in the order of
// AggregateLogs' answer.
func compareAggregates(a, b *Aggregate) int {
	if c := a.Time.Compare(b.Time); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Provider, b.Provider); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Model, b.Model); c != 0 {
		return c
	}
	if c := cmp.Compare(a.MetadataValue, b.MetadataValue); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Status, b.Status); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Attempts, b.Attempts); c != 0 {
		return c
	}
	return cmp.Compare(a.FeedbackValue, b.FeedbackValue)
}

// SortAggregates sorts aggs by their keys: time, provider, model,
// metadata value, status, attempts, feedback value (ascending).
func SortAggregates(aggs []Aggregate) {
	slices.SortFunc(aggs, func(a, b Aggregate) int { return compareAggregates(&a, &b) })
}
