package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	gateway "github.com/modelgateway/gateway"
)

// SQLite's daily rollups (log_days, log_metadata_days, log_latency_days;
// see migration 0007) are the hourly ones summed by day, written by
// CompactLogs for the days that ended, never by AddLogs. A day's rows are
// read only while its row of log_days_done stands; AddLogs and retention
// delete that row when they change the day. log_days_todo names the days
// CompactLogs has work on: AddLogs adds the days of its records, and
// retention the day it cuts into, so that a pass of CompactLogs reads the
// rollup rows of those days only, however many the store holds.

// dayUS is a day in Unix microseconds.
const dayUS = 24 * hourUS

// CompactLogs writes what the store derives from the request logs of
// the past, for the analytics routes: the latency digests of the hours
// that ended more than a minute ago and have none, or a stale one
// (records were added to the hour, late or by POST /logs, or deleted from
// it since), then the daily rollups of the days that ended. A SQLite
// store does this by itself once a minute; a host calls it to have them
// now (after loading records in bulk, say). Until then the figures are
// the same, read from the hourly rollups and the records. On Postgres it
// does nothing: its analytics read the records.
func (s *Store) CompactLogs(ctx context.Context) error {
	if s.dialect != dialectSQLite {
		return nil
	}
	now := time.Now().Add(-digestDelay).UnixMicro()
	closed := now/hourUS*hourUS - hourUS // the last hour that ended digestDelay ago
	ended := now / dayUS * dayUS         // days before this one ended digestDelay ago
	days, err := s.todoDays(ctx)
	if err != nil {
		return fmt.Errorf("sqlstore: compacting request logs: %w", err)
	}
	for _, d := range days {
		if err := s.digestDay(ctx, d, closed); err != nil {
			return fmt.Errorf("sqlstore: digesting latencies of %s: %w", time.UnixMicro(d).UTC().Format(time.DateOnly), err)
		}
		if d < ended {
			if err := s.compactDay(ctx, d); err != nil {
				return fmt.Errorf("sqlstore: daily rollups of %s: %w", time.UnixMicro(d).UTC().Format(time.DateOnly), err)
			}
		}
	}
	return nil
}

// todoDays returns the days of log_days_todo, oldest first.
func (s *Store) todoDays(ctx context.Context) ([]int64, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT day_us FROM log_days_todo ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var days []int64
	for rows.Next() {
		var d int64
		if err := rows.Scan(&d); err != nil {
			return nil, err
		}
		days = append(days, d)
	}
	return days, rows.Err()
}

// digestDay writes the digests of the hours of the day starting at day,
// up to closed, that have none or a stale one.
func (s *Store) digestDay(ctx context.Context, day, closed int64) error {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT h.hour_us FROM log_hours h LEFT JOIN log_latency_hours d
	ON d.workspace_id = h.workspace_id AND d.hour_us = h.hour_us AND d.status = h.status AND d.provider = h.provider AND d.model = h.model
WHERE h.hour_us >= ?1 AND h.hour_us < ?2 AND h.hour_us <= ?3
	AND (d.requests IS NULL OR d.requests <> h.requests OR d.latency_us <> h.latency_us)
ORDER BY 1`, day, day+dayUS, closed)
	if err != nil {
		return err
	}
	var hours []int64
	for rows.Next() {
		var h int64
		if err := rows.Scan(&h); err != nil {
			rows.Close()
			return err
		}
		hours = append(hours, h)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, h := range hours {
		if err := s.digestHour(ctx, h); err != nil {
			return err
		}
	}
	return nil
}

// currentDigests joins the rows of log_hours (h) to their current
// digests (d).
const currentDigests = `log_hours h JOIN log_latency_hours d ON d.workspace_id = h.workspace_id AND d.hour_us = h.hour_us
	AND d.status = h.status AND d.provider = h.provider AND d.model = h.model AND d.requests = h.requests AND d.latency_us = h.latency_us`

// compactDay writes the daily rollups of the day starting at day, marks
// it done and takes it off log_days_todo. Its hours' digests are merged
// first, outside the write lock; the rest is one transaction under it,
// which gives up (leaving the day to the next pass) when a record was
// added to the day meanwhile, or an hour of it has no current digest.
func (s *Store) compactDay(ctx context.Context, day int64) error {
	rows, err := s.db.QueryContext(ctx, `SELECT h.workspace_id, h.status, h.provider, h.model, d.latencies FROM `+currentDigests+`
WHERE h.hour_us >= ?1 AND h.hour_us < ?2`, day, day+dayUS)
	if err != nil {
		return err
	}
	groups := make(map[hourKey][]int64)
	for rows.Next() {
		k := hourKey{hour: day}
		var blob sql.RawBytes
		if err := rows.Scan(&k.workspace, &k.status, &k.provider, &k.model, &blob); err != nil {
			rows.Close()
			return err
		}
		if groups[k], err = decodeLatencies(groups[k], blob); err != nil {
			rows.Close()
			return err
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}

	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, table := range []string{"log_days", "log_metadata_days", "log_latency_days"} {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE hour_us = ?1`, day); err != nil {
			return err
		}
	}
	for _, q := range []string{
		`INSERT INTO log_days SELECT workspace_id, ?1, status, provider, model, SUM(requests), SUM(errors), SUM(rescued_retry),
	SUM(rescued_fallback), SUM(cache_hits), SUM(cache_misses), SUM(cache_hit_latency_us), SUM(cache_miss_latency_us),
	SUM(prompt_tokens), SUM(completion_tokens), SUM(total_tokens), SUM(cost), SUM(latency_us), MAX(last_us)
FROM log_hours WHERE hour_us >= ?1 AND hour_us < ?2 GROUP BY workspace_id, status, provider, model`,
		`INSERT INTO log_metadata_days SELECT workspace_id, key, ?1, value, SUM(requests), SUM(prompt_tokens),
	SUM(completion_tokens), SUM(total_tokens), SUM(cost), MAX(last_us)
FROM log_metadata_hours WHERE hour_us >= ?1 AND hour_us < ?2 GROUP BY workspace_id, key, value`,
	} {
		if _, err := tx.ExecContext(ctx, q, day, day+dayUS); err != nil {
			return err
		}
	}
	if err := insertDigests(ctx, tx, "log_latency_days", groups); err != nil {
		return err
	}
	// Every daily row has its digest, of the same count and sum: no
	// record came in between, and no hour lacked a current digest.
	var missing int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM log_days h LEFT JOIN log_latency_days d
	ON d.workspace_id = h.workspace_id AND d.hour_us = h.hour_us AND d.status = h.status AND d.provider = h.provider AND d.model = h.model
	AND d.requests = h.requests AND d.latency_us = h.latency_us
WHERE h.hour_us = ?1 AND d.latencies IS NULL`, day).Scan(&missing); err != nil {
		return err
	}
	if missing > 0 {
		return nil // the next pass digests the day again
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO log_days_done (day_us) VALUES (?1)`, day); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM log_days_todo WHERE day_us = ?1`, day); err != nil {
		return err
	}
	return tx.Commit()
}

// markDays returns the statements that put the days of recs on
// log_days_todo, and take those that ended before now off log_days_done
// (their daily rollups no longer hold with recs added), with their
// arguments. today is the day this store put on log_days_todo last (0 for
// none): it is not put again. It returns the day of now too.
func markDays(recs []*gateway.RequestLog, now time.Time, today int64) (stmts []string, args [][]any, nowDay int64) {
	nowDay = now.UnixMicro() / dayUS * dayUS
	var todo, ended map[int64]bool
	for _, r := range recs {
		t := r.Time.UnixMicro()
		if t < 0 {
			continue // no rollup holds it (rollUpLogs truncates toward zero)
		}
		d := t / dayUS * dayUS
		if d < nowDay {
			if ended == nil {
				ended = make(map[int64]bool)
			}
			ended[d] = true
		}
		if d != today || d != nowDay {
			if todo == nil {
				todo = make(map[int64]bool)
			}
			todo[d] = true
		}
	}
	list := func(days map[int64]bool, format, sep string) {
		if len(days) == 0 {
			return
		}
		var a []any
		marks := make([]string, 0, len(days))
		for _, d := range slices.Sorted(maps.Keys(days)) {
			a = append(a, d)
			marks = append(marks, "?"+strconv.Itoa(len(a)))
		}
		stmts = append(stmts, fmt.Sprintf(format, strings.Join(marks, sep)))
		args = append(args, a)
	}
	list(todo, `INSERT OR IGNORE INTO log_days_todo (day_us) VALUES (%s)`, "), (")
	list(ended, `DELETE FROM log_days_done WHERE day_us IN (%s)`, ", ")
	return stmts, args, nowDay
}
