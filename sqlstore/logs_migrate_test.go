package sqlstore_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
	"github.com/modelgateway/gateway/sqlstore"
)

// TestLogSchemaV4KeepsV3Logs: a database at schema version 3 holding
// request logs (metadata in log_metadata too) is migrated with every
// record kept, and the metadata filter finds them in the JSON object.
func TestLogSchemaV4KeepsV3Logs(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		db := rawDB(t, dsn)
		dir := filepath.Join("migrations", "sqlite")
		if isPostgres(dsn) {
			dir = filepath.Join("migrations", "postgres")
		}
		if _, err := db.Exec(`CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)`); err != nil {
			t.Fatal(err)
		}
		for v, name := range []string{"0001_init.sql", "0002_control_plane.sql", "0003_request_logs.sql"} {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(string(b)); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if _, err := db.Exec(rebind(dsn, `INSERT INTO schema_version (version, applied_at) VALUES ($1, 'then')`), v+1); err != nil {
				t.Fatal(err)
			}
		}
		end := time.Now().UTC().Add(-72 * time.Hour).Truncate(time.Second) // days that ended
		recs := genLogs(40, end, 9)
		for _, r := range recs {
			r.Ingress, r.SkippedTargets, r.TrippedTargets = "", nil, nil // columns schema version 3 has not
			md := "{}"
			if r.Metadata != nil {
				md = `{"env":"` + r.Metadata["env"] + `","team":"` + r.Metadata["team"] + `"}`
			}
			if _, err := db.Exec(rebind(dsn, `INSERT INTO request_logs (id, time_us, trace_id, workspace_id, key_id, virtual_key,
	config_id, provider, model, method, path, query, status, latency_us, ttfb_us, bytes_in, bytes_out, prompt_tokens,
	completion_tokens, total_tokens, cached_prompt_tokens, cost, cost_unknown, cache_status, attempts, fallback_index,
	rescued, error_code, aborted, metadata)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25,
	$26, $27, $28, $29, $30)`), r.ID, r.Time.UnixMicro(), r.TraceID, r.WorkspaceID, r.KeyID, r.VirtualKey, r.ConfigID,
				r.Provider, r.Model, r.Method, r.Path, r.Query, r.Status, r.Latency.Microseconds(), r.TTFB.Microseconds(),
				r.BytesIn, r.BytesOut, r.PromptTokens, r.CompletionTokens, r.TotalTokens, r.CachedPromptTokens, r.Cost,
				r.CostUnknown, string(r.CacheStatus), r.Attempts, r.FallbackIndex, r.Rescued, r.ErrorCode, r.Aborted, md); err != nil {
				t.Fatal(err)
			}
			for k, v := range r.Metadata {
				if _, err := db.Exec(rebind(dsn, `INSERT INTO log_metadata (log_id, key, value) VALUES ($1, $2, $3)`), r.ID, k, v); err != nil {
					t.Fatal(err)
				}
			}
		}
		ref := memstore.New()
		if err := ref.AddLogs(ctx, recs); err != nil {
			t.Fatal(err)
		}
		s := openStore(t, dsn, sqlstore.Options{})
		for _, q := range []observe.Query{{}, {Metadata: map[string]string{"team": "t1"}}, {WorkspaceID: "ws-2", Limit: 5}} {
			want, _ := ref.Logs(ctx, &q)
			got, err := s.Logs(ctx, &q)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("after the migration, query %+v (-want +got):\n%s", q, diff)
			}
		}
		if isPostgres(dsn) {
			return
		}
		// SQLite's rollups are filled from the migrated records: the
		// hourly ones by the migration, the digests and daily ones by
		// CompactLogs (the store's, or this one), from the days the
		// migration put on its to-do list: every day of the records.
		if err := s.CompactLogs(ctx); err != nil {
			t.Fatal(err)
		}
		days := map[int64]bool{}
		for _, r := range recs {
			days[r.Time.Truncate(24*time.Hour).UnixMicro()] = true
		}
		var todo, done int
		if err := db.QueryRow(`SELECT (SELECT COUNT(*) FROM log_days_todo), (SELECT COUNT(*) FROM log_days_done)`).Scan(&todo, &done); err != nil ||
			todo != 0 || done != len(days) {
			t.Errorf("%d days to do and %d done (%v), want none and the %d of the records", todo, done, err, len(days))
		}
		a := &observe.Aggregation{Query: observe.Query{Start: end.Add(-48 * time.Hour), End: end.Add(48 * time.Hour)},
			GroupBy: []observe.Dimension{observe.DimTime}, Bucket: 24 * time.Hour,
			Measures: observe.MeasureLatency | observe.MeasureTokens | observe.MeasureErrors}
		want, _ := ref.AggregateLogs(ctx, a)
		got, err := s.AggregateLogs(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("daily latency and sums after the migration (-records +rollups):\n%s", diff)
		}
	})
}
