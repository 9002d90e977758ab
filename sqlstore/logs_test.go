package sqlstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
	"github.com/modelgateway/gateway/sqlstore"
)

// genLogs makes n request logs spread over the hour before end, with
// every filtered field varied.
func genLogs(n int, end time.Time, seed uint64) []*gateway.RequestLog {
	rng := rand.New(rand.NewPCG(seed, 7))
	recs := make([]*gateway.RequestLog, n)
	for i := range recs {
		r := &gateway.RequestLog{
			ID:          fmt.Sprintf("%08d-log", i),
			Time:        end.Add(-time.Duration(rng.IntN(3600)) * time.Second).Truncate(time.Microsecond),
			TraceID:     fmt.Sprintf("trace-%d", rng.IntN(20)),
			WorkspaceID: []string{"ws-1", "ws-2", ""}[rng.IntN(3)],
			KeyID:       fmt.Sprintf("key-%d", rng.IntN(4)),
			VirtualKey:  []string{"", "vk-a", "vk-b"}[rng.IntN(3)],
			ConfigID:    []string{"", "cfg-a"}[rng.IntN(2)],
			Provider:    []string{"openai", "anthropic"}[rng.IntN(2)],
			Model:       []string{"gpt-4o", "claude-3-5-sonnet", "gpt-4o-mini"}[rng.IntN(3)],
			Method:      "POST", Path: "/v1/chat/completions",
			Status:        []int{200, 200, 200, 429, 500, 499}[rng.IntN(6)],
			Latency:       time.Duration(rng.IntN(5000)) * time.Millisecond,
			TTFB:          time.Duration(rng.IntN(900)) * time.Millisecond,
			PromptTokens:  int64(rng.IntN(2000)),
			CacheStatus:   []gateway.CacheStatus{"", gateway.CacheHit, gateway.CacheMiss}[rng.IntN(3)],
			Attempts:      rng.IntN(3),
			FallbackIndex: rng.IntN(2),
			Rescued:       rng.IntN(5) == 0,
			CostUnknown:   rng.IntN(7) == 0,
			Ingress:       []string{"", "chat_completions", "messages", "pass_through"}[rng.IntN(4)],
		}
		switch rng.IntN(4) {
		case 0:
			r.SkippedTargets = []string{"openai|https://api.openai.com|gpt-4o", `a "quoted", key`}
		case 1:
			r.TrippedTargets = []string{"anthropic|claude"}
		}
		r.CompletionTokens = int64(rng.IntN(1000))
		r.TotalTokens = r.PromptTokens + r.CompletionTokens
		r.Cost = float64(r.TotalTokens) * 0.00001
		if rng.IntN(2) == 0 {
			r.Metadata = map[string]string{"team": fmt.Sprintf("t%d", rng.IntN(3)), "env": []string{"prod", "dev"}[rng.IntN(2)]}
		}
		recs[i] = r
	}
	return recs
}

// TestLogStoreMatchesMemoryStore: the same records and filters give the
// same pages, in the same order, on SQLite and Postgres as on a
// memstore.Store, whose LogQuery.Match is the reference.
func TestLogStoreMatchesMemoryStore(t *testing.T) {
	end := time.Now().UTC().Truncate(time.Second)
	recs := genLogs(600, end, 1)
	ref := memstore.New()
	if err := ref.AddLogs(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	queries := []observe.Query{
		{},
		{WorkspaceID: "ws-1"},
		{Start: end.Add(-30 * time.Minute), End: end.Add(-10 * time.Minute)},
		{StatusCodes: []int{429, 500}},
		{Models: []observe.ProviderModel{{Provider: "openai", Model: "gpt-4o"}, {Provider: "anthropic", Model: "claude-3-5-sonnet"}}},
		{APIKeyIDs: []string{"key-1", "key-3"}, VirtualKeys: []string{"vk-a"}},
		{Configs: []string{"cfg-a"}, TraceIDs: []string{"trace-3", "trace-4", "trace-5"}},
		{Metadata: map[string]string{"team": "t1"}},
		{Metadata: map[string]string{"team": "t2", "env": "prod"}, WorkspaceID: "ws-2"},
		{PromptTokens: observe.Range[int64]{Min: 500, HasMin: true}, CompletionTokens: observe.Range[int64]{Max: 300, HasMax: true}},
		{TotalTokens: observe.Range[int64]{Min: 100, Max: 1500, HasMin: true, HasMax: true}},
		{Cost: observe.Range[float64]{Min: 0.01, Max: 0.02, HasMin: true, HasMax: true}},
		{TraceIDs: []string{"none"}},
	}
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn, sqlstore.Options{})
		for i := 0; i < len(recs); i += 100 { // in batches, as the gateway hands them over
			if err := s.AddLogs(ctx, recs[i:i+100]); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.AddLogs(ctx, recs[:10]); err != nil { // a batch retried: stored once
			t.Fatal(err)
		}
		for i, q := range queries {
			want, _ := ref.Logs(ctx, &q)
			got, err := s.Logs(ctx, &q)
			if err != nil {
				t.Fatalf("query %d: %v", i, err)
			}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("query %d %+v (-memory +%s):\n%s", i, q, dsn[:6], diff)
			}
			// Paged by 7 through After: the same records, once each.
			var paged []gateway.RequestLog
			pq := q
			pq.Limit = 7
			for {
				page, err := s.Logs(ctx, &pq)
				if err != nil {
					t.Fatal(err)
				}
				paged = append(paged, page...)
				if len(page) < pq.Limit {
					break
				}
				pq.After = page[len(page)-1].ID
			}
			if len(paged) != len(want) || len(want) > 0 && paged[len(paged)-1].ID != want[len(want)-1].ID {
				t.Errorf("query %d paged: %d records, want %d", i, len(paged), len(want))
			}
		}
		rec, err := s.Log(ctx, "ws-1", recs[0].ID)
		if recs[0].WorkspaceID == "ws-1" && (err != nil || rec.ID != recs[0].ID) {
			t.Errorf("Log = %v, %v", rec, err)
		}
		if _, err := s.Log(ctx, "ws-9", recs[0].ID); err != gateway.ErrNotFound {
			t.Errorf("Log of another workspace = %v, want ErrNotFound", err)
		}
	})
}

// TestLogRetention: records older than the retention go, in batches;
// their bodies with them.
func TestLogRetention(t *testing.T) {
	ctx := context.Background()
	dsn := sqliteDSN(t)
	now := time.Now().UTC()
	old := genLogs(12000, now.Add(-48*time.Hour), 2)
	fresh := genLogs(50, now, 3)
	for i, r := range fresh {
		r.ID = fmt.Sprintf("fresh-%d", i)
	}
	for _, r := range old[:100] {
		r.RequestBody, r.ResponseBody = `{"model":"m"}`, `{"id":"x"}`
	}
	s := openStore(t, dsn, sqlstore.Options{})
	if err := s.AddLogs(ctx, append(old, fresh...)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openStore(t, dsn, sqlstore.Options{LogRetention: 24 * time.Hour})
	waitFor(t, time.Minute, "old request logs deleted", func() bool {
		recs, _ := s.Logs(ctx, &observe.Query{Limit: len(fresh) + 1})
		return len(recs) == len(fresh)
	})
	var orphans int
	if err := rawDB(t, dsn).QueryRow(`SELECT COUNT(*) FROM request_log_bodies WHERE log_id NOT IN (SELECT id FROM request_logs)`).Scan(&orphans); err != nil || orphans != 0 {
		t.Errorf("bodies of deleted logs: %d, %v", orphans, err)
	}
}

// BenchmarkAddLogs measures ingestion into SQLite and Postgres in
// batches of LOGBENCH_BATCH records (default 100), as the gateway's log
// queue hands them over under load, into a table already holding
// LOGBENCH_PREFILL records (default 0). Records look like the gateway's:
// times and ids rising, random trace ids (time-ordered ones, as UUIDv7,
// with LOGBENCH_TRACE=ordered: the trace index then grows at its end
// rather than everywhere). LOGBENCH_JITTER=n hands each batch over in the
// order its requests would have ended, each up to n places after the one
// it began in (30: a gateway's 32 connections). Reported as records/s,
// and as the CPU time of this process per record: all of SQLite's, only
// the client's of Postgres.
func BenchmarkAddLogs(b *testing.B) {
	prefill, _ := strconv.Atoi(os.Getenv("LOGBENCH_PREFILL"))
	batch, _ := strconv.Atoi(os.Getenv("LOGBENCH_BATCH"))
	if batch <= 0 {
		batch = 100
	}
	for _, backend := range backends {
		b.Run(backend.name, func(b *testing.B) {
			ctx := context.Background()
			s := openStore(b, backend.dsn(b), sqlstore.Options{})
			gen := trafficLogs(time.Now().Add(-time.Hour), 5, os.Getenv("LOGBENCH_TRACE") == "ordered")
			for i := 0; i < prefill; i += 1000 {
				if err := s.AddLogs(ctx, gen(1000)); err != nil {
					b.Fatal(err)
				}
			}
			jitter, _ := strconv.Atoi(os.Getenv("LOGBENCH_JITTER"))
			rng := rand.New(rand.NewPCG(7, 7))
			b.ReportAllocs()
			start, cpu0, n := time.Now(), cpuTime(b), 0
			for b.Loop() {
				recs := gen(batch)
				if jitter > 0 {
					end := make(map[*gateway.RequestLog]int, len(recs))
					for i, r := range recs {
						end[r] = i + rng.IntN(jitter)
					}
					slices.SortStableFunc(recs, func(x, y *gateway.RequestLog) int { return end[x] - end[y] })
				}
				if err := s.AddLogs(ctx, recs); err != nil {
					b.Fatal(err)
				}
				n += batch
			}
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "records/s")
			b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(n), "cpu-µs/record")
		})
	}
}

// trafficLogs returns a generator of records as a gateway makes them:
// each call returns n more, 100 µs apart from start on, with ids in time
// order, random trace ids (time-ordered ones when ordered), three
// workspaces and metadata on half.
func trafficLogs(start time.Time, seed uint64, ordered bool) func(n int) []*gateway.RequestLog {
	rng := rand.New(rand.NewPCG(seed, 11))
	seq := 0
	return func(n int) []*gateway.RequestLog {
		recs := make([]*gateway.RequestLog, n)
		for i := range recs {
			seq++
			t := start.Add(time.Duration(seq) * 100 * time.Microsecond)
			r := &gateway.RequestLog{
				ID:          fmt.Sprintf("%012x-7000-8000-%012x", t.UnixMicro(), rng.Uint64()>>16),
				Time:        t,
				TraceID:     fmt.Sprintf("%016x%016x", rng.Uint64(), rng.Uint64()),
				WorkspaceID: []string{"ws-1", "ws-2", "ws-3"}[rng.IntN(3)],
				KeyID:       "key-1",
				Provider:    "openai", Model: "gpt-4o-mini", Method: "POST", Path: "/v1/chat/completions",
				Status: 200, Latency: time.Duration(rng.IntN(500)) * time.Millisecond, TTFB: 20 * time.Millisecond,
				BytesIn: 180, BytesOut: 600, PromptTokens: 20, CompletionTokens: 90, TotalTokens: 110, Cost: 0.000057,
				CacheStatus: gateway.CacheMiss,
			}
			if ordered {
				r.TraceID = fmt.Sprintf("%012x-7000-9000-%012x", t.UnixMicro(), rng.Uint64()>>16)
			}
			if rng.IntN(2) == 0 {
				r.Metadata = map[string]string{"team": fmt.Sprintf("t%d", rng.IntN(3)), "env": "prod"}
			}
			recs[i] = r
		}
		return recs
	}
}

// cpuTime returns the CPU time (user and system) this process has used.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestLogMetadataKeys: metadata keys and values with JSON's and JSON
// paths' special characters are stored and filtered as they are.
func TestLogMetadataKeys(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	pairs := [][2]string{{"a.b", "1"}, {`a"b`, `v"1`}, {"$x", "2"}, {"[0]", "3"}, {"é", "ü"}, {`a\b`, "<&>"}, {"env", "prod"}}
	var recs []*gateway.RequestLog
	for i, p := range pairs {
		recs = append(recs, &gateway.RequestLog{ID: fmt.Sprintf("rec-%d", i), Time: now, Metadata: map[string]string{p[0]: p[1], "n": "x"}})
	}
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn, sqlstore.Options{})
		if err := s.AddLogs(ctx, recs); err != nil {
			t.Fatal(err)
		}
		for i, p := range pairs {
			got, err := s.Logs(ctx, &observe.Query{Metadata: map[string]string{p[0]: p[1], "n": "x"}})
			if err != nil || len(got) != 1 || got[0].ID != recs[i].ID || got[0].Metadata[p[0]] != p[1] {
				t.Errorf("metadata %q=%q: %v, %v", p[0], p[1], got, err)
			}
			if got, err := s.Logs(ctx, &observe.Query{Metadata: map[string]string{p[0]: p[1] + "?"}}); err != nil || len(got) != 0 {
				t.Errorf("metadata %q=%q?: %v, %v", p[0], p[1], got, err)
			}
		}
	})
}
