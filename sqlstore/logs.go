package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/observe"
)

var _ observe.Store = (*Store)(nil)

// Log implements observe.Store: the record and its bodies, if it kept
// any.
func (s *Store) Log(ctx context.Context, workspaceID, id string) (*gateway.RequestLog, error) {
	q := `SELECT ` + logColumns + `, b.request, b.request_truncated, b.response, b.response_truncated
FROM request_logs LEFT JOIN request_log_bodies b ON b.log_id = request_logs.id WHERE request_logs.id = $1`
	args := []any{id}
	if workspaceID != "" {
		q += ` AND workspace_id = $2`
		args = append(args, workspaceID)
	}
	var (
		req, resp       []byte
		reqCut, respCut sql.NullBool
	)
	rec, err := scanLog(s.db.QueryRowContext(ctx, s.dialect.rebind(q), args...), &req, &reqCut, &resp, &respCut)
	if notFound(err) {
		return nil, gateway.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	rec.RequestBody, rec.RequestBodyTruncated = string(req), reqCut.Bool
	rec.ResponseBody, rec.ResponseBodyTruncated = string(resp), respCut.Bool
	return rec, nil
}

// Logs implements observe.Store with one query: the filters become
// conditions on indexed columns (time, workspace, trace id) and on the
// metadata object (json_each on SQLite, @> on Postgres), the cursor a row-value comparison
// with the record q.After names.
func (s *Store) Logs(ctx context.Context, q *observe.Query) ([]gateway.RequestLog, error) {
	where, args := logWhere(s.dialect, q)
	if q.After != "" {
		args = append(args, q.After)
		n := strconv.Itoa(len(args))
		where = append(where, `(time_us, id) < (SELECT time_us, id FROM request_logs WHERE id = $`+n+`)`)
	}
	query := `SELECT ` + logColumns + ` FROM request_logs`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, ` AND `)
	}
	query += ` ORDER BY time_us DESC, id DESC`
	if q.Limit > 0 {
		query += ` LIMIT ` + strconv.Itoa(q.Limit)
	}
	rows, err := s.db.QueryContext(ctx, s.dialect.rebind(query), args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading request logs: %w", err)
	}
	defer rows.Close()
	var out []gateway.RequestLog
	for rows.Next() {
		rec, err := scanLog(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: reading request logs: %w", err)
	}
	return out, nil
}

// logWhere returns the conditions (joined by AND) and arguments that
// select what q does, paging aside. Placeholders are numbered from $1 in
// the order of args.
func logWhere(d dialect, q *observe.Query) ([]string, []any) {
	var (
		where []string
		args  []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	in := func(column string, vals []string) {
		if len(vals) == 0 {
			return
		}
		marks := make([]string, len(vals))
		for i, v := range vals {
			marks[i] = arg(v)
		}
		where = append(where, column+` IN (`+strings.Join(marks, ", ")+`)`)
	}
	if q.WorkspaceID != "" {
		where = append(where, `workspace_id = `+arg(q.WorkspaceID))
	}
	if !q.Start.IsZero() {
		where = append(where, `time_us >= `+arg(q.Start.UnixMicro()))
	}
	if !q.End.IsZero() {
		where = append(where, `time_us <= `+arg(q.End.UnixMicro()))
	}
	if len(q.StatusCodes) > 0 {
		marks := make([]string, len(q.StatusCodes))
		for i, c := range q.StatusCodes {
			marks[i] = arg(c)
		}
		where = append(where, `status IN (`+strings.Join(marks, ", ")+`)`)
	}
	if len(q.Models) > 0 {
		var ors []string
		for _, m := range q.Models {
			ors = append(ors, `(provider = `+arg(m.Provider)+` AND model = `+arg(m.Model)+`)`)
		}
		where = append(where, `(`+strings.Join(ors, ` OR `)+`)`)
	}
	in("key_id", q.APIKeyIDs)
	in("virtual_key", q.VirtualKeys)
	in("config_id", q.Configs)
	in("trace_id", q.TraceIDs)
	switch {
	case len(q.Metadata) == 0:
	case d == dialectPostgres:
		where = append(where, `metadata @> `+arg(metadataJSON(q.Metadata))+`::jsonb`)
	default:
		for _, k := range slices.Sorted(maps.Keys(q.Metadata)) {
			where = append(where, `EXISTS (SELECT 1 FROM json_each(request_logs.metadata) m WHERE m.key = `+
				arg(k)+` AND m.value = `+arg(q.Metadata[k])+`)`)
		}
	}
	if w := promptWhere(d, q, arg); w != "" {
		where = append(where, w)
	}
	for _, r := range []struct {
		column string
		r      observe.Range[int64]
	}{{"prompt_tokens", q.PromptTokens}, {"completion_tokens", q.CompletionTokens}, {"total_tokens", q.TotalTokens}} {
		if r.r.HasMin {
			where = append(where, r.column+` >= `+arg(r.r.Min))
		}
		if r.r.HasMax {
			where = append(where, r.column+` <= `+arg(r.r.Max))
		}
	}
	if q.Cost.HasMin {
		where = append(where, `cost >= `+arg(q.Cost.Min))
	}
	if q.Cost.HasMax {
		where = append(where, `cost <= `+arg(q.Cost.Max))
	}
	return where, args
}

// scanLog reads one row of logColumns, then of more; a missing row is
// sql.ErrNoRows, unwrapped.
func scanLog(row scanner, more ...any) (*gateway.RequestLog, error) {
	var (
		r                         gateway.RequestLog
		timeUS, latencyUS, ttfbUS int64
		cacheStatus, meta, hooks  string
		skipped, tripped          string
	)
	if err := row.Scan(append([]any{&r.ID, &timeUS, &r.TraceID, &r.WorkspaceID, &r.KeyID, &r.VirtualKey, &r.ConfigID, &r.Provider,
		&r.Model, &r.Method, &r.Path, &r.Query, &r.Status, &latencyUS, &ttfbUS, &r.BytesIn, &r.BytesOut,
		&r.PromptTokens, &r.CompletionTokens, &r.TotalTokens, &r.CachedPromptTokens, &r.Cost, &r.CostUnknown,
		&cacheStatus, &r.Attempts, &r.FallbackIndex, &r.Rescued, &r.ErrorCode, &r.Aborted, &meta, &r.Guardrails, &hooks,
		&r.Ingress, &skipped, &tripped}, more...)...); err != nil {
		if notFound(err) {
			return nil, err
		}
		return nil, fmt.Errorf("sqlstore: reading request logs: %w", err)
	}
	r.Time = time.UnixMicro(timeUS).UTC()
	r.Latency, r.TTFB = time.Duration(latencyUS)*time.Microsecond, time.Duration(ttfbUS)*time.Microsecond
	r.CacheStatus = gateway.CacheStatus(cacheStatus)
	if hooks != "" {
		r.HookResults = json.RawMessage(hooks)
	}
	for _, t := range []struct {
		name, json string
		keys       *[]string
	}{{"skipped_targets", skipped, &r.SkippedTargets}, {"tripped_targets", tripped, &r.TrippedTargets}} {
		if t.json == "" {
			continue
		}
		if err := json.Unmarshal([]byte(t.json), t.keys); err != nil {
			return nil, fmt.Errorf("sqlstore: request log %s: %s: %w", r.ID, t.name, err)
		}
	}
	if meta != "{}" {
		if err := json.Unmarshal([]byte(meta), &r.Metadata); err != nil {
			return nil, fmt.Errorf("sqlstore: request log %s: metadata: %w", r.ID, err)
		}
	}
	return &r, nil
}

// logDeleteBatch is how many request logs one statement of DeleteLogsBefore
// deletes, so that retention never holds the database for long.
const logDeleteBatch = 5000

// DeleteLogsBefore deletes the request logs older than t, in batches of
// 5,000 rows, and returns how many it deleted. It deletes too the stored
// responses and the log exports created before t (but for one running), and on SQLite the
// latency digests and daily rollups of the hours and days before t's.
// Options.LogRetention runs it in the background; a host may call it
// itself.
func (s *Store) DeleteLogsBefore(ctx context.Context, t time.Time) (int64, error) {
	var total int64
	for {
		res, err := s.db.ExecContext(ctx, s.dialect.rebind(`DELETE FROM request_logs WHERE id IN
	(SELECT id FROM request_logs WHERE time_us < $1 LIMIT `+strconv.Itoa(logDeleteBatch)+`)`), t.UnixMicro())
		if err != nil {
			return total, fmt.Errorf("sqlstore: deleting old request logs: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, fmt.Errorf("sqlstore: deleting old request logs: %w", err)
		}
		total += n
		if n < logDeleteBatch {
			break
		}
	}
	// Stored responses live as long as request logs.
	if _, err := s.db.ExecContext(ctx, s.dialect.rebind(`DELETE FROM responses WHERE created_us < $1`), t.UnixMicro()); err != nil {
		return total, fmt.Errorf("sqlstore: deleting old responses: %w", err)
	}
	// Exports hold copies of records: those made before t go too, but for
	// one still running.
	if _, err := s.db.ExecContext(ctx, s.dialect.rebind(`DELETE FROM log_exports WHERE created_us < $1 AND status <> $2`),
		t.UnixMicro(), string(observe.ExportInProgress)); err != nil {
		return total, fmt.Errorf("sqlstore: deleting old log exports: %w", err)
	}
	if s.dialect == dialectSQLite && total > 0 {
		// The latency digests of the hours now gone (those of the hour
		// t falls in are stale, and written again), and the daily
		// rollups of the days gone; t's day is to be done again.
		hour, day := t.UnixMicro()/hourUS*hourUS, t.UnixMicro()/dayUS*dayUS
		for _, q := range []struct {
			sql   string
			bound int64
		}{
			{`DELETE FROM log_latency_hours WHERE hour_us < ?1`, hour},
			{`DELETE FROM log_days_done WHERE day_us <= ?1`, day},
			{`DELETE FROM log_days_todo WHERE day_us < ?1`, day},
			{`INSERT OR IGNORE INTO log_days_todo (day_us) VALUES (?1)`, day},
			{`DELETE FROM log_days WHERE hour_us < ?1`, day},
			{`DELETE FROM log_metadata_days WHERE hour_us < ?1`, day},
			{`DELETE FROM log_latency_days WHERE hour_us < ?1`, day},
		} {
			if _, err := s.db.ExecContext(ctx, q.sql, q.bound); err != nil {
				return total, fmt.Errorf("sqlstore: deleting old request logs: %w", err)
			}
		}
	}
	return total, nil
}

// retentionLoop deletes request logs older than retention every interval
// until ctx ends, logging failures.
func (s *Store) retentionLoop(ctx context.Context, retention, interval time.Duration) {
	defer close(s.retentionDone)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := s.DeleteLogsBefore(ctx, time.Now().Add(-retention)); err != nil && ctx.Err() == nil {
			s.errLog.ErrorContext(ctx, "sqlstore: request log retention failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
