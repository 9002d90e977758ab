package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/wire"
)

// logColumns are the columns of a request log, in the order AddLogs
// writes and scanLog reads them.
const logColumns = `id, time_us, trace_id, workspace_id, key_id, virtual_key, config_id, provider, model, method, path, query,
	status, latency_us, ttfb_us, bytes_in, bytes_out, prompt_tokens, completion_tokens, total_tokens, cached_prompt_tokens,
	cost, cost_unknown, cache_status, attempts, fallback_index, rescued, error_code, aborted, metadata, guardrails, hook_results,
	ingress, skipped_targets, tripped_targets`

// logColumnCount is the number of logColumns.
const logColumnCount = 35

// sqliteLogRows is how many ids unstoredLogs looks up in one query.
const sqliteLogRows = 64

// AddLogs implements observe.Store: the records in one transaction, a
// row at a time bound through SQLite's own interface on SQLite (see
// addLogsSQLite) and in one INSERT of arrays
// (unnest) on Postgres; the bodies of those that kept some (gateway
// Options.LogBodies) in request_log_bodies. A record whose id is already
// stored is skipped, so that a batch retried after a lost answer is not
// stored twice. On SQLite the batch is added to the hourly rollups of the
// analytics in the same transaction (logsrollup.go). Request logs do not
// move the generation: they are not part of the snapshot.
//
// On SQLite the transaction commits with synchronous=NORMAL rather than
// the store's FULL: it does not wait for the disk (an fsync costs about
// the CPU of storing 15 records, and more time), so that the last request
// logs committed before a crash of the machine (not of the process) may
// be lost, as records the gateway drops when its queue is full are. The
// database stays consistent, and the store's other writes keep FULL.
func (s *Store) AddLogs(ctx context.Context, recs []*gateway.RequestLog) error {
	if len(recs) == 0 {
		return nil
	}
	if err := s.addLogs(ctx, recs); err != nil {
		return fmt.Errorf("sqlstore: storing request logs: %w", err)
	}
	return nil
}

func (s *Store) addLogs(ctx context.Context, recs []*gateway.RequestLog) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if s.dialect == dialectSQLite {
		if _, err := conn.ExecContext(ctx, `PRAGMA synchronous = NORMAL`); err != nil {
			return err
		}
		defer func() {
			if _, err := conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA synchronous = FULL`); err != nil {
				// A connection that cannot be set back is not used again.
				conn.Raw(func(any) error { return driver.ErrBadConn })
			}
		}()
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var today int64 // the day rollUpLogs put on log_days_todo
	if s.dialect == dialectSQLite {
		recs = inKeyOrder(recs)
		var stored int
		if stored, err = s.addLogsSQLite(conn, recs); err == nil && stored < len(recs) {
			// Some were stored before: a batch retried after a lost
			// answer. Only the others go in, and in the rollups.
			tx.Rollback()
			if recs, err = s.unstoredLogs(ctx, conn, recs); err != nil {
				return err
			}
			if tx, err = conn.BeginTx(ctx, nil); err != nil {
				return err
			}
			defer tx.Rollback()
			_, err = s.addLogsSQLite(conn, recs)
		}
		if err == nil {
			today, err = s.rollUpLogs(ctx, tx, recs)
		}
	} else {
		err = s.addLogsPostgres(ctx, tx, recs)
	}
	if err == nil {
		err = s.addLogBodies(ctx, tx, recs)
	}
	if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if today != 0 {
		s.todoDay.Store(today)
	}
	return nil
}

// inKeyOrder returns recs, or a copy of them, in the order of
// request_logs' key (time_us, id). A gateway's batch comes in the order
// its requests ended, a few places off the order they began in, which is
// the order of their times and ids. In key order every row and index
// entry of the batch goes at the end of its b-tree, where SQLite adds a
// page rather than splitting a full one (balance_quick); out of order,
// a batch of 600 cost about a fifth more.
func inKeyOrder(recs []*gateway.RequestLog) []*gateway.RequestLog {
	less := func(a, b *gateway.RequestLog) int {
		if c := cmp.Compare(a.Time.UnixMicro(), b.Time.UnixMicro()); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	}
	if slices.IsSortedFunc(recs, less) {
		return recs
	}
	recs = slices.Clone(recs)
	slices.SortFunc(recs, less)
	return recs
}

// logInsertRows is how many records one run of the multi-row INSERT of
// addLogsSQLite stores. Each run of a statement opens and closes a
// cursor on the table and each index; eight records a run spread that
// over eight.
const logInsertRows = 8

// logFields returns the values of r's logColumns by parameter number
// (from 1): the texts, the integers (booleans as 0 and 1), and cost's,
// number 22.
func logFields(r *gateway.RequestLog) (texts [19]logText, ints [15]logInt, cost float64) {
	texts = [...]logText{{1, r.ID}, {3, r.TraceID}, {4, r.WorkspaceID}, {5, r.KeyID}, {6, r.VirtualKey}, {7, r.ConfigID},
		{8, r.Provider}, {9, r.Model}, {10, r.Method}, {11, r.Path}, {12, r.Query}, {24, string(r.CacheStatus)},
		{28, r.ErrorCode}, {30, metadataJSON(r.Metadata)}, {31, r.Guardrails}, {32, string(r.HookResults)},
		{33, r.Ingress}, {34, targetsJSON(r.SkippedTargets)}, {35, targetsJSON(r.TrippedTargets)}}
	ints = [...]logInt{{2, r.Time.UnixMicro()}, {13, int64(r.Status)}, {14, r.Latency.Microseconds()},
		{15, r.TTFB.Microseconds()}, {16, r.BytesIn}, {17, r.BytesOut}, {18, r.PromptTokens}, {19, r.CompletionTokens},
		{20, r.TotalTokens}, {21, r.CachedPromptTokens}, {23, b2i(r.CostUnknown)}, {25, int64(r.Attempts)},
		{26, int64(r.FallbackIndex)}, {27, b2i(r.Rescued)}, {29, b2i(r.Aborted)}}
	return texts, ints, r.Cost
}

// logCostParam is the parameter number of a record's cost.
const logCostParam = 22

// logText is a text value of a record and its parameter number.
type logText struct {
	i int
	v string
}

// logInt is an integer value of a record and its parameter number.
type logInt struct {
	i int
	v int64
}

// unstoredLogs returns the records of recs whose ids are not stored, and
// each once.
func (s *Store) unstoredLogs(ctx context.Context, conn *sql.Conn, recs []*gateway.RequestLog) ([]*gateway.RequestLog, error) {
	seen := make(map[string]bool, len(recs))
	for i := 0; i < len(recs); i += sqliteLogRows {
		chunk := recs[i:min(i+sqliteLogRows, len(recs))]
		args := make([]any, len(chunk))
		marks := make([]string, len(chunk))
		for j, r := range chunk {
			args[j], marks[j] = r.ID, "?"
		}
		rows, err := conn.QueryContext(ctx, `SELECT id FROM request_logs WHERE id IN (`+strings.Join(marks, ", ")+`)`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, err
			}
			seen[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	var out []*gateway.RequestLog
	for _, r := range recs {
		if !seen[r.ID] {
			seen[r.ID] = true
			out = append(out, r)
		}
	}
	return out, nil
}

// logInsertsSQLite are the INSERTs of addLogsSQLite, of logInsertRows
// rows and of one, in the order it uses them.
var logInsertsSQLite = [...]struct {
	rows int
	sql  string
}{{logInsertRows, logInsertSQLite(logInsertRows)}, {1, logInsertSQLite(1)}}

// eachLogInsert calls insert with each of logInsertsSQLite that recs
// fill, and the records it stores: whole groups of logInsertRows
// records through the multi-row statement, the rest one at a time.
func eachLogInsert(recs []*gateway.RequestLog, insert func(sql string, rows int, recs []*gateway.RequestLog) error) error {
	for _, ins := range logInsertsSQLite {
		n := len(recs) / ins.rows * ins.rows
		if n == 0 {
			continue
		}
		if err := insert(ins.sql, ins.rows, recs[:n]); err != nil {
			return err
		}
		recs = recs[n:]
	}
	return nil
}

// logInsertSQLite returns an INSERT of rows rows. OR IGNORE, where ON
// CONFLICT DO NOTHING would do the same, tells SQLite that the statement
// never aborts halfway, which spares it a statement journal: a copy of
// every page it changes, a tenth of the time AddLogs took.
func logInsertSQLite(rows int) string {
	return strings.ReplaceAll(`INSERT OR IGNORE INTO request_logs (`+logColumns+`) VALUES `+valueRows(rows, logColumnCount), "$", "?")
}

// metadataJSON returns m as a JSON object as json.Marshal writes it
// (keys in order), "{}" when it is empty, without json.Marshal's
// reflection: half of a record's binding when it has metadata.
func metadataJSON(m map[string]string) string {
	if len(m) == 0 {
		return "{}"
	}
	n := 2
	for k, v := range m {
		n += len(k) + len(v) + 6
	}
	return string(wire.AppendStringMap(make([]byte, 0, n), m))
}

// targetsJSON returns the breaker keys of RequestLog.SkippedTargets or
// TrippedTargets as a JSON array, "" when there are none (most records).
func targetsJSON(keys []string) string { return jsonOf(keys, len(keys), "") }

// jsonOf returns v, a map or slice of strings of n elements, in JSON;
// empty when n is 0.
func jsonOf(v any, n int, empty string) string {
	if n == 0 {
		return empty
	}
	b, err := json.Marshal(v)
	if err != nil { // maps and slices of strings always encode
		return empty
	}
	return string(b)
}

// logInsertPostgres inserts any number of records in one statement, a
// column per array parameter: one plan, one round trip.
const logInsertPostgres = `INSERT INTO request_logs (` + logColumns + `)
SELECT id, time_us, trace_id, workspace_id, key_id, virtual_key, config_id, provider, model, method, path, query,
	status, latency_us, ttfb_us, bytes_in, bytes_out, prompt_tokens, completion_tokens, total_tokens, cached_prompt_tokens,
	cost, cost_unknown, cache_status, attempts, fallback_index, rescued, error_code, aborted, metadata::jsonb, guardrails, hook_results,
	ingress, skipped_targets, tripped_targets
FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
	$10::text[], $11::text[], $12::text[], $13::bigint[], $14::bigint[], $15::bigint[], $16::bigint[], $17::bigint[],
	$18::bigint[], $19::bigint[], $20::bigint[], $21::bigint[], $22::float8[], $23::bool[], $24::text[], $25::bigint[],
	$26::bigint[], $27::bool[], $28::text[], $29::bool[], $30::text[], $31::text[], $32::text[],
	$33::text[], $34::text[], $35::text[])
	AS t(id, time_us, trace_id, workspace_id, key_id, virtual_key, config_id, provider, model, method, path, query,
	status, latency_us, ttfb_us, bytes_in, bytes_out, prompt_tokens, completion_tokens, total_tokens, cached_prompt_tokens,
	cost, cost_unknown, cache_status, attempts, fallback_index, rescued, error_code, aborted, metadata, guardrails, hook_results,
	ingress, skipped_targets, tripped_targets)
ON CONFLICT DO NOTHING`

// addLogsPostgres inserts recs with logInsertPostgres: one array per
// column, in the order of logColumns.
func (s *Store) addLogsPostgres(ctx context.Context, tx *sql.Tx, recs []*gateway.RequestLog) error {
	n := len(recs)
	text := func(f func(r *gateway.RequestLog) string) []string {
		a := make([]string, n)
		for i, r := range recs {
			a[i] = f(r)
		}
		return a
	}
	integer := func(f func(r *gateway.RequestLog) int64) []int64 {
		a := make([]int64, n)
		for i, r := range recs {
			a[i] = f(r)
		}
		return a
	}
	boolean := func(f func(r *gateway.RequestLog) bool) []bool {
		a := make([]bool, n)
		for i, r := range recs {
			a[i] = f(r)
		}
		return a
	}
	cost := make([]float64, n)
	for i, r := range recs {
		cost[i] = r.Cost
	}
	_, err := s.logStmt(ctx, tx, logInsertPostgres).ExecContext(ctx,
		text(func(r *gateway.RequestLog) string { return r.ID }),
		integer(func(r *gateway.RequestLog) int64 { return r.Time.UnixMicro() }),
		text(func(r *gateway.RequestLog) string { return r.TraceID }),
		text(func(r *gateway.RequestLog) string { return r.WorkspaceID }),
		text(func(r *gateway.RequestLog) string { return r.KeyID }),
		text(func(r *gateway.RequestLog) string { return r.VirtualKey }),
		text(func(r *gateway.RequestLog) string { return r.ConfigID }),
		text(func(r *gateway.RequestLog) string { return r.Provider }),
		text(func(r *gateway.RequestLog) string { return r.Model }),
		text(func(r *gateway.RequestLog) string { return r.Method }),
		text(func(r *gateway.RequestLog) string { return r.Path }),
		text(func(r *gateway.RequestLog) string { return r.Query }),
		integer(func(r *gateway.RequestLog) int64 { return int64(r.Status) }),
		integer(func(r *gateway.RequestLog) int64 { return r.Latency.Microseconds() }),
		integer(func(r *gateway.RequestLog) int64 { return r.TTFB.Microseconds() }),
		integer(func(r *gateway.RequestLog) int64 { return r.BytesIn }),
		integer(func(r *gateway.RequestLog) int64 { return r.BytesOut }),
		integer(func(r *gateway.RequestLog) int64 { return r.PromptTokens }),
		integer(func(r *gateway.RequestLog) int64 { return r.CompletionTokens }),
		integer(func(r *gateway.RequestLog) int64 { return r.TotalTokens }),
		integer(func(r *gateway.RequestLog) int64 { return r.CachedPromptTokens }),
		cost,
		boolean(func(r *gateway.RequestLog) bool { return r.CostUnknown }),
		text(func(r *gateway.RequestLog) string { return string(r.CacheStatus) }),
		integer(func(r *gateway.RequestLog) int64 { return int64(r.Attempts) }),
		integer(func(r *gateway.RequestLog) int64 { return int64(r.FallbackIndex) }),
		boolean(func(r *gateway.RequestLog) bool { return r.Rescued }),
		text(func(r *gateway.RequestLog) string { return r.ErrorCode }),
		boolean(func(r *gateway.RequestLog) bool { return r.Aborted }),
		text(func(r *gateway.RequestLog) string { return metadataJSON(r.Metadata) }),
		text(func(r *gateway.RequestLog) string { return r.Guardrails }),
		text(func(r *gateway.RequestLog) string { return string(r.HookResults) }),
		text(func(r *gateway.RequestLog) string { return r.Ingress }),
		text(func(r *gateway.RequestLog) string { return targetsJSON(r.SkippedTargets) }),
		text(func(r *gateway.RequestLog) string { return targetsJSON(r.TrippedTargets) }))
	return err
}

// logBodiesInsert stores one record's bodies.
const logBodiesInsert = `INSERT INTO request_log_bodies (log_id, request, request_truncated, response, response_truncated)
VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`

// addLogBodies stores the bodies of the records of recs that kept some,
// a prepared statement per record: bodies are kept on request, and are
// large next to the rest of a record.
func (s *Store) addLogBodies(ctx context.Context, tx *sql.Tx, recs []*gateway.RequestLog) error {
	var st txStmt
	for _, r := range recs {
		if r.RequestBody == "" && r.ResponseBody == "" && !r.RequestBodyTruncated && !r.ResponseBodyTruncated {
			continue
		}
		if st == nil {
			st = s.logStmt(ctx, tx, logBodiesInsert)
		}
		if _, err := st.ExecContext(ctx, r.ID, []byte(r.RequestBody), r.RequestBodyTruncated, []byte(r.ResponseBody),
			r.ResponseBodyTruncated); err != nil {
			return err
		}
	}
	return nil
}

// txStmt is a statement of a transaction, prepared for it or taken from
// the store's prepared ones.
type txStmt interface {
	QueryContext(ctx context.Context, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, args ...any) (sql.Result, error)
}

// logStmt returns query (written with $n placeholders) for tx: one of
// the statements AddLogs makes again and again is taken from those Open
// prepared for the store (the SQL parser is a real cost on SQLite), and
// prepared on tx's connection the first time that connection runs it;
// any other runs as a statement of its own.
//
// The store's statements are prepared by Open, never here: preparing a
// statement of the pool takes a second connection of it, and a caller
// holding one (and SQLite's write lock) while the others wait for that
// lock would wait for a connection none of them gives back.
func (s *Store) logStmt(ctx context.Context, tx *sql.Tx, query string) txStmt {
	if st := s.stmts[query]; st != nil {
		return tx.StmtContext(ctx, st)
	}
	return rawStmt{tx, s.dialect.rebind(query)}
}

// prepareLogStmts prepares the statements of logStmt for the store's
// dialect, and the prompts' reads (promptRecordSQL, promptVersionSQL);
// Open calls it once the schema is in place.
func (s *Store) prepareLogStmts(ctx context.Context) error {
	var queries []string
	if s.dialect == dialectSQLite {
		queries = append(queries, hourUpserts...)
		queries = append(queries, metaUpserts...)
	} else {
		queries = append(queries, logInsertPostgres)
	}
	queries = append(queries, logBodiesInsert, promptRecordSQL, promptVersionSQL)
	s.stmts = make(map[string]*sql.Stmt, len(queries))
	for _, q := range queries {
		st, err := s.db.PrepareContext(ctx, s.dialect.rebind(q))
		if err != nil {
			return fmt.Errorf("sqlstore: preparing the statements: %w", err)
		}
		s.stmts[q] = st
	}
	return nil
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
