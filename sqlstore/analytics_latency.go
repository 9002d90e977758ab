package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelgateway/gateway/observe"
)

// The latency figures of an aggregation the rollups answer (SQLite):
// exact percentiles from the latency digests of its whole hours and days
// (latencydigest.go) and the records of the rest.

// rollupLatency sets the latency figures (sum and percentiles) of groups
// from every latency of a's window: those of the whole hours [from, to)
// from their digests, when all of an hour's rows have a current one, and
// the others (the parts of an hour at either end, the hours not yet
// digested) from the records. The percentiles are exact.
func (s *Store) rollupLatency(ctx context.Context, a *observe.Aggregation, from, to int64, spans []rollupSpan, groups map[rollupKey]*observe.Aggregate) error {
	var byTime, byStatus, byModel bool
	for _, d := range a.GroupBy {
		byTime = byTime || d == observe.DimTime
		byStatus = byStatus || d == observe.DimStatus
		byModel = byModel || d == observe.DimModel
	}
	width := a.Bucket.Microseconds()
	noTime := time.Time{}.UnixMicro() // the time of the key of a group without DimTime (aggregateRollup's add)
	keyOf := func(t int64, status int, provider, model string) rollupKey {
		k := rollupKey{time: noTime}
		if byTime {
			k.time = t / width * width
		}
		if byStatus {
			k.status = status
		}
		if byModel {
			k.provider, k.model = provider, model
		}
		return k
	}
	vals := make(map[rollupKey][]int64, len(groups))
	for k, g := range groups {
		vals[k] = make([]int64, 0, g.Requests)
	}

	// The digests of the whole hours and days, decoded as they come;
	// those of an hour (or day) with a stale or missing one are taken
	// back out, and the hour read from the records.
	var raw [][2]int64 // [from, to) to read from the records
	for _, sp := range spans {
		stale, err := s.readDigests(ctx, a, sp, vals, keyOf)
		if err != nil {
			return fmt.Errorf("sqlstore: aggregating request logs: %w", err)
		}
		raw = append(raw, stale...)
	}

	// The records of the rest: the ends of the window, and the runs of
	// hours without current digests.
	parts := rollupEdges(a, from, to)
	slices.SortFunc(raw, func(x, y [2]int64) int { return cmp.Compare(x[0], y[0]) })
	for i := 0; i < len(raw); {
		j := i + 1
		for j < len(raw) && raw[j][0] == raw[j-1][1] {
			j++
		}
		parts = append(parts, [2]time.Time{time.UnixMicro(raw[i][0]), time.UnixMicro(raw[j-1][1] - 1)})
		i = j
	}
	for _, part := range parts {
		q := a.Query
		q.Start, q.End = part[0], part[1]
		where, args := logWhere(s.dialect, &q)
		rows, err := s.db.QueryContext(ctx, s.dialect.rebind(`SELECT time_us, status, provider, model, latency_us FROM request_logs
WHERE `+strings.Join(where, ` AND `)), args...)
		if err != nil {
			return fmt.Errorf("sqlstore: aggregating request logs: %w", err)
		}
		for rows.Next() {
			var (
				t, lat          int64
				status          int
				provider, model string
			)
			if err := rows.Scan(&t, &status, &provider, &model, &lat); err != nil {
				rows.Close()
				return fmt.Errorf("sqlstore: aggregating request logs: %w", err)
			}
			k := keyOf(t, status, provider, model)
			vals[k] = append(vals[k], lat)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("sqlstore: aggregating request logs: %w", err)
		}
	}

	for k, g := range groups {
		v := vals[k]
		g.Latency = 0
		for _, x := range v {
			g.Latency += x
		}
		g.LatencyP50, g.LatencyP90, g.LatencyP99 = latencyPercentiles(v)
	}
	return nil
}

// readDigests appends to vals, by keyOf's key, the latencies of the
// digests of span sp that a selects, and returns the hours (or days) of
// sp whose rows lack a current digest: their latencies are not in vals,
// and are to be read from the records.
func (s *Store) readDigests(ctx context.Context, a *observe.Aggregation, sp rollupSpan, vals map[rollupKey][]int64,
	keyOf func(t int64, status int, provider, model string) rollupKey) ([][2]int64, error) {
	t := sp.tables()
	where, args := rollupWhere(a, sp.from, sp.to, "h.")
	rows, err := s.db.QueryContext(ctx, s.dialect.rebind(`SELECT h.hour_us, h.status, h.provider, h.model, d.latencies
FROM `+t.sums+` h LEFT JOIN `+t.latency+` d ON d.workspace_id = h.workspace_id AND d.hour_us = h.hour_us
	AND d.status = h.status AND d.provider = h.provider AND d.model = h.model AND d.requests = h.requests AND d.latency_us = h.latency_us
WHERE `+where+` ORDER BY h.hour_us`), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	type mark struct {
		key rollupKey
		n   int // len(vals[key]) before the unit's digest
	}
	var (
		raw   [][2]int64
		marks []mark // the digests of unit decoded so far
		unit  int64  = -1
		stale bool
	)
	for rows.Next() {
		var (
			u               int64
			status          int
			provider, model string
			blob            sql.RawBytes
		)
		if err := rows.Scan(&u, &status, &provider, &model, &blob); err != nil {
			return nil, err
		}
		if u != unit {
			unit, stale, marks = u, false, marks[:0]
		}
		if stale {
			continue
		}
		if blob == nil {
			for _, m := range slices.Backward(marks) {
				vals[m.key] = vals[m.key][:m.n]
			}
			raw = append(raw, [2]int64{u, u + t.width})
			stale = true
			continue
		}
		k := keyOf(u, status, provider, model)
		marks = append(marks, mark{k, len(vals[k])})
		if vals[k], err = decodeLatencies(vals[k], blob); err != nil {
			return nil, err
		}
	}
	return raw, rows.Err()
}
