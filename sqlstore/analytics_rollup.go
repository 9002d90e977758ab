package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelgateway/gateway/observe"
)

// SQLite keeps hourly rollups of the request logs (log_hours, by status,
// provider and model, and log_metadata_hours, by metadata pair; see the
// migration that adds them), kept by triggers. An aggregation that asks
// only for sums (no percentile, no distinct user) and filters by
// workspace, time, status and model alone, grouped by buckets of whole
// hours, status or model (or not at all) — distinct users too, when it
// filters by workspace and time alone and groups by time at most — or
// that filters by workspace and time alone, grouped by a metadata value,
// reads the rollups for the
// whole hours of its window and the records for the parts of an hour at
// either end. Latency percentiles come from the latency digests of the
// whole hours (log_latency_hours) and the records of the rest. The feedback of metadata groups is joined from the records
// with feedback only, found by trace.

// rollupWidth is the width of a rollup row, in microseconds.
const rollupWidth = int64(time.Hour / time.Microsecond)

// rollupMeasures are the measures log_hours sums; rollupMetadataMeasures
// those of metadata groups (feedback comes from the records).
const (
	rollupMeasures = observe.MeasureErrors | observe.MeasureRescued | observe.MeasureCache | observe.MeasureTokens |
		observe.MeasureCost | observe.MeasureLastSeen | observe.MeasureLatency // latency: digests (rollupLatency)
	rollupMetadataMeasures = observe.MeasureTokens | observe.MeasureCost | observe.MeasureLastSeen | observe.MeasureFeedback
)

// rollupHours returns the whole hours [from, to) of a's window that the
// rollups may answer for, and whether they may.
func (s *Store) rollupHours(a *observe.Aggregation) (from, to int64, ok bool) {
	q := &a.Query
	if s.dialect != dialectSQLite || q.Start.IsZero() || q.End.IsZero() || len(q.APIKeyIDs) > 0 || len(q.VirtualKeys) > 0 ||
		len(q.Configs) > 0 || len(q.TraceIDs) > 0 || len(q.Metadata) > 0 || len(q.Prompts) > 0 ||
		q.PromptTokens != (observe.Range[int64]{}) || q.CompletionTokens != (observe.Range[int64]{}) ||
		q.TotalTokens != (observe.Range[int64]{}) || q.Cost != (observe.Range[float64]{}) ||
		a.WeightedFeedback != (observe.Range[float64]{}) {
		return 0, 0, false
	}
	if slices.Contains(a.GroupBy, observe.DimMetadata) {
		ok = len(a.GroupBy) == 1 && len(q.StatusCodes) == 0 && len(q.Models) == 0 && a.Measures&^rollupMetadataMeasures == 0
	} else {
		m := a.Measures
		if len(q.StatusCodes) == 0 && len(q.Models) == 0 && !slices.Contains(a.GroupBy, observe.DimStatus) &&
			!slices.Contains(a.GroupBy, observe.DimModel) {
			m &^= observe.MeasureUsers // distinct users from log_metadata_hours's _user rows
		}
		ok = m&^rollupMeasures == 0
		for _, d := range a.GroupBy {
			ok = ok && (d == observe.DimStatus || d == observe.DimModel ||
				d == observe.DimTime && a.Bucket.Microseconds()%rollupWidth == 0)
		}
	}
	start, end := q.Start.UnixMicro(), q.End.UnixMicro()
	from = (start + rollupWidth - 1) / rollupWidth * rollupWidth
	to = (end + 1) / rollupWidth * rollupWidth
	return from, to, ok && start >= 0 && from < to
}

// aggregateRollup answers a (for which rollupHours said yes) from the
// rollups of the hours [from, to) and the records of the rest.
func (s *Store) aggregateRollup(ctx context.Context, a *observe.Aggregation, from, to int64) ([]observe.Aggregate, error) {
	groups := make(map[rollupKey]*observe.Aggregate)
	add := func(aggs []observe.Aggregate, feedbackOnly bool) {
		for _, x := range aggs {
			k := rollupKey{x.Time.UnixMicro(), x.MetadataValue, x.Status, x.Provider, x.Model}
			g := groups[k]
			if g == nil {
				g = &observe.Aggregate{Time: x.Time, MetadataValue: x.MetadataValue, Status: x.Status, Provider: x.Provider,
					Model: x.Model}
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
	// The parts of an hour at either end, from the records; distinct
	// users are counted apart (rollupUsers), as they do not add up.
	base := *a
	base.Measures &^= observe.MeasureUsers | observe.MeasureLatency
	for _, part := range rollupEdges(a, from, to) {
		edge := base
		edge.Query.Start, edge.Query.End = part[0], part[1]
		aggs, err := s.aggregateRecords(ctx, &edge, false)
		if err != nil {
			return nil, err
		}
		add(aggs, false)
	}
	spans, err := s.rollupSpans(ctx, a, from, to)
	if err != nil {
		return nil, err
	}
	for _, sp := range spans {
		aggs, err := s.readRollups(ctx, &base, sp)
		if err != nil {
			return nil, err
		}
		add(aggs, false)
	}
	if a.Measures&observe.MeasureUsers != 0 {
		if err := s.rollupUsers(ctx, a, from, to, spans, groups); err != nil {
			return nil, err
		}
	}
	if a.Measures&observe.MeasureLatency != 0 {
		if err := s.rollupLatency(ctx, a, from, to, spans, groups); err != nil {
			return nil, err
		}
	}
	if a.Measures&observe.MeasureFeedback != 0 {
		whole := *a
		whole.Query.Start, whole.Query.End = time.UnixMicro(from), time.UnixMicro(to-1)
		whole.Measures = observe.MeasureFeedback
		aggs, err := s.aggregateRecords(ctx, &whole, true)
		if err != nil {
			return nil, err
		}
		add(aggs, true)
	}
	out := make([]observe.Aggregate, 0, len(groups))
	for _, g := range groups {
		if g.Requests > 0 {
			out = append(out, *g)
		}
	}
	return out, nil
}

// rollupEdges returns the parts of a's window before from and from to
// on, those of an hour the rollups do not answer for.
func rollupEdges(a *observe.Aggregation, from, to int64) [][2]time.Time {
	var out [][2]time.Time
	for _, part := range [][2]int64{{a.Query.Start.UnixMicro(), from - 1}, {to, a.Query.End.UnixMicro()}} {
		if part[0] <= part[1] {
			out = append(out, [2]time.Time{time.UnixMicro(part[0]), time.UnixMicro(part[1])})
		}
	}
	return out
}

// rollupUsers sets Users and UserRequests of groups (keyed by time alone)
// from the distinct non-empty _user values of a's window: the rows of
// log_metadata_hours for the hours [from, to), the records for the rest.
func (s *Store) rollupUsers(ctx context.Context, a *observe.Aggregation, from, to int64, spans []rollupSpan, groups map[rollupKey]*observe.Aggregate) error {
	byTime := slices.Contains(a.GroupBy, observe.DimTime)
	sets := make(map[int64]map[string]bool)
	reqs := make(map[int64]int64)
	addUser := func(t time.Time, user string, n int64) {
		if user == "" {
			return
		}
		k := t.UnixMicro()
		if sets[k] == nil {
			sets[k] = make(map[string]bool)
		}
		sets[k][user] = true
		reqs[k] += n
	}
	for _, part := range rollupEdges(a, from, to) {
		edge := *a
		edge.Query.Start, edge.Query.End = part[0], part[1]
		edge.GroupBy = []observe.Dimension{observe.DimMetadata}
		if byTime {
			edge.GroupBy = []observe.Dimension{observe.DimTime, observe.DimMetadata}
		}
		edge.MetadataKey, edge.Measures = observe.UserMetadataKey, 0
		aggs, err := s.aggregateRecords(ctx, &edge, false)
		if err != nil {
			return err
		}
		for _, x := range aggs {
			addUser(x.Time, x.MetadataValue, x.Requests)
		}
	}
	for _, sp := range spans {
		if err := s.readUsers(ctx, a, sp, addUser); err != nil {
			return fmt.Errorf("sqlstore: aggregating request logs: %w", err)
		}
	}
	for k, g := range groups {
		g.Users, g.UserRequests = int64(len(sets[k.time])), reqs[k.time]
	}
	return nil
}

// readUsers calls addUser with each distinct _user value of the rollup
// rows of span sp, by a's bucket, and its number of records.
func (s *Store) readUsers(ctx context.Context, a *observe.Aggregation, sp rollupSpan, addUser func(time.Time, string, int64)) error {
	byTime := slices.Contains(a.GroupBy, observe.DimTime)
	bucket, args := `0`, []any{sp.from, sp.to, observe.UserMetadataKey}
	if byTime {
		w := strconv.FormatInt(a.Bucket.Microseconds(), 10)
		bucket = `hour_us / ` + w + ` * ` + w
	}
	ws := ``
	if a.Query.WorkspaceID != "" {
		args = append(args, a.Query.WorkspaceID)
		ws = ` AND workspace_id = $4`
	}
	rows, err := s.db.QueryContext(ctx, s.dialect.rebind(`SELECT `+bucket+`, value, SUM(requests) FROM `+sp.tables().meta+`
WHERE hour_us >= $1 AND hour_us < $2 AND key = $3 AND value <> ''`+ws+` GROUP BY 1, 2`), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			t     int64
			value string
			n     int64
		)
		if err := rows.Scan(&t, &value, &n); err != nil {
			return err
		}
		when := time.Time{}
		if byTime {
			when = time.UnixMicro(t).UTC()
		}
		addUser(when, value, n)
	}
	return rows.Err()
}

type rollupKey struct {
	time            int64
	value           string
	status          int
	provider, model string
}

// rollupQuery returns the query of the rollup rows of span sp that a
// reads, and its arguments: log_metadata_hours summed
// by value for a grouping by metadata, log_hours summed by a's buckets,
// status and model otherwise.
func rollupQuery(a *observe.Aggregation, sp rollupSpan) (string, []any) {
	t := sp.tables()
	if slices.Contains(a.GroupBy, observe.DimMetadata) {
		args := []any{sp.from, sp.to, a.MetadataKey}
		where := ``
		if a.Query.WorkspaceID != "" {
			args = append(args, a.Query.WorkspaceID)
			where = ` AND workspace_id = $4`
		}
		return `SELECT value, SUM(requests), SUM(prompt_tokens), SUM(completion_tokens), SUM(total_tokens), SUM(cost), MAX(last_us)
FROM ` + t.meta + ` WHERE hour_us >= $1 AND hour_us < $2 AND key = $3` + where + ` GROUP BY value`, args
	}
	keys := []string{`0`, `0`, `''`, `''`}
	for _, d := range a.GroupBy {
		switch d {
		case observe.DimTime:
			w := strconv.FormatInt(a.Bucket.Microseconds(), 10)
			keys[0] = `hour_us / ` + w + ` * ` + w
		case observe.DimStatus:
			keys[1] = `status`
		case observe.DimModel:
			keys[2], keys[3] = `provider`, `model`
		}
	}
	where, args := rollupWhere(a, sp.from, sp.to, "")
	return `SELECT ` + strings.Join(keys, ", ") + `, SUM(requests), SUM(errors), SUM(rescued_retry), SUM(rescued_fallback),
	SUM(cache_hits), SUM(cache_misses), SUM(cache_hit_latency_us), SUM(cache_miss_latency_us), SUM(prompt_tokens),
	SUM(completion_tokens), SUM(total_tokens), SUM(cost), MAX(last_us)
FROM ` + t.sums + ` WHERE ` + where + ` GROUP BY 1, 2, 3, 4`, args
}

// rollupWhere returns the condition on the rollup rows (their columns
// named with prefix) of [from, to) that a selects, by
// workspace, status and model, and its arguments.
func rollupWhere(a *observe.Aggregation, from, to int64, prefix string) (string, []any) {
	args := []any{from, to}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	where := prefix + `hour_us >= $1 AND ` + prefix + `hour_us < $2`
	if a.Query.WorkspaceID != "" {
		where += ` AND ` + prefix + `workspace_id = ` + arg(a.Query.WorkspaceID)
	}
	if len(a.Query.StatusCodes) > 0 {
		marks := make([]string, len(a.Query.StatusCodes))
		for i, c := range a.Query.StatusCodes {
			marks[i] = arg(c)
		}
		where += ` AND ` + prefix + `status IN (` + strings.Join(marks, ", ") + `)`
	}
	if len(a.Query.Models) > 0 {
		ors := make([]string, len(a.Query.Models))
		for i, m := range a.Query.Models {
			ors[i] = `(` + prefix + `provider = ` + arg(m.Provider) + ` AND ` + prefix + `model = ` + arg(m.Model) + `)`
		}
		where += ` AND (` + strings.Join(ors, ` OR `) + `)`
	}
	return where, args
}

// readRollups reads the sums of the rollup rows of span sp that a asks
// for, by a's keys: its bucket, status, model or metadata
// value.
func (s *Store) readRollups(ctx context.Context, a *observe.Aggregation, sp rollupSpan) ([]observe.Aggregate, error) {
	q, args := rollupQuery(a, sp)
	rows, err := s.db.QueryContext(ctx, s.dialect.rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: aggregating request logs: %w", err)
	}
	defer rows.Close()
	byMeta := slices.Contains(a.GroupBy, observe.DimMetadata)
	m := a.Measures
	var out []observe.Aggregate
	for rows.Next() {
		var (
			x               observe.Aggregate
			hour, lastUS    int64
			status          int
			provider, model string
		)
		if byMeta {
			err = rows.Scan(&x.MetadataValue, &x.Requests, &x.PromptTokens, &x.CompletionTokens, &x.TotalTokens, &x.Cost, &lastUS)
		} else {
			err = rows.Scan(&hour, &status, &provider, &model, &x.Requests, &x.Errors, &x.RescuedRetry, &x.RescuedFallback,
				&x.CacheHits, &x.CacheMisses, &x.CacheHitLatency, &x.CacheMissLatency, &x.PromptTokens, &x.CompletionTokens,
				&x.TotalTokens, &x.Cost, &lastUS)
		}
		if err != nil {
			return nil, fmt.Errorf("sqlstore: aggregating request logs: %w", err)
		}
		for _, d := range a.GroupBy {
			switch d {
			case observe.DimTime:
				x.Time = time.UnixMicro(hour).UTC()
			case observe.DimStatus:
				x.Status = status
			case observe.DimModel:
				x.Provider, x.Model = provider, model
			}
		}
		if m&observe.MeasureLastSeen != 0 {
			x.LastSeen = time.UnixMicro(lastUS).UTC()
		}
		if m&observe.MeasureErrors == 0 {
			x.Errors = 0
		}
		if m&observe.MeasureRescued == 0 {
			x.RescuedRetry, x.RescuedFallback = 0, 0
		}
		if m&observe.MeasureCache == 0 {
			x.CacheHits, x.CacheMisses, x.CacheHitLatency, x.CacheMissLatency = 0, 0, 0, 0
		}
		if m&observe.MeasureTokens == 0 {
			x.PromptTokens, x.CompletionTokens, x.TotalTokens = 0, 0, 0
		}
		if m&observe.MeasureCost == 0 {
			x.Cost = 0
		}
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: aggregating request logs: %w", err)
	}
	return out, nil
}

// rollupSpan is a part [from, to) of the whole hours of an aggregation's
// window, read from the hourly rollups, or from the daily ones when
// daily (whole days, each marked done).
type rollupSpan struct {
	from, to int64
	daily    bool
}

// rollupTables names the tables of one width of rollup.
type rollupTables struct {
	sums, meta, latency string
	width               int64 // of a row, in microseconds
}

var (
	hourTables = rollupTables{"log_hours", "log_metadata_hours", "log_latency_hours", hourUS}
	dayTables  = rollupTables{"log_days", "log_metadata_days", "log_latency_days", dayUS}
)

func (sp rollupSpan) tables() rollupTables {
	if sp.daily {
		return dayTables
	}
	return hourTables
}

// rollupSpans splits the whole hours [from, to) of a's window into spans:
// the runs of whole days whose daily rollups are done (log_days_done),
// read from those, and the hours between, from the hourly ones. Days
// serve only buckets of whole days, or no buckets.
func (s *Store) rollupSpans(ctx context.Context, a *observe.Aggregation, from, to int64) ([]rollupSpan, error) {
	if slices.Contains(a.GroupBy, observe.DimTime) && a.Bucket.Microseconds()%dayUS != 0 {
		return []rollupSpan{{from, to, false}}, nil
	}
	first := (from + dayUS - 1) / dayUS * dayUS
	rows, err := s.db.QueryContext(ctx, `SELECT day_us FROM log_days_done WHERE day_us >= ?1 AND day_us + ?3 <= ?2 ORDER BY 1`,
		first, to, dayUS)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: aggregating request logs: %w", err)
	}
	defer rows.Close()
	var spans []rollupSpan
	at := from // the start of what no span covers yet
	for rows.Next() {
		var d int64
		if err := rows.Scan(&d); err != nil {
			return nil, fmt.Errorf("sqlstore: aggregating request logs: %w", err)
		}
		if d > at {
			spans = append(spans, rollupSpan{at, d, false})
		}
		if n := len(spans); n > 0 && spans[n-1].daily && spans[n-1].to == d {
			spans[n-1].to = d + dayUS
		} else {
			spans = append(spans, rollupSpan{d, d + dayUS, true})
		}
		at = d + dayUS
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: aggregating request logs: %w", err)
	}
	if at < to {
		spans = append(spans, rollupSpan{at, to, false})
	}
	return spans, nil
}
