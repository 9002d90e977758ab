package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	gateway "github.com/modelgateway/gateway"
)

// SQLite keeps hourly rollups of the request logs (log_hours and
// log_metadata_hours, see the migration that adds them), kept by
// triggers. An aggregation that filters by workspace and time alone, asks
// only for sums (no percentile, no distinct user), and groups by nothing,
// by buckets of whole hours, or by a metadata value, reads the rollups
// for the whole hours of its window and the records for the parts of an
// hour at either end. The feedback of metadata groups is joined from the
// records with feedback only, found by trace.

// rollupWidth is the width of a rollup row, in microseconds.
const rollupWidth = int64(time.Hour / time.Microsecond)

// rollupMeasures are the measures log_hours sums; rollupMetadataMeasures
// those of metadata groups (feedback comes from the records).
const (
	rollupMeasures = gateway.MeasureErrors | gateway.MeasureRescued | gateway.MeasureCache | gateway.MeasureTokens |
		gateway.MeasureCost | gateway.MeasureLastSeen
	rollupMetadataMeasures = gateway.MeasureTokens | gateway.MeasureCost | gateway.MeasureLastSeen | gateway.MeasureFeedback
)

// rollupHours returns the whole hours [from, to) of a's window that the
// rollups may answer for, and whether they may.
func (s *Store) rollupHours(a *gateway.Aggregation) (from, to int64, ok bool) {
	q := &a.Query
	if s.dialect != dialectSQLite || q.Start.IsZero() || q.End.IsZero() || len(q.StatusCodes) > 0 || len(q.Models) > 0 ||
		len(q.APIKeyIDs) > 0 || len(q.VirtualKeys) > 0 || len(q.Configs) > 0 || len(q.TraceIDs) > 0 || len(q.Metadata) > 0 ||
		q.PromptTokens != (gateway.Range[int64]{}) || q.CompletionTokens != (gateway.Range[int64]{}) ||
		q.TotalTokens != (gateway.Range[int64]{}) || q.Cost != (gateway.Range[float64]{}) ||
		a.WeightedFeedback != (gateway.Range[float64]{}) {
		return 0, 0, false
	}
	switch {
	case len(a.GroupBy) == 0 || len(a.GroupBy) == 1 && a.GroupBy[0] == gateway.DimTime && a.Bucket.Microseconds()%rollupWidth == 0:
		ok = a.Measures&^rollupMeasures == 0
	case len(a.GroupBy) == 1 && a.GroupBy[0] == gateway.DimMetadata:
		ok = a.Measures&^rollupMetadataMeasures == 0
	}
	start, end := q.Start.UnixMicro(), q.End.UnixMicro()
	from = (start + rollupWidth - 1) / rollupWidth * rollupWidth
	to = (end + 1) / rollupWidth * rollupWidth
	return from, to, ok && start >= 0 && from < to
}

// aggregateRollup answers a (for which rollupHours said yes) from the
// rollups of the hours [from, to) and the records of the rest.
func (s *Store) aggregateRollup(ctx context.Context, a *gateway.Aggregation, from, to int64) ([]gateway.Aggregate, error) {
	groups := make(map[rollupKey]*gateway.Aggregate)
	add := func(aggs []gateway.Aggregate, feedbackOnly bool) {
		for _, x := range aggs {
			k := rollupKey{x.Time.UnixMicro(), x.MetadataValue}
			g := groups[k]
			if g == nil {
				g = &gateway.Aggregate{Time: x.Time, MetadataValue: x.MetadataValue}
				groups[k] = g
			}
			g.Feedbacks += x.Feedbacks
			g.FeedbackWeight += x.FeedbackWeight
			g.RequestsWithFeedback += x.RequestsWithFeedback
			if feedbackOnly {
				continue
			}
			g.Requests += x.Requests
			g.Errors += x.Errors
			g.RescuedRetry += x.RescuedRetry
			g.RescuedFallback += x.RescuedFallback
			g.CacheHits += x.CacheHits
			g.CacheMisses += x.CacheMisses
			g.CacheHitLatency += x.CacheHitLatency
			g.CacheMissLatency += x.CacheMissLatency
			g.PromptTokens += x.PromptTokens
			g.CompletionTokens += x.CompletionTokens
			g.TotalTokens += x.TotalTokens
			g.Cost += x.Cost
			if x.LastSeen.After(g.LastSeen) {
				g.LastSeen = x.LastSeen
			}
		}
	}
	// The parts of an hour at either end, from the records.
	for _, part := range [][2]int64{{a.Query.Start.UnixMicro(), from - 1}, {to, a.Query.End.UnixMicro()}} {
		if part[0] > part[1] {
			continue
		}
		edge := *a
		edge.Query.Start, edge.Query.End = time.UnixMicro(part[0]), time.UnixMicro(part[1])
		aggs, err := s.aggregateRecords(ctx, &edge, false)
		if err != nil {
			return nil, err
		}
		add(aggs, false)
	}
	aggs, err := s.readRollups(ctx, a, from, to)
	if err != nil {
		return nil, err
	}
	add(aggs, false)
	if a.Measures&gateway.MeasureFeedback != 0 {
		whole := *a
		whole.Query.Start, whole.Query.End = time.UnixMicro(from), time.UnixMicro(to-1)
		whole.Measures = gateway.MeasureFeedback
		aggs, err := s.aggregateRecords(ctx, &whole, true)
		if err != nil {
			return nil, err
		}
		add(aggs, true)
	}
	out := make([]gateway.Aggregate, 0, len(groups))
	for _, g := range groups {
		if g.Requests > 0 {
			out = append(out, *g)
		}
	}
	return out, nil
}

type rollupKey struct {
	time  int64
	value string
}

// rollupQuery returns the query of the rollup rows of the hours
// [from, to) that a reads, and its arguments: by metadata value for a
// grouping by metadata, by hour otherwise.
func rollupQuery(a *gateway.Aggregation, from, to int64) (string, []any) {
	args := []any{from, to}
	ws := ""
	if a.Query.WorkspaceID != "" {
		args = append(args, a.Query.WorkspaceID)
		ws = ` AND workspace_id = $3`
	}
	if slices.Contains(a.GroupBy, gateway.DimMetadata) {
		args = append(args, a.MetadataKey)
		return `SELECT value, SUM(requests), 0, 0, 0, 0, 0, 0, 0, SUM(prompt_tokens), SUM(completion_tokens), SUM(total_tokens),
	SUM(cost), MAX(last_us) FROM log_metadata_hours WHERE hour_us >= $1 AND hour_us < $2` + ws + ` AND key = $` +
			strconv.Itoa(len(args)) + ` GROUP BY value`, args
	}
	return `SELECT hour_us, requests, errors, rescued_retry, rescued_fallback, cache_hits, cache_misses, cache_hit_latency_us,
	cache_miss_latency_us, prompt_tokens, completion_tokens, total_tokens, cost, last_us
FROM log_hours WHERE hour_us >= $1 AND hour_us < $2` + ws, args
}

// readRollups sums the rollup rows of the hours [from, to) by a's
// grouping: into a's buckets, by metadata value, or all together.
func (s *Store) readRollups(ctx context.Context, a *gateway.Aggregation, from, to int64) ([]gateway.Aggregate, error) {
	q, args := rollupQuery(a, from, to)
	byMeta := slices.Contains(a.GroupBy, gateway.DimMetadata)
	rows, err := s.db.QueryContext(ctx, s.dialect.rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: aggregating request logs: %w", err)
	}
	defer rows.Close()
	byTime := slices.Contains(a.GroupBy, gateway.DimTime)
	width := a.Bucket.Microseconds()
	m := a.Measures
	var out []gateway.Aggregate
	for rows.Next() {
		var (
			x      gateway.Aggregate
			key    any
			hour   int64
			value  string
			lastUS int64
		)
		if byMeta {
			key = &value
		} else {
			key = &hour
		}
		if err := rows.Scan(key, &x.Requests, &x.Errors, &x.RescuedRetry, &x.RescuedFallback, &x.CacheHits, &x.CacheMisses,
			&x.CacheHitLatency, &x.CacheMissLatency, &x.PromptTokens, &x.CompletionTokens, &x.TotalTokens, &x.Cost, &lastUS); err != nil {
			return nil, fmt.Errorf("sqlstore: aggregating request logs: %w", err)
		}
		x.MetadataValue = value
		if byTime {
			x.Time = time.UnixMicro(hour / width * width).UTC()
		}
		if m&gateway.MeasureLastSeen != 0 {
			x.LastSeen = time.UnixMicro(lastUS).UTC()
		}
		if m&gateway.MeasureErrors == 0 {
			x.Errors = 0
		}
		if m&gateway.MeasureRescued == 0 {
			x.RescuedRetry, x.RescuedFallback = 0, 0
		}
		if m&gateway.MeasureCache == 0 {
			x.CacheHits, x.CacheMisses, x.CacheHitLatency, x.CacheMissLatency = 0, 0, 0, 0
		}
		if m&gateway.MeasureTokens == 0 {
			x.PromptTokens, x.CompletionTokens, x.TotalTokens = 0, 0, 0
		}
		if m&gateway.MeasureCost == 0 {
			x.Cost = 0
		}
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: aggregating request logs: %w", err)
	}
	return out, nil
}
