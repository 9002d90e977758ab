package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	gateway "github.com/modelgateway/gateway"
)

var _ gateway.LogStore = (*Store)(nil)

// logColumns are the columns of a request log, in the order AddLogs
// writes and scanLog reads them.
const logColumns = `id, time_us, trace_id, workspace_id, key_id, virtual_key, config_id, provider, model, method, path, query,
	status, latency_us, ttfb_us, bytes_in, bytes_out, prompt_tokens, completion_tokens, total_tokens, cached_prompt_tokens,
	cost, cost_unknown, cache_status, attempts, fallback_index, rescued, error_code, aborted, metadata`

// logInsertRows is how many records one INSERT of AddLogs carries: one
// round trip for 50 rows, 1,500 parameters (SQLite allows 32,766).
const logInsertRows = 50

// AddLogs implements gateway.LogStore: the records in one transaction,
// up to 50 rows per statement on Postgres, one per prepared statement on
// SQLite. A record whose id is already stored is
// skipped, so that a batch retried after a lost answer is not stored
// twice. Request logs do not move the generation: they are not part of
// the snapshot.
func (s *Store) AddLogs(ctx context.Context, recs []*gateway.RequestLog) error {
	if len(recs) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlstore: storing request logs: %w", err)
	}
	defer tx.Rollback()
	var (
		args []any
		meta []any // log_id, key, value triples
	)
	// Postgres gains from fewer round trips; embedded SQLite has none to
	// save, and runs a prepared one-row statement fastest.
	perStmt := logInsertRows
	if s.dialect == dialectSQLite {
		perStmt = 1
	}
	for len(recs) > 0 {
		chunk := recs[:min(len(recs), perStmt)]
		recs = recs[len(chunk):]
		args = args[:0]
		for _, r := range chunk {
			md, err := json.Marshal(r.Metadata)
			if err != nil || r.Metadata == nil {
				md = []byte("{}")
			}
			args = append(args, r.ID, r.Time.UnixMicro(), r.TraceID, r.WorkspaceID, r.KeyID, r.VirtualKey, r.ConfigID,
				r.Provider, r.Model, r.Method, r.Path, r.Query, r.Status, r.Latency.Microseconds(), r.TTFB.Microseconds(),
				r.BytesIn, r.BytesOut, r.PromptTokens, r.CompletionTokens, r.TotalTokens, r.CachedPromptTokens,
				r.Cost, r.CostUnknown, string(r.CacheStatus), r.Attempts, r.FallbackIndex, r.Rescued, r.ErrorCode, r.Aborted,
				string(md))
		}
		// The ids this statement stored (not those stored before): only
		// their metadata is written.
		rows, err := s.logStmt(ctx, tx, `INSERT INTO request_logs (`+logColumns+`) VALUES `+
			valueRows(len(chunk), 30)+` ON CONFLICT (id) DO NOTHING RETURNING id`, len(chunk) == perStmt).QueryContext(ctx, args...)
		if err != nil {
			return fmt.Errorf("sqlstore: storing request logs: %w", err)
		}
		stored := make(map[string]bool, len(chunk))
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return fmt.Errorf("sqlstore: storing request logs: %w", err)
			}
			stored[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("sqlstore: storing request logs: %w", err)
		}
		for _, r := range chunk {
			if stored[r.ID] {
				for k, v := range r.Metadata {
					meta = append(meta, r.ID, k, v)
				}
			}
		}
	}
	for len(meta) > 0 {
		n := min(len(meta)/3, 300)
		if _, err := s.logStmt(ctx, tx, `INSERT INTO log_metadata (log_id, key, value) VALUES `+valueRows(n, 3), n == 300).ExecContext(ctx,
			meta[:3*n]...); err != nil {
			return fmt.Errorf("sqlstore: storing request logs: %w", err)
		}
		meta = meta[3*n:]
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlstore: storing request logs: %w", err)
	}
	return nil
}

// txStmt is a statement of a transaction, prepared for it or taken from
// the store's prepared ones.
type txStmt interface {
	QueryContext(ctx context.Context, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, args ...any) (sql.Result, error)
}

// logStmt returns query (written with $n placeholders) for tx: when keep
// says it is one of the full-size statements AddLogs makes again and
// again, prepared once for the store (the SQL parser is a real cost on
// SQLite), otherwise as a statement of its own.
func (s *Store) logStmt(ctx context.Context, tx *sql.Tx, query string, keep bool) txStmt {
	query = s.dialect.rebind(query)
	if keep {
		s.stmtMu.Lock()
		st, ok := s.stmts[query]
		if !ok {
			var err error
			if st, err = s.db.PrepareContext(ctx, query); err == nil {
				if s.stmts == nil {
					s.stmts = make(map[string]*sql.Stmt)
				}
				s.stmts[query] = st
			}
		}
		s.stmtMu.Unlock()
		if st != nil {
			return tx.StmtContext(ctx, st)
		}
	}
	return rawStmt{tx, query}
}

// rawStmt is a query run on its transaction unprepared.
type rawStmt struct {
	tx    *sql.Tx
	query string
}

func (r rawStmt) QueryContext(ctx context.Context, args ...any) (*sql.Rows, error) {
	return r.tx.QueryContext(ctx, r.query, args...)
}

func (r rawStmt) ExecContext(ctx context.Context, args ...any) (sql.Result, error) {
	return r.tx.ExecContext(ctx, r.query, args...)
}

// valueRows returns the VALUES list of n rows of cols placeholders each,
// numbered from $1.
func valueRows(n, cols int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for j := range cols {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(i*cols + j + 1))
		}
		b.WriteByte(')')
	}
	return b.String()
}

// Log implements gateway.LogStore.
func (s *Store) Log(ctx context.Context, workspaceID, id string) (*gateway.RequestLog, error) {
	q := `SELECT ` + logColumns + ` FROM request_logs WHERE id = $1`
	args := []any{id}
	if workspaceID != "" {
		q += ` AND workspace_id = $2`
		args = append(args, workspaceID)
	}
	rec, err := scanLog(s.db.QueryRowContext(ctx, s.dialect.rebind(q), args...))
	if notFound(err) {
		return nil, gateway.ErrNotFound
	}
	return rec, err
}

// Logs implements gateway.LogStore with one query: the filters become
// conditions on indexed columns (time, workspace, trace id) and on
// log_metadata for each metadata pair, the cursor a row-value comparison
// with the record q.After names.
func (s *Store) Logs(ctx context.Context, q *gateway.LogQuery) ([]gateway.RequestLog, error) {
	where, args := logWhere(q)
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
func logWhere(q *gateway.LogQuery) ([]string, []any) {
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
	for k, v := range q.Metadata {
		where = append(where, `EXISTS (SELECT 1 FROM log_metadata m WHERE m.log_id = request_logs.id AND m.key = `+
			arg(k)+` AND m.value = `+arg(v)+`)`)
	}
	for _, r := range []struct {
		column string
		r      gateway.Range[int64]
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

// scanLog reads one row of logColumns; a missing row is sql.ErrNoRows,
// unwrapped.
func scanLog(row scanner) (*gateway.RequestLog, error) {
	var (
		r                         gateway.RequestLog
		timeUS, latencyUS, ttfbUS int64
		cacheStatus, meta         string
	)
	if err := row.Scan(&r.ID, &timeUS, &r.TraceID, &r.WorkspaceID, &r.KeyID, &r.VirtualKey, &r.ConfigID, &r.Provider,
		&r.Model, &r.Method, &r.Path, &r.Query, &r.Status, &latencyUS, &ttfbUS, &r.BytesIn, &r.BytesOut,
		&r.PromptTokens, &r.CompletionTokens, &r.TotalTokens, &r.CachedPromptTokens, &r.Cost, &r.CostUnknown,
		&cacheStatus, &r.Attempts, &r.FallbackIndex, &r.Rescued, &r.ErrorCode, &r.Aborted, &meta); err != nil {
		if notFound(err) {
			return nil, err
		}
		return nil, fmt.Errorf("sqlstore: reading request logs: %w", err)
	}
	r.Time = time.UnixMicro(timeUS).UTC()
	r.Latency, r.TTFB = time.Duration(latencyUS)*time.Microsecond, time.Duration(ttfbUS)*time.Microsecond
	r.CacheStatus = gateway.CacheStatus(cacheStatus)
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
// 5,000 rows, and returns how many it deleted. Options.LogRetention runs
// it in the background; a host may call it itself.
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
			return total, nil
		}
	}
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
