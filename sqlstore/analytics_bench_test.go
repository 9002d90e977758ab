package sqlstore_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/observe"
	"github.com/modelgateway/gateway/sqlstore"
)

// benchLogsEnd is the end of the benchmark's records: they span the 30
// days before it.
var benchLogsEnd = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// millionLogs returns a SQLite database holding 1,000,000 request logs of
// workspace ws-1 over the 30 days before benchLogsEnd (9 teams, 1,000
// users, 5 models, a status in 8 an error, two records per trace) and
// 20,000 feedback, on 20,000 traces. The file is made once per schema
// version under os.TempDir, by INSERT … SELECT from a recursive counter
// (and the rollups from the records, and the latency digests from
// those), and copied for each run.
func millionLogs(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), "gateway-analytics-bench")
	cached := filepath.Join(dir, "v"+strconv.Itoa(sqlstore.SchemaVersion)+"-digests.db")
	if _, err := os.Stat(cached); err != nil {
		os.MkdirAll(dir, 0o700)
		tmp := cached + ".tmp"
		os.Remove(tmp)
		s, err := sqlstore.Open(context.Background(), tmp, sqlstore.Options{MasterKey: testKey})
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
		db := rawDB(b, tmp)
		start := time.Now()
		step := int64(30 * 24 * time.Hour / time.Microsecond / 1000000) // 2.592 s between records
		for _, q := range []string{
			`PRAGMA journal_mode=OFF`, `PRAGMA synchronous=OFF`,
			fmt.Sprintf(`WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < 999999)
INSERT INTO request_logs (id, time_us, trace_id, workspace_id, key_id, provider, model, method, path, status, latency_us,
	prompt_tokens, completion_tokens, total_tokens, cost, cache_status, attempts, fallback_index, rescued, metadata)
SELECT printf('%%012d-bench', i), %d - (i * 7919 %% 1000000) * %d - i %% 7, 'trace-' || (i / 2), 'ws-1', 'key-' || (i %% 4), 'openai',
	'model-' || (i %% 5), 'POST', '/v1/chat/completions', CASE WHEN i %% 8 = 0 THEN 500 ELSE 200 END, (i * 104729) %% 5000000,
	i %% 2000, i %% 700, i %% 2000 + i %% 700, (i %% 2700) * 0.00001, CASE i %% 3 WHEN 0 THEN 'HIT' WHEN 1 THEN 'MISS' ELSE '' END,
	i %% 3, i %% 2, i %% 11 = 0, '{"team":"t' || (i %% 9) || '","_user":"u' || (i %% 1000) || '","env":"prod"}'
FROM c`, benchLogsEnd.UnixMicro(), step),
			// The rollups, as migration 0007 fills them from the records
			// there (AddLogs, which the INSERT above goes around, keeps
			// them afterwards).
			`INSERT INTO log_hours
SELECT workspace_id, time_us / 3600000000 * 3600000000, status, provider, model, COUNT(*), SUM(status >= 400), SUM(rescued AND fallback_index <= 0),
	SUM(rescued AND fallback_index > 0), SUM(cache_status = 'HIT'), SUM(cache_status IN ('MISS', 'REFRESH')),
	SUM(CASE WHEN cache_status = 'HIT' THEN latency_us ELSE 0 END),
	SUM(CASE WHEN cache_status IN ('MISS', 'REFRESH') THEN latency_us ELSE 0 END),
	SUM(prompt_tokens), SUM(completion_tokens), SUM(total_tokens), SUM(cost), SUM(latency_us), MAX(time_us)
FROM request_logs GROUP BY 1, 2, 3, 4, 5`,
			`INSERT INTO log_metadata_hours
SELECT l.workspace_id, j.key, l.time_us / 3600000000 * 3600000000, j.value, COUNT(*), SUM(l.prompt_tokens),
	SUM(l.completion_tokens), SUM(l.total_tokens), SUM(l.cost), MAX(l.time_us)
FROM request_logs l, json_each(l.metadata) j WHERE j.type = 'text' GROUP BY 1, 2, 3, 4`,
			`INSERT INTO log_days_todo SELECT DISTINCT hour_us / 86400000000 * 86400000000 FROM log_hours`,
			`WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < 19999)
INSERT INTO feedback (id, workspace_id, trace_id, score, weight, created_us, updated_us)
SELECT 'fb-' || i, 'ws-1', 'trace-' || (i * 25), i % 21 - 10, (i % 5) * 0.25, 0, 0 FROM c`,
			`ANALYZE`,
		} {
			if _, err := db.Exec(q); err != nil {
				b.Fatalf("%.60s…: %v", q, err)
			}
		}
		db.Close()
		// The latency digests, as the store writes them in the
		// background.
		s, err = sqlstore.Open(context.Background(), tmp, sqlstore.Options{MasterKey: testKey})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.CompactLogs(context.Background()); err != nil {
			b.Fatal(err)
		}
		s.Close()
		if err := os.Rename(tmp, cached); err != nil {
			b.Fatal(err)
		}
		b.Logf("made %s in %v", cached, time.Since(start))
	}
	path := filepath.Join(b.TempDir(), "gateway.db")
	data, err := os.ReadFile(cached)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkAnalyticsMillionLogs times GET /analytics/graphs/requests and
// GET /analytics/groups/metadata/team through a gateway over a SQLite
// store of 1,000,000 request logs, over the 30 days that hold them all
// (daily buckets), and over the last day.
func BenchmarkAnalyticsMillionLogs(b *testing.B) {
	s := openStore(b, millionLogs(b), sqlstore.Options{})
	ctx := context.Background()
	now := time.Now().UTC()
	if err := s.CreateAPIKey(ctx, &gateway.APIKey{ID: "key-admin", Digest: gateway.HashAPIKey(cpAdminKey), WorkspaceID: "ws-1",
		Role: gateway.RoleAdmin, CreatedAt: now, UpdatedAt: now}); err != nil {
		b.Fatal(err)
	}
	g := gateway.New(gateway.Options{Keys: s})
	observe.Mount(g, observe.Options{Logs: s, Feedback: s})
	srv := httptest.NewServer(g)
	b.Cleanup(func() { srv.Close(); g.Close() })
	window := func(d time.Duration) string {
		return "time_of_generation_min=" + url.QueryEscape(benchLogsEnd.Add(-d).Format(time.RFC3339)) +
			"&time_of_generation_max=" + url.QueryEscape(benchLogsEnd.Format(time.RFC3339))
	}
	for _, c := range []struct{ name, path string }{
		{"requests/30d", "/v1/analytics/graphs/requests?" + window(30*24*time.Hour)},
		{"requests/1d", "/v1/analytics/graphs/requests?" + window(24*time.Hour)},
		{"requests/30d-status500", "/v1/analytics/graphs/requests?status_code=500&" + window(30*24*time.Hour)},
		{"metadata-team/30d", "/v1/analytics/groups/metadata/team?" + window(30*24*time.Hour)},
		{"metadata-team/1d", "/v1/analytics/groups/metadata/team?" + window(24*time.Hour)},
		{"metadata-user/30d", "/v1/analytics/groups/metadata/_user?" + window(30*24*time.Hour)},
		// Beyond the rollups: percentiles, distinct users, status codes.
		{"latency/30d", "/v1/analytics/graphs/latency?" + window(30*24*time.Hour)},
		{"latency/1d", "/v1/analytics/graphs/latency?" + window(24*time.Hour)},
		{"users/30d", "/v1/analytics/graphs/users?" + window(30*24*time.Hour)},
		{"errors-status-codes/30d", "/v1/analytics/graphs/errors/status-codes?" + window(30*24*time.Hour)},
		{"cache-hit-rate/30d", "/v1/analytics/graphs/cache/hit-rate?" + window(30*24*time.Hour)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0, n := cpuTime(b), 0
			for b.Loop() {
				n++
				req, _ := http.NewRequest("GET", srv.URL+c.path, nil)
				req.Header.Set(gateway.HeaderAPIKey, cpAdminKey)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					b.Fatalf("%d %s", res.StatusCode, body)
				}
			}
			// The machine may be shared: CPU time says what a query costs.
			b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/1000/float64(n), "cpu-ms/op")
		})
	}
}

// TestExplainAnalyticsMillionLogs logs SQLite's query plans of the
// benchmark's queries (go test -run ExplainAnalytics -v), on the
// benchmark's database when it is cached, else on an empty one.
func TestExplainAnalyticsMillionLogs(t *testing.T) {
	dsn := filepath.Join(os.TempDir(), "gateway-analytics-bench", "v"+strconv.Itoa(sqlstore.SchemaVersion)+"-digests.db")
	if _, err := os.Stat(dsn); err != nil {
		dsn = sqliteDSN(t)
	}
	s := openStore(t, dsn, sqlstore.Options{})
	q := observe.Query{WorkspaceID: "ws-1", Start: benchLogsEnd.Add(-30 * 24 * time.Hour), End: benchLogsEnd}
	meta := &observe.Aggregation{Query: q, GroupBy: []observe.Dimension{observe.DimMetadata}, MetadataKey: "team",
		Measures: observe.MeasureCost | observe.MeasureTokens | observe.MeasureFeedback | observe.MeasureLastSeen}
	for _, a := range []*observe.Aggregation{
		{Query: q},
		{Query: q, GroupBy: []observe.Dimension{observe.DimTime}, Bucket: 24 * time.Hour},
		meta,
	} {
		ctx := context.Background()
		rollup, err := s.ExplainRollup(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		records, err := s.ExplainAggregate(ctx, a, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("group by %v: whole hours, from the rollups:\n%sthe records (the ends of the window, and without rollups):\n%s",
			a.GroupBy, rollup, records)
	}
	plan, err := s.ExplainAggregate(context.Background(), meta, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the feedback of metadata groups, from the records with feedback:\n%s", plan)
}
