package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelgateway/gateway/observe"
)

var _ observe.Aggregator = (*Store)(nil)

// AggregateLogs implements observe.Aggregator with one GROUP BY query
// on request_logs: the filters of logWhere, the feedback of each record's
// trace joined from the feedback table (only when a feedback figure or
// bound asks for it), the latency percentiles by Postgres's
// percentile_disc and, on SQLite, an aggregate function of this package
// (gw_percentiles) with the same nearest-rank definition. On SQLite, the
// whole hours of an aggregation by workspace and time alone are read
// from hourly rollups instead (see analytics_rollup.go).
func (s *Store) AggregateLogs(ctx context.Context, a *observe.Aggregation) ([]observe.Aggregate, error) {
	var (
		out []observe.Aggregate
		err error
	)
	if from, to, ok := s.rollupHours(a); ok {
		out, err = s.aggregateRollup(ctx, a, from, to)
	} else {
		out, err = s.aggregateRecords(ctx, a, false)
	}
	if err != nil {
		return nil, err
	}
	observe.SortAggregates(out)
	return out, nil
}

// aggregateRecords answers a from the records; withFeedback keeps only
// the records whose trace has feedback, found from the feedback table.
func (s *Store) aggregateRecords(ctx context.Context, a *observe.Aggregation, withFeedback bool) ([]observe.Aggregate, error) {
	q, args, scan := s.aggregateQuery(a, withFeedback)
	if s.dialect == dialectPostgres && slices.ContainsFunc(args, func(v any) bool {
		str, ok := v.(string)
		return ok && strings.ContainsRune(str, 0)
	}) {
		return nil, nil // Postgres text holds no NUL: no record matches (logQuery's "\x00" means none)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: aggregating request logs: %w", err)
	}
	defer rows.Close()
	var out []observe.Aggregate
	for rows.Next() {
		var ag observe.Aggregate
		ok, err := scan(rows, &ag)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: aggregating request logs: %w", err)
		}
		if ok {
			out = append(out, ag)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: aggregating request logs: %w", err)
	}
	return out, nil
}

// aggregateQuery returns the query of a, its arguments, and the function
// that reads one of its rows into an Aggregate (false for the row of no
// record that an ungrouped query gives); withFeedback keeps only the
// records whose trace has feedback.
func (s *Store) aggregateQuery(a *observe.Aggregation, withFeedback bool) (string, []any, func(*sql.Rows, *observe.Aggregate) (bool, error)) {
	d := s.dialect
	where, args := logWhere(d, &a.Query)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	var (
		cols    []string // the SELECT list
		groupBy []string // ordinals
		fill    []func(ag *observe.Aggregate) []any
		post    []func(ag *observe.Aggregate) error
	)
	col := func(expr string, dst func(ag *observe.Aggregate) []any) {
		cols = append(cols, expr)
		fill = append(fill, dst)
	}
	byValue := slices.Contains(a.GroupBy, observe.DimFeedbackValue)
	fbMeasure := a.Measures&observe.MeasureFeedback != 0 && !byValue
	fbBound := a.WeightedFeedback.HasMin || a.WeightedFeedback.HasMax
	from := `request_logs`
	if fbMeasure || fbBound || withFeedback {
		// Each record's trace's feedback, summed per trace first, so that
		// the join keeps one row per record. An inner join lets the
		// database start from the feedback and find its records by trace.
		join := ` LEFT JOIN`
		if withFeedback {
			join = ` JOIN`
		}
		from += join + ` (SELECT workspace_id AS fb_ws, trace_id AS fb_trace, COUNT(*) AS fb_n, SUM(score * weight) AS fb_w
	FROM feedback GROUP BY workspace_id, trace_id) fb ON fb.fb_ws = request_logs.workspace_id AND fb.fb_trace = request_logs.trace_id
	AND request_logs.trace_id <> ''`
		if a.WeightedFeedback.HasMin {
			where = append(where, `fb.fb_n > 0 AND fb.fb_w / fb.fb_n >= `+arg(a.WeightedFeedback.Min))
		}
		if a.WeightedFeedback.HasMax {
			where = append(where, `fb.fb_n > 0 AND fb.fb_w / fb.fb_n <= `+arg(a.WeightedFeedback.Max))
		}
	}
	if byValue {
		from += ` JOIN (SELECT workspace_id AS fv_ws, trace_id AS fv_trace, score AS fv_score, weight AS fv_weight FROM feedback) fv
	ON fv.fv_ws = request_logs.workspace_id AND fv.fv_trace = request_logs.trace_id AND request_logs.trace_id <> ''`
	}
	var timeUS int64
	for _, dim := range a.GroupBy {
		switch dim {
		case observe.DimTime:
			w := strconv.FormatInt(a.Bucket.Microseconds(), 10)
			col(`(time_us / `+w+`) * `+w, func(ag *observe.Aggregate) []any { return []any{&timeUS} })
			post = append(post, func(ag *observe.Aggregate) error { ag.Time = time.UnixMicro(timeUS).UTC(); return nil })
		case observe.DimModel:
			col(`provider`, func(ag *observe.Aggregate) []any { return []any{&ag.Provider} })
			col(`model`, func(ag *observe.Aggregate) []any { return []any{&ag.Model} })
		case observe.DimMetadata:
			expr := metadataValue(d, a.MetadataKey, arg)
			where = append(where, expr+` IS NOT NULL`)
			col(expr, func(ag *observe.Aggregate) []any { return []any{&ag.MetadataValue} })
		case observe.DimStatus:
			col(`status`, func(ag *observe.Aggregate) []any { return []any{&ag.Status} })
		case observe.DimAttempts:
			col(`attempts`, func(ag *observe.Aggregate) []any { return []any{&ag.Attempts} })
		case observe.DimFeedbackValue:
			col(`fv.fv_score`, func(ag *observe.Aggregate) []any { return []any{&ag.FeedbackValue} })
		}
	}
	for i := range cols {
		groupBy = append(groupBy, strconv.Itoa(i+1))
	}
	col(`COUNT(*)`, func(ag *observe.Aggregate) []any { return []any{&ag.Requests} })
	// sum sums an integer expression (Postgres's SUM of a BIGINT is a
	// NUMERIC: it is cast back); sumFloat a float one.
	sum := func(expr string, dst func(ag *observe.Aggregate) any) {
		col(`CAST(COALESCE(SUM(`+expr+`), 0) AS BIGINT)`, func(ag *observe.Aggregate) []any { return []any{dst(ag)} })
	}
	sumFloat := func(expr string, dst func(ag *observe.Aggregate) any) {
		col(`COALESCE(SUM(`+expr+`), 0)`, func(ag *observe.Aggregate) []any { return []any{dst(ag)} })
	}
	count := func(cond string, dst func(ag *observe.Aggregate) any) {
		sum(`CASE WHEN `+cond+` THEN 1 ELSE 0 END`, dst)
	}
	m := a.Measures
	if byValue {
		sumFloat(`fv.fv_score * fv.fv_weight`, func(ag *observe.Aggregate) any { return &ag.FeedbackWeight })
		m = 0
	}
	if m&observe.MeasureErrors != 0 {
		count(`status >= 400`, func(ag *observe.Aggregate) any { return &ag.Errors })
	}
	if m&observe.MeasureRescued != 0 {
		count(`rescued AND fallback_index > 0`, func(ag *observe.Aggregate) any { return &ag.RescuedFallback })
		count(`rescued AND fallback_index <= 0`, func(ag *observe.Aggregate) any { return &ag.RescuedRetry })
	}
	if m&observe.MeasureCache != 0 {
		count(`cache_status = 'HIT'`, func(ag *observe.Aggregate) any { return &ag.CacheHits })
		count(`cache_status IN ('MISS', 'REFRESH')`, func(ag *observe.Aggregate) any { return &ag.CacheMisses })
		sum(`CASE WHEN cache_status = 'HIT' THEN latency_us ELSE 0 END`, func(ag *observe.Aggregate) any { return &ag.CacheHitLatency })
		sum(`CASE WHEN cache_status IN ('MISS', 'REFRESH') THEN latency_us ELSE 0 END`,
			func(ag *observe.Aggregate) any { return &ag.CacheMissLatency })
	}
	if m&observe.MeasureTokens != 0 {
		sum(`prompt_tokens`, func(ag *observe.Aggregate) any { return &ag.PromptTokens })
		sum(`completion_tokens`, func(ag *observe.Aggregate) any { return &ag.CompletionTokens })
		sum(`total_tokens`, func(ag *observe.Aggregate) any { return &ag.TotalTokens })
	}
	if m&observe.MeasureCost != 0 {
		sumFloat(`cost`, func(ag *observe.Aggregate) any { return &ag.Cost })
	}
	var pcts string
	if m&observe.MeasureLatency != 0 {
		sum(`latency_us`, func(ag *observe.Aggregate) any { return &ag.Latency })
		expr := `gw_percentiles(latency_us)`
		if d == dialectPostgres {
			expr = `CAST(percentile_disc(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY latency_us) AS TEXT)`
		}
		col(`COALESCE(`+expr+`, '')`, func(ag *observe.Aggregate) []any { return []any{&pcts} })
		post = append(post, func(ag *observe.Aggregate) error {
			return parsePercentiles(pcts, &ag.LatencyP50, &ag.LatencyP90, &ag.LatencyP99)
		})
	}
	if m&observe.MeasureUsers != 0 {
		user := `NULLIF(` + metadataValue(d, observe.UserMetadataKey, arg) + `, '')`
		col(`COUNT(DISTINCT `+user+`)`, func(ag *observe.Aggregate) []any { return []any{&ag.Users} })
		col(`COUNT(`+user+`)`, func(ag *observe.Aggregate) []any { return []any{&ag.UserRequests} })
	}
	var lastUS sql.NullInt64
	if m&observe.MeasureLastSeen != 0 {
		col(`MAX(time_us)`, func(ag *observe.Aggregate) []any { return []any{&lastUS} })
		post = append(post, func(ag *observe.Aggregate) error {
			if lastUS.Valid {
				ag.LastSeen = time.UnixMicro(lastUS.Int64).UTC()
			}
			return nil
		})
	}
	if fbMeasure {
		sum(`fb.fb_n`, func(ag *observe.Aggregate) any { return &ag.Feedbacks })
		sumFloat(`fb.fb_w`, func(ag *observe.Aggregate) any { return &ag.FeedbackWeight })
		count(`fb.fb_n > 0`, func(ag *observe.Aggregate) any { return &ag.RequestsWithFeedback })
	}
	q := `SELECT ` + strings.Join(cols, ", ") + ` FROM ` + from
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	if len(groupBy) > 0 {
		q += ` GROUP BY ` + strings.Join(groupBy, ", ")
	}
	scan := func(rows *sql.Rows, ag *observe.Aggregate) (bool, error) {
		var dst []any
		for _, f := range fill {
			dst = append(dst, f(ag)...)
		}
		if err := rows.Scan(dst...); err != nil {
			return false, err
		}
		for _, p := range post {
			if err := p(ag); err != nil {
				return false, err
			}
		}
		if byValue {
			ag.Feedbacks = ag.Requests
		}
		return ag.Requests > 0, nil
	}
	return d.rebind(q), args, scan
}

// metadataValue is the SQL expression of the value of metadata key k of
// a request log, NULL when it has none.
func metadataValue(d dialect, k string, arg func(any) string) string {
	if d == dialectPostgres {
		return `(request_logs.metadata ->> ` + arg(k) + `::text)`
	}
	if !strings.ContainsAny(k, "\"\\") {
		// A quoted label of a JSON path takes any key without a quote.
		return `json_extract(request_logs.metadata, ` + arg(`$."`+k+`"`) + `)`
	}
	return `(SELECT m.value FROM json_each(request_logs.metadata) m WHERE m.key = ` + arg(k) + `)`
}

// parsePercentiles reads p50, p90 and p99 from the text of three numbers
// ("a b c" from gw_percentiles, "{a,b,c}" from Postgres); "" is no value.
func parsePercentiles(s string, p50, p90, p99 *int64) error {
	f := strings.FieldsFunc(s, func(r rune) bool { return r == '{' || r == '}' || r == ',' || r == ' ' })
	if len(f) == 0 {
		return nil
	}
	if len(f) != 3 {
		return fmt.Errorf("latency percentiles %q", s)
	}
	for i, dst := range []*int64{p50, p90, p99} {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return fmt.Errorf("latency percentiles %q", s)
		}
		*dst = v
	}
	return nil
}
