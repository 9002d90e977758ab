package sqlstore

import (
	"context"
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
// delete that row when they change the day.

// dayUS is a day in Unix microseconds.
const dayUS = 24 * hourUS

// compactDays writes the daily rollups of the days that ended more than
// digestDelay ago and are not done.
func (s *Store) compactDays(ctx context.Context) error {
	ended := time.Now().Add(-digestDelay).UnixMicro() / dayUS * dayUS // days before this one ended
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT hour_us / ?1 * ?1 FROM log_hours WHERE hour_us >= 0 AND hour_us < ?2
EXCEPT SELECT day_us FROM log_days_done ORDER BY 1`, dayUS, ended)
	if err != nil {
		return err
	}
	var days []int64
	for rows.Next() {
		var d int64
		if err := rows.Scan(&d); err != nil {
			rows.Close()
			return err
		}
		days = append(days, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, d := range days {
		if err := s.compactDay(ctx, d); err != nil {
			return fmt.Errorf("day %s: %w", time.UnixMicro(d).UTC().Format(time.DateOnly), err)
		}
	}
	return nil
}

// compactDay writes the daily rollups of the day starting at day, and
// marks it done, in one transaction: under SQLite's write lock, so that
// no record is added to the day in between. A day whose hours do not all
// have current digests yet is left for the next pass.
func (s *Store) compactDay(ctx context.Context, day int64) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	const current = `log_hours h JOIN log_latency_hours d ON d.workspace_id = h.workspace_id AND d.hour_us = h.hour_us
	AND d.status = h.status AND d.provider = h.provider AND d.model = h.model AND d.requests = h.requests AND d.latency_us = h.latency_us`
	var rowsOfDay, digested int
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM log_hours WHERE hour_us >= ?1 AND hour_us < ?2),
	(SELECT COUNT(*) FROM `+current+` WHERE h.hour_us >= ?1 AND h.hour_us < ?2)`, day, day+dayUS).Scan(&rowsOfDay, &digested); err != nil {
		return err
	}
	if digested < rowsOfDay {
		return nil
	}
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
	// The day's digests: its hours', merged by group.
	rows, err := tx.QueryContext(ctx, `SELECT h.workspace_id, h.status, h.provider, h.model, d.latencies FROM `+current+`
WHERE h.hour_us >= ?1 AND h.hour_us < ?2`, day, day+dayUS)
	if err != nil {
		return err
	}
	groups := make(map[hourKey][]int64)
	for rows.Next() {
		k := hourKey{hour: day}
		var blob []byte
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
	if err := insertDigests(ctx, tx, "log_latency_days", groups); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO log_days_done (day_us) VALUES (?1)`, day); err != nil {
		return err
	}
	return tx.Commit()
}

// undoneDays returns the statement that deletes the log_days_done rows of
// the days of recs that ended before now (their daily rollups no longer
// hold with recs added), and its arguments; "" when there is none, as for
// records of today.
func undoneDays(recs []*gateway.RequestLog, now time.Time) (string, []any) {
	today := now.UnixMicro() / dayUS * dayUS
	var days map[int64]bool
	for _, r := range recs {
		if t := r.Time.UnixMicro(); t >= 0 && t < today {
			if days == nil {
				days = make(map[int64]bool)
			}
			days[t/dayUS*dayUS] = true
		}
	}
	if len(days) == 0 {
		return "", nil
	}
	var args []any
	marks := make([]string, 0, len(days))
	for _, d := range slices.Sorted(maps.Keys(days)) {
		args = append(args, d)
		marks = append(marks, "?"+strconv.Itoa(len(args)))
	}
	return `DELETE FROM log_days_done WHERE day_us IN (` + strings.Join(marks, ", ") + `)`, args
}
