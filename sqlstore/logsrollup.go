package sqlstore

import (
	"context"
	"database/sql"
	"maps"
	"math/bits"
	"slices"
	"strings"
	"time"

	gateway "github.com/modelgateway/gateway"
)

// SQLite's hourly rollups of the request logs (log_hours,
// log_metadata_hours; see migration 0007) are added to by AddLogs, a batch
// at a time: the batch's records summed by group in Go, then one upsert
// row per group. A trigger per inserted record did the same at about 17
// µs of CPU a record, as much as storing the record itself. Deleting
// records (retention) still takes them out of the rollups by trigger.

// hourUS is an hour in Unix microseconds.
const hourUS = 3600_000_000

// hourKey is a row of log_hours.
type hourKey struct {
	workspace       string
	hour            int64
	status          int
	provider, model string
}

// hourSums are the figures of a log_hours row.
type hourSums struct {
	requests, errors, rescuedRetry, rescuedFallback, cacheHits, cacheMisses int64
	cacheHitLatency, cacheMissLatency                                       int64
	promptTokens, completionTokens, totalTokens                             int64
	cost                                                                    float64
	latency, last                                                           int64
}

// metaKey is a row of log_metadata_hours.
type metaKey struct {
	workspace, key string
	hour           int64
	value          string
}

// metaSums are the figures of a log_metadata_hours row.
type metaSums struct {
	requests, promptTokens, completionTokens, totalTokens int64
	cost                                                  float64
	last                                                  int64
}

// rollUpLogs adds recs, just stored by tx, to the hourly rollups, puts
// their days on log_days_todo and takes those that ended already off
// log_days_done (logdays.go). It returns the day it put on log_days_todo
// for today, or 0: once the transaction commits, addLogs notes it, so
// that the next batches of the day do not put it again.
func (s *Store) rollUpLogs(ctx context.Context, tx *sql.Tx, recs []*gateway.RequestLog) (int64, error) {
	marks, markArgs, today := markDays(recs, time.Now(), s.todoDay.Load())
	for i, q := range marks {
		if _, err := tx.ExecContext(ctx, q, markArgs[i]...); err != nil {
			return 0, err
		}
	}
	hours := make(map[hourKey]*hourSums)
	metas := make(map[metaKey]*metaSums)
	for _, r := range recs {
		t := r.Time.UnixMicro()
		hour := t / hourUS * hourUS // truncated toward zero, as the SQL of migration 0007 does
		lat := r.Latency.Microseconds()
		k := hourKey{r.WorkspaceID, hour, r.Status, r.Provider, r.Model}
		h := hours[k]
		if h == nil {
			h = &hourSums{last: t}
			hours[k] = h
		}
		h.requests++
		h.errors += b2i(r.Status >= 400)
		h.rescuedRetry += b2i(r.Rescued && r.FallbackIndex <= 0)
		h.rescuedFallback += b2i(r.Rescued && r.FallbackIndex > 0)
		switch r.CacheStatus {
		case "HIT":
			h.cacheHits++
			h.cacheHitLatency += lat
		case "MISS", "REFRESH":
			h.cacheMisses++
			h.cacheMissLatency += lat
		}
		h.promptTokens += r.PromptTokens
		h.completionTokens += r.CompletionTokens
		h.totalTokens += r.TotalTokens
		h.cost += r.Cost
		h.latency += lat
		h.last = max(h.last, t)
		for key, value := range r.Metadata {
			mk := metaKey{r.WorkspaceID, key, hour, value}
			m := metas[mk]
			if m == nil {
				m = &metaSums{last: t}
				metas[mk] = m
			}
			m.requests++
			m.promptTokens += r.PromptTokens
			m.completionTokens += r.CompletionTokens
			m.totalTokens += r.TotalTokens
			m.cost += r.Cost
			m.last = max(m.last, t)
		}
	}

	// Rows go in key order, that of the tables' primary keys: the upserts
	// walk each b-tree forward.
	hk := slices.SortedFunc(maps.Keys(hours), compareHourKeys)
	args := make([]any, 0, hourColumns*min(len(hk), rollupRows))
	err := upsertRows(ctx, s, tx, len(hk), hourUpserts, func(i int) {
		k, h := hk[i], hours[hk[i]]
		args = append(args, k.workspace, k.hour, k.status, k.provider, k.model, h.requests, h.errors, h.rescuedRetry,
			h.rescuedFallback, h.cacheHits, h.cacheMisses, h.cacheHitLatency, h.cacheMissLatency, h.promptTokens,
			h.completionTokens, h.totalTokens, h.cost, h.latency, h.last)
	}, &args)
	if err != nil {
		return 0, err
	}
	mk := slices.SortedFunc(maps.Keys(metas), func(a, b metaKey) int {
		return compareKeys(a.workspace, b.workspace, a.hour, b.hour, a.key+"\x00"+a.value, b.key+"\x00"+b.value, 0, 0)
	})
	args = args[:0]
	err = upsertRows(ctx, s, tx, len(mk), metaUpserts, func(i int) {
		k, m := mk[i], metas[mk[i]]
		args = append(args, k.workspace, k.key, k.hour, k.value, m.requests, m.promptTokens, m.completionTokens,
			m.totalTokens, m.cost, m.last)
	}, &args)
	if err != nil {
		return 0, err
	}
	for _, r := range recs {
		if t := r.Time.UnixMicro(); t >= 0 && t/dayUS*dayUS == today {
			return today, nil
		}
	}
	return 0, nil
}

// upsertRows runs n rows through the statements of stmts (the k-th
// upserting 2^k rows), rollupRows at most at a time; row appends the
// arguments of row i to *args.
func upsertRows(ctx context.Context, s *Store, tx *sql.Tx, n int, stmts []string, row func(i int), args *[]any) error {
	for i := 0; i < n; {
		k := min(bits.Len(uint(n-i))-1, len(stmts)-1)
		*args = (*args)[:0]
		for j := range 1 << k {
			row(i + j)
		}
		if _, err := s.logStmt(ctx, tx, stmts[k]).ExecContext(ctx, *args...); err != nil {
			return err
		}
		i += 1 << k
	}
	return nil
}

// rollupRows is how many rows one upsert of rollUpLogs carries at most.
const rollupRows = 32

// hourColumns is the number of columns of log_hours.
const hourColumns = 19

// hourUpserts and metaUpserts are the upserts of rollUpLogs: the k-th
// of 2^k rows.
var hourUpserts, metaUpserts = upserts(hourColumns, `INSERT INTO log_hours VALUES %s
ON CONFLICT (workspace_id, hour_us, status, provider, model) DO UPDATE SET requests = requests + excluded.requests,
	errors = errors + excluded.errors, rescued_retry = rescued_retry + excluded.rescued_retry,
	rescued_fallback = rescued_fallback + excluded.rescued_fallback, cache_hits = cache_hits + excluded.cache_hits,
	cache_misses = cache_misses + excluded.cache_misses, cache_hit_latency_us = cache_hit_latency_us + excluded.cache_hit_latency_us,
	cache_miss_latency_us = cache_miss_latency_us + excluded.cache_miss_latency_us,
	prompt_tokens = prompt_tokens + excluded.prompt_tokens, completion_tokens = completion_tokens + excluded.completion_tokens,
	total_tokens = total_tokens + excluded.total_tokens, cost = cost + excluded.cost,
	latency_us = latency_us + excluded.latency_us, last_us = max(last_us, excluded.last_us)`),
	upserts(10, `INSERT INTO log_metadata_hours VALUES %s
ON CONFLICT (workspace_id, key, hour_us, value) DO UPDATE SET requests = requests + excluded.requests,
	prompt_tokens = prompt_tokens + excluded.prompt_tokens, completion_tokens = completion_tokens + excluded.completion_tokens,
	total_tokens = total_tokens + excluded.total_tokens, cost = cost + excluded.cost, last_us = max(last_us, excluded.last_us)`)

// upserts returns the statements of 1, 2, 4, … rollupRows rows of cols
// columns each, the VALUES list in place of format's %s.
func upserts(cols int, format string) []string {
	var qs []string
	for n := 1; n <= rollupRows; n *= 2 {
		qs = append(qs, strings.Replace(format, "%s", valueRows(n, cols), 1))
	}
	return qs
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// compareHourKeys orders the keys of log_hours rows by workspace and
// hour, then provider and model, then status.
func compareHourKeys(a, b hourKey) int {
	return compareKeys(a.workspace, b.workspace, a.hour, b.hour, a.provider+"\x00"+a.model, b.provider+"\x00"+b.model, a.status, b.status)
}

// compareKeys orders rollup rows by workspace, hour, then the rest.
func compareKeys(wa, wb string, ha, hb int64, ra, rb string, sa, sb int) int {
	if c := strings.Compare(wa, wb); c != 0 {
		return c
	}
	if ha != hb {
		if ha < hb {
			return -1
		}
		return 1
	}
	if c := strings.Compare(ra, rb); c != 0 {
		return c
	}
	return sa - sb
}
