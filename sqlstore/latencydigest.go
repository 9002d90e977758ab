package sqlstore

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Latency digests (SQLite): the sorted latencies of each row of log_hours
// of a closed hour, in log_latency_hours (see migration 0007), from which
// AggregateLogs takes exact percentiles over whole hours without reading
// the records. They are written off the request path: by a goroutine of
// the store once a minute (CompactLogs), for the hours that ended more
// than digestDelay ago and have no current digest.

// digestDelay is how long after an hour ends its digests are written:
// the gateway's log writer has stored the hour's records by then.
const digestDelay = time.Minute

// digestInterval is how often the store runs CompactLogs, by default
// (Options.CompactInterval).
const digestInterval = time.Minute

// digestVersion is the first byte of a digest.
const digestVersion = 1

// encodeLatencies returns the digest of sorted (ascending): the version,
// the count, the first value (zig-zag) and the differences between
// neighbours, as varints.
func encodeLatencies(sorted []int64) []byte {
	b := make([]byte, 0, 2+binary.MaxVarintLen64+2*len(sorted))
	b = append(b, digestVersion)
	b = binary.AppendUvarint(b, uint64(len(sorted)))
	prev := int64(0)
	for i, v := range sorted {
		if i == 0 {
			b = binary.AppendVarint(b, v)
		} else {
			b = binary.AppendUvarint(b, uint64(v-prev))
		}
		prev = v
	}
	return b
}

// errDigest is the error of a digest that cannot be read.
var errDigest = errors.New("sqlstore: malformed latency digest")

// decodeLatencies appends the values of digest b to dst, ascending.
func decodeLatencies(dst []int64, b []byte) ([]int64, error) {
	if len(b) == 0 || b[0] != digestVersion {
		return dst, errDigest
	}
	b = b[1:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) { // every value takes a byte at least
		return dst, errDigest
	}
	b = b[k:]
	dst = slices.Grow(dst, int(n))
	var prev int64
	for i := range n {
		var v int64
		if i == 0 {
			v, k = binary.Varint(b)
		} else {
			var d uint64
			d, k = binary.Uvarint(b)
			v = prev + int64(d)
			if v < prev {
				return dst, errDigest
			}
		}
		if k <= 0 {
			return dst, errDigest
		}
		b = b[k:]
		dst = append(dst, v)
		prev = v
	}
	if len(b) != 0 {
		return dst, errDigest
	}
	return dst, nil
}

// digestHour writes the digests of the hour starting at hour (Unix
// microseconds): it reads the hour's records (a range of request_logs's
// primary key), then replaces the hour's digests in one transaction. A
// record stored in between leaves its row's digest stale, to be written
// again by the next pass (AddLogs put its day on log_days_todo).
func (s *Store) digestHour(ctx context.Context, hour int64) error {
	rows, err := s.db.QueryContext(ctx, `SELECT workspace_id, status, provider, model, latency_us FROM request_logs
WHERE time_us >= ?1 AND time_us < ?2`, hour, hour+hourUS)
	if err != nil {
		return err
	}
	groups := make(map[hourKey][]int64)
	for rows.Next() {
		k := hourKey{hour: hour}
		var lat int64
		if err := rows.Scan(&k.workspace, &k.status, &k.provider, &k.model, &lat); err != nil {
			rows.Close()
			return err
		}
		groups[k] = append(groups[k], lat)
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
	if _, err := tx.ExecContext(ctx, `DELETE FROM log_latency_hours WHERE hour_us = ?1`, hour); err != nil {
		return err
	}
	if err := insertDigests(ctx, tx, "log_latency_hours", groups); err != nil {
		return err
	}
	return tx.Commit()
}

// insertDigests inserts into table (log_latency_hours or _days) the
// digest of each group's latencies (sorted here), in key order.
func insertDigests(ctx context.Context, tx *sql.Tx, table string, groups map[hourKey][]int64) error {
	for _, k := range slices.SortedFunc(maps.Keys(groups), compareHourKeys) {
		vals := groups[k]
		slices.Sort(vals)
		var sum int64
		for _, v := range vals {
			sum += v
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+table+` (workspace_id, hour_us, status, provider, model, requests,
	latency_us, latencies) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)`,
			k.workspace, k.hour, k.status, k.provider, k.model, len(vals), sum, encodeLatencies(vals)); err != nil {
			return err
		}
	}
	return nil
}

// digestLoop runs CompactLogs every interval until ctx ends, logging
// the first failure of a run of them.
func (s *Store) digestLoop(ctx context.Context, interval time.Duration) {
	defer close(s.digestDone)
	t := time.NewTicker(interval)
	defer t.Stop()
	failing := false
	for {
		err := s.CompactLogs(ctx)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			s.errLog.ErrorContext(ctx, "sqlstore: compacting request logs failed; the analytics read the hourly rollups and the records meanwhile", "err", err)
			failing = true
		case err == nil && failing:
			s.errLog.InfoContext(ctx, "sqlstore: compacting request logs again")
			failing = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// latencyPercentiles returns the nearest-rank 50th, 90th and 99th
// percentiles of vals (as observe.Percentile over vals sorted), reordering
// vals: each is found by selection, in time linear in len(vals), which a
// month of latencies needs (sorting a million values takes about ten
// times as long).
func latencyPercentiles(vals []int64) (p50, p90, p99 int64) {
	n := len(vals)
	if n == 0 {
		return 0, 0, 0
	}
	rank := func(p float64) int { // 0-based, as observe.Percentile
		i := int(math.Ceil(p*float64(n))) - 1
		return min(max(i, 0), n-1)
	}
	rng := rand.New(rand.NewPCG(uint64(n), 0x9e3779b97f4a7c15))
	r50, r90, r99 := rank(0.5), rank(0.9), rank(0.99)
	selectRank(vals, r50, rng)
	selectRank(vals[r50:], r90-r50, rng) // vals[r50:] holds the values at or above
	selectRank(vals[r90:], r99-r90, rng)
	return vals[r50], vals[r90], vals[r99]
}

// selectRank reorders v so that v[k] holds the value it would hold were v
// sorted, with no greater value before it and no smaller after
// (quickselect with random pivots and a three-way partition, so that
// runs of equal latencies cost nothing; it sorts what is left after
// 64 rounds, against bad luck).
func selectRank(v []int64, k int, rng *rand.Rand) {
	lo, hi := 0, len(v) // the window [lo, hi) holds rank k
	for round := 0; hi-lo > 1; round++ {
		if round == 64 {
			slices.Sort(v[lo:hi])
			return
		}
		p := v[lo+rng.IntN(hi-lo)]
		// v[lo:lt] < p, v[lt:i] == p, v[gt:hi] > p
		lt, i, gt := lo, lo, hi
		for i < gt {
			switch {
			case v[i] < p:
				v[lt], v[i] = v[i], v[lt]
				lt++
				i++
			case v[i] > p:
				gt--
				v[gt], v[i] = v[i], v[gt]
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt
		case k >= gt:
			lo = gt
		default:
			return // v[k] == p, in place
		}
	}
}
