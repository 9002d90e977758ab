package sqlstore_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
	"github.com/modelgateway/gateway/sqlstore"
)

// exportStores is what the export tests need of a store.
type exportStores interface {
	gateway.KeyStore
	admin.KeyStore
	observe.Store
	observe.ExportStore
}

var (
	_ exportStores = (*sqlstore.Store)(nil)
	_ exportStores = (*memstore.Store)(nil)
)

// TestLogExportStoreContract holds every LogExportStore to the same
// answers: conflicts, compare-and-swap, workspaces and content.
func TestLogExportStoreContract(t *testing.T) {
	each := func(t *testing.T, f func(t *testing.T, s observe.ExportStore)) {
		t.Run("memory", func(t *testing.T) { f(t, memstore.New()) })
		eachBackend(t, func(t *testing.T, dsn string) { f(t, openStore(t, dsn, sqlstore.Options{})) })
	}
	each(t, func(t *testing.T, s observe.ExportStore) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Microsecond)
		a := &observe.Export{ID: "exp-a", WorkspaceID: "ws-1", CreatedBy: "key-admin", Filters: json.RawMessage(`{"status_code":"200"}`),
			Fields: []string{"id", "cost"}, Status: observe.ExportDraft, Description: "draft", Total: 3, CreatedAt: now, UpdatedAt: now}
		b := &observe.Export{ID: "exp-b", Filters: json.RawMessage(`{}`), Fields: []string{"id"}, Status: observe.ExportDraft,
			CreatedAt: now.Add(time.Second), UpdatedAt: now.Add(time.Second)}
		for _, e := range []*observe.Export{a, b} {
			if err := s.CreateLogExport(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.CreateLogExport(ctx, a); !errors.Is(err, gateway.ErrConflict) {
			t.Errorf("second create: %v, want ErrConflict", err)
		}
		got, err := s.LogExport(ctx, "ws-1", "exp-a")
		if err != nil || !cmp.Equal(got, a) {
			t.Fatalf("LogExport = %+v, %v; want %+v", got, err, a)
		}
		if _, err := s.LogExport(ctx, "ws-2", "exp-a"); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("another workspace's export: %v, want ErrNotFound", err)
		}
		for _, c := range []struct {
			ws   string
			want []string
		}{{"", []string{"exp-b", "exp-a"}}, {"ws-1", []string{"exp-a"}}, {"ws-2", nil}} {
			list, err := s.LogExports(ctx, c.ws)
			var ids []string
			for _, e := range list {
				ids = append(ids, e.ID)
			}
			if err != nil || !cmp.Equal(ids, c.want) {
				t.Errorf("LogExports(%q) = %v, %v; want %v", c.ws, ids, err, c.want)
			}
		}
		if _, err := s.LogExportContent(ctx, "", "exp-a"); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("content of a draft: %v, want ErrNotFound", err)
		}
		next := *a
		next.Status, next.UpdatedAt = observe.ExportInProgress, now.Add(time.Millisecond)
		if err := s.UpdateLogExport(ctx, a, &next, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.UpdateLogExport(ctx, a, &next, nil); !errors.Is(err, gateway.ErrConflict) {
			t.Errorf("update from a stale read: %v, want ErrConflict", err)
		}
		done := next
		done.Status, done.Total, done.UpdatedAt = observe.ExportSuccess, 2, now.Add(2*time.Millisecond)
		content := []byte("\x1f\x8b not really gzip, opaque to the store")
		if err := s.UpdateLogExport(ctx, &next, &done, content); err != nil {
			t.Fatal(err)
		}
		if got, err := s.LogExportContent(ctx, "ws-1", "exp-a"); err != nil || !bytes.Equal(got, content) {
			t.Errorf("content = %q, %v", got, err)
		}
		if _, err := s.LogExportContent(ctx, "ws-2", "exp-a"); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("another workspace's content: %v, want ErrNotFound", err)
		}
		if got, _ := s.LogExport(ctx, "", "exp-a"); !cmp.Equal(got, &done) {
			t.Errorf("after success: %+v, want %+v", got, done)
		}
		gone := &observe.Export{ID: "nope", UpdatedAt: now}
		if err := s.UpdateLogExport(ctx, gone, gone, nil); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("update of an unknown export: %v, want ErrNotFound", err)
		}
	})
}

// exportGateway serves a gateway over s (logs as its log store when not
// nil), and returns its URL and its observability routes.
func exportGateway(t *testing.T, s exportStores, logs observe.Store) (string, *observe.Routes) {
	t.Helper()
	if logs == nil {
		logs = s
	}
	g := gateway.New(gateway.Options{Keys: s, LogSink: &gateway.LogBuffer{}})
	rs := observe.Mount(g, observe.Options{Logs: logs, Exports: s})
	srv := httptest.NewServer(g)
	t.Cleanup(func() { srv.Close(); rs.Close(); g.Close() })
	return srv.URL, rs
}

// addExportKeys stores the admin keys of ws-1 and ws-2.
func addExportKeys(t *testing.T, s admin.KeyStore) {
	t.Helper()
	now := time.Now().UTC()
	for _, k := range []gateway.APIKey{
		{ID: "key-admin", Digest: gateway.HashAPIKey(cpAdminKey), WorkspaceID: "ws-1", Role: gateway.RoleAdmin, CreatedAt: now, UpdatedAt: now},
		{ID: "key-admin-2", Digest: gateway.HashAPIKey(cpAdmin2Key), WorkspaceID: "ws-2", Role: gateway.RoleAdmin, CreatedAt: now, UpdatedAt: now},
	} {
		if err := s.CreateAPIKey(context.Background(), &k); err != nil {
			t.Fatal(err)
		}
	}
}

// exportDo sends a request with cpAdminKey (or key) and decodes a 200
// answer into v.
func exportDo(t *testing.T, base, key, method, path, body string, v any) (int, []byte) {
	t.Helper()
	st, b := doTo(t, base, nil, key, method, path, body)
	if st == 200 && v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return st, b
}

// runExport creates an export of filters and fields on base, starts it,
// waits for it to end (polling through poll, which may be another
// gateway on the same database) and returns its status and records.
func runExport(t *testing.T, base, poll, filters string, fields []string) (string, []map[string]any) {
	t.Helper()
	fj, _ := json.Marshal(fields)
	var created struct{ ID string }
	if st, b := exportDo(t, base, cpAdminKey, "POST", "/v1/logs/exports", `{"filters":`+filters+`,"requested_data":`+string(fj)+`}`, &created); st != 200 {
		t.Fatalf("create: %d %s", st, b)
	}
	if st, b := exportDo(t, base, cpAdminKey, "POST", "/v1/logs/exports/"+created.ID+"/start", "", nil); st != 200 {
		t.Fatalf("start: %d %s", st, b)
	}
	var it struct{ Status, Description string }
	waitFor(t, 30*time.Second, "the export to end", func() bool {
		exportDo(t, poll, cpAdminKey, "GET", "/v1/logs/exports/"+created.ID, "", &it)
		return it.Status == "success" || it.Status == "failed" || it.Status == "stopped"
	})
	if it.Status != "success" {
		t.Fatalf("export ended %s: %s", it.Status, it.Description)
	}
	var dl struct {
		SignedURL string `json:"signed_url"`
	}
	if st, b := exportDo(t, poll, cpAdminKey, "GET", "/v1/logs/exports/"+created.ID+"/download", "", &dl); st != 200 {
		t.Fatalf("download: %d %s", st, b)
	}
	u, err := url.Parse(dl.SignedURL)
	if err != nil || u.Host != "" {
		t.Fatalf("signed_url %q, want a relative URL (no Options.PublicURL)", dl.SignedURL)
	}
	st, b := doTo(t, poll, nil, cpAdminKey, "GET", u.Path, "")
	if st != 200 {
		t.Fatalf("content: %d %s", st, b)
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return created.ID, out
}

// listLogs returns every record GET /logs answers for query, with only
// fields.
func listLogs(t *testing.T, base, query string, fields []string) []map[string]any {
	t.Helper()
	var out []map[string]any
	after := ""
	for {
		q := query + "&page_size=100"
		if after != "" {
			q += "&after=" + url.QueryEscape(after)
		}
		var page struct {
			Data    []map[string]any `json:"data"`
			HasMore bool             `json:"has_more"`
			LastID  string           `json:"last_id"`
		}
		if st, b := exportDo(t, base, cpAdminKey, "GET", "/v1/logs?"+q, "", &page); st != 200 {
			t.Fatalf("GET /logs?%s: %d %s", q, st, b)
		}
		for _, rec := range page.Data {
			m := map[string]any{}
			for _, f := range fields {
				if v, ok := rec[f]; ok {
					m[f] = v
				}
			}
			out = append(out, m)
		}
		if !page.HasMore {
			return out
		}
		after = page.LastID
	}
}

// TestLogExportsOnEveryStore runs export lifecycles through HTTP on a
// memstore.Store, SQLite and Postgres: the downloaded records are those GET
// /logs lists for the same filters, a finished export is not restarted,
// and another workspace's export is 404.
func TestLogExportsOnEveryStore(t *testing.T) {
	run := func(t *testing.T, s exportStores) {
		addExportKeys(t, s)
		if err := s.AddLogs(context.Background(), genLogs(1300, time.Now().Add(-time.Minute), 11)); err != nil {
			t.Fatal(err)
		}
		base, _ := exportGateway(t, s, nil)
		fields := []string{"id", "created_at", "trace_id", "ai_org", "ai_model", "response_status_code", "req_units",
			"total_units", "cost", "cache_status", "metadata", "workspace_id", "is_success"}
		for _, c := range []struct{ filters, query string }{
			{`{}`, ""},
			{`{"status_code":"200,429","metadata":{"env":"prod"}}`, "status_code=200,429&metadata=" + url.QueryEscape(`{"env":"prod"}`)},
			{`{"ai_org_model":"openai__gpt-4o","prompt_token_min":100,"cost_max":1.5,"trace_id":"trace-3,trace-4"}`,
				"ai_org_model=openai__gpt-4o&prompt_token_min=100&cost_max=1.5&trace_id=trace-3,trace-4"},
		} {
			id, got := runExport(t, base, base, c.filters, fields)
			want := listLogs(t, base, c.query, fields)
			if len(want) == 0 || !cmp.Equal(got, want) {
				t.Errorf("filters %s: exported %d records, GET /logs lists %d:\n%s", c.filters, len(got), len(want), cmp.Diff(want, got))
			}
			if st, b := exportDo(t, base, cpAdminKey, "POST", "/v1/logs/exports/"+id+"/start", "", nil); st != 409 || !strings.Contains(string(b), "cannot be restarted") {
				t.Errorf("restart: %d %s", st, b)
			}
			for _, p := range []string{"", "/download", "/content"} {
				if st, b := exportDo(t, base, cpAdmin2Key, "GET", "/v1/logs/exports/"+id+p, "", nil); st != 404 {
					t.Errorf("ws-2 GET %s: %d %s", p, st, b)
				}
			}
		}
	}
	t.Run("memory", func(t *testing.T) { run(t, memstore.New()) })
	eachBackend(t, func(t *testing.T, dsn string) { run(t, openStore(t, dsn, sqlstore.Options{})) })
}

// gatedLogs is a log store whose Logs, once armed, signals entered and
// waits for gate (or the end of its context).
type gatedLogs struct {
	observe.Store
	armed, entered, gate chan struct{}
}

func (g *gatedLogs) Logs(ctx context.Context, q *observe.Query) ([]gateway.RequestLog, error) {
	select {
	case <-g.armed:
		select {
		case g.entered <- struct{}{}:
		default:
		}
		select {
		case <-g.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	default:
	}
	return g.Store.Logs(ctx, q)
}

// TestLogExportsAcrossReplicas: two gateways on one database see each
// other's jobs: b sees a's export run and serves its download, and b's
// cancel stops a job that a runs.
func TestLogExportsAcrossReplicas(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		sa := openStore(t, dsn, sqlstore.Options{})
		addExportKeys(t, sa)
		sb := openStore(t, dsn, sqlstore.Options{}) // opened after the keys: its snapshot holds them
		if err := sa.AddLogs(context.Background(), genLogs(700, time.Now().Add(-time.Minute), 5)); err != nil {
			t.Fatal(err)
		}
		gl := &gatedLogs{Store: sa, armed: make(chan struct{}), entered: make(chan struct{}, 1), gate: make(chan struct{})}
		a, ga := exportGateway(t, sa, gl)
		b, _ := exportGateway(t, sb, nil)

		fields := []string{"id", "trace_id", "response_status_code"}
		_, got := runExport(t, a, b, `{"status_code":"500"}`, fields)
		if want := listLogs(t, b, "status_code=500", fields); len(want) == 0 || !cmp.Equal(got, want) {
			t.Errorf("downloaded from b %d records of a's export, want %d", len(got), len(want))
		}

		var created struct{ ID string }
		exportDo(t, a, cpAdminKey, "POST", "/v1/logs/exports", `{"filters":{},"requested_data":["id"]}`, &created)
		close(gl.armed)
		if st, body := exportDo(t, a, cpAdminKey, "POST", "/v1/logs/exports/"+created.ID+"/start", "", nil); st != 200 {
			t.Fatalf("start on a: %d %s", st, body)
		}
		<-gl.entered // a's job is reading the logs
		var it struct{ Status string }
		if exportDo(t, b, cpAdminKey, "GET", "/v1/logs/exports/"+created.ID, "", &it); it.Status != "in_progress" {
			t.Fatalf("b sees a's running export as %s", it.Status)
		}
		if st, body := exportDo(t, b, cpAdminKey, "POST", "/v1/logs/exports/"+created.ID+"/cancel", "", nil); st != 200 {
			t.Fatalf("cancel on b: %d %s", st, body)
		}
		close(gl.gate) // a's job goes on, and must not overwrite the cancel…
		ga.Close()     // …by the time it has ended (Close waits for it)
		for _, base := range []string{b} {
			if exportDo(t, base, cpAdminKey, "GET", "/v1/logs/exports/"+created.ID, "", &it); it.Status != "stopped" {
				t.Errorf("cancelled export reads %s", it.Status)
			}
			if st, _ := exportDo(t, base, cpAdminKey, "GET", "/v1/logs/exports/"+created.ID+"/content", "", nil); st != 409 {
				t.Errorf("content of a cancelled export: %d, want 409", st)
			}
		}
	})
}

// BenchmarkLogExportSQLite runs an export of 20,000 records of 12 fields
// on SQLite through HTTP, from create to the end of the download, and
// reports records/s.
func BenchmarkLogExportSQLite(b *testing.B) {
	s := openStore(b, sqliteDSN(b), sqlstore.Options{})
	now := time.Now().UTC()
	if err := s.CreateAPIKey(context.Background(), &gateway.APIKey{ID: "key-org", Digest: gateway.HashAPIKey(cpOrgKey),
		Type: gateway.KeyOrganisation, Role: gateway.RoleAdmin, CreatedAt: now, UpdatedAt: now}); err != nil {
		b.Fatal(err)
	}
	const n = 20000
	recs := genLogs(n, now.Add(-time.Minute), 3)
	for len(recs) > 0 {
		chunk := recs[:min(len(recs), 1000)]
		recs = recs[len(chunk):]
		if err := s.AddLogs(context.Background(), chunk); err != nil {
			b.Fatal(err)
		}
	}
	g := gateway.New(gateway.Options{Keys: s, LogSink: &gateway.LogBuffer{}})
	rs := observe.Mount(g, observe.Options{Logs: s, Exports: s})
	srv := httptest.NewServer(g)
	b.Cleanup(func() { srv.Close(); rs.Close(); g.Close() })
	body := `{"filters":{},"requested_data":["id","created_at","trace_id","ai_org","ai_model","response_status_code",` +
		`"req_units","res_units","total_units","cost","response_time","metadata"]}`
	b.ReportAllocs()
	for b.Loop() {
		var created struct{ ID string }
		st, out := benchDo(b, srv.URL, cpOrgKey, "POST", "/v1/logs/exports", body)
		if st != 200 || json.Unmarshal(out, &created) != nil {
			b.Fatalf("create: %d %s", st, out)
		}
		benchDo(b, srv.URL, cpOrgKey, "POST", "/v1/logs/exports/"+created.ID+"/start", "")
		for {
			var it struct{ Status string }
			_, out := benchDo(b, srv.URL, cpOrgKey, "GET", "/v1/logs/exports/"+created.ID, "")
			json.Unmarshal(out, &it)
			if it.Status == "success" {
				break
			}
			if it.Status != "in_progress" {
				b.Fatalf("export %s", it.Status)
			}
			time.Sleep(time.Millisecond)
		}
		st, out = benchDo(b, srv.URL, cpOrgKey, "GET", "/v1/logs/exports/"+created.ID+"/content", "")
		if st != 200 || bytes.Count(out, []byte("\n")) != n {
			b.Fatalf("content: %d, %d lines", st, bytes.Count(out, []byte("\n")))
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
}

// benchDo sends a request with key and returns the status and body.
func benchDo(b *testing.B, base, key, method, path, body string) (int, []byte) {
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set(gateway.HeaderAPIKey, key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		b.Fatal(err)
	}
	return res.StatusCode, out
}

// TestLogExportsRetention: DeleteLogsBefore deletes the exports created
// before its time, as it does the records they copy, but for one still
// running.
func TestLogExportsRetention(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn, sqlstore.Options{})
		now := time.Now().UTC().Truncate(time.Microsecond)
		for _, e := range []*observe.Export{
			{ID: "old-done", Status: observe.ExportSuccess, CreatedAt: now.Add(-48 * time.Hour)},
			{ID: "old-draft", Status: observe.ExportDraft, CreatedAt: now.Add(-48 * time.Hour)},
			{ID: "old-running", Status: observe.ExportInProgress, CreatedAt: now.Add(-48 * time.Hour)},
			{ID: "new-done", Status: observe.ExportSuccess, CreatedAt: now},
		} {
			e.Filters, e.Fields, e.UpdatedAt = json.RawMessage(`{}`), []string{"id"}, e.CreatedAt
			if err := s.CreateLogExport(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.DeleteLogsBefore(ctx, now.Add(-24*time.Hour)); err != nil {
			t.Fatal(err)
		}
		list, err := s.LogExports(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range list {
			ids = append(ids, e.ID)
		}
		slices.Sort(ids)
		if want := []string{"new-done", "old-running"}; !slices.Equal(ids, want) {
			t.Errorf("exports after retention: %v, want %v", ids, want)
		}
	})
}
