package observe_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
)

// Keys of the export tests, beside coreKey (member of ws-1) and
// coreAdminKey (admin of ws-1).
const (
	expAdmin2Key   = "gw-exp-admin-2"           // admin of ws-2
	expOrgKey      = "gw-exp-org"               // organisation admin
	expReaderKey   = "gw-exp-reader"            // logs.read only, ws-1
	expNoWSKey     = "gw-exp-no-ws"             // admin of no workspace
	expWriterKey   = "gw-exp-writer"            // logs.write only, ws-1
	expLogsPerTest = observe.ExportBatch*2 + 37 // enough for the job to page three times
)

// newExportsEnv is a gateway over a memstore.Store keeping request logs and
// log exports, with logs (the memstore.Store when nil) as its Store.
func newExportsEnv(t *testing.T, logs observe.Store) *coreEnv {
	t.Helper()
	e := newCoreEnv(t, nil, func(o *Options) {
		ms := o.Keys.(*memstore.Store)
		o.Logs, o.LogExports = ms, ms
		if logs != nil {
			o.Logs = logs
		}
	})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-admin-2", Digest: gateway.HashAPIKey(expAdmin2Key), WorkspaceID: "ws-2", Role: gateway.RoleAdmin})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-org", Digest: gateway.HashAPIKey(expOrgKey), Type: gateway.KeyOrganisation, Role: gateway.RoleAdmin})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-reader", Digest: gateway.HashAPIKey(expReaderKey), WorkspaceID: "ws-1", Scopes: []gateway.Scope{gateway.ScopeLogsRead}})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-writer", Digest: gateway.HashAPIKey(expWriterKey), WorkspaceID: "ws-1", Scopes: []gateway.Scope{gateway.ScopeLogsWrite}})
	e.store.AddAPIKey(gateway.APIKey{ID: "key-no-ws", Digest: gateway.HashAPIKey(expNoWSKey), Role: gateway.RoleAdmin})
	return e
}

// addTestLogs stores n records per workspace ws-1 and ws-2, a second
// apart and ending a minute ago, varied in status, model, trace id and
// metadata.
func addTestLogs(t *testing.T, s observe.Store, n int) {
	t.Helper()
	base := time.Now().Add(-time.Minute - time.Duration(n)*time.Second).UTC()
	var recs []*gateway.RequestLog
	for _, ws := range []string{"ws-1", "ws-2"} {
		for i := range n {
			recs = append(recs, &gateway.RequestLog{
				ID: fmt.Sprintf("%s-%05d", ws, i), Time: base.Add(time.Duration(i) * time.Second), WorkspaceID: ws,
				TraceID: fmt.Sprintf("trace-%d", i%4), KeyID: "key-member", Provider: "openai",
				Model: []string{"gpt-4o", "gpt-4o-mini"}[i%2], Method: "POST", Path: "/v1/chat/completions",
				Status: []int{200, 200, 429, 500}[i%4], Latency: time.Duration(i) * time.Millisecond,
				PromptTokens: int64(i % 50), CompletionTokens: int64(i % 7), TotalTokens: int64(i%50 + i%7),
				Cost: float64(i%5) / 1000, Metadata: map[string]string{"team": fmt.Sprint("t", i%3), "env": "prod"},
				VirtualKey: []string{"", "vk-a"}[i%2], CacheStatus: []gateway.CacheStatus{"", gateway.CacheHit}[i%2],
			})
		}
	}
	if err := s.AddLogs(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
}

// sendJSON sends method with key and body (nil for none), and decodes a
// 200 answer into v; it returns the status and the body.
func (e *coreEnv) sendJSON(key, method, path string, body any, v any) (int, string) {
	e.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		r = strings.NewReader(string(b))
	}
	res := e.do(method, path, r, gateway.HeaderAPIKey+": "+key)
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode == 200 && v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			e.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return res.StatusCode, string(b)
}

// exportItem is the ExportItem answered by GET /logs/exports/{id}.
type exportItem struct {
	ID            string          `json:"id"`
	Object        string          `json:"object"`
	WorkspaceID   *string         `json:"workspace_id"`
	Filters       json.RawMessage `json:"filters"`
	RequestedData []string        `json:"requested_data"`
	Status        string          `json:"status"`
	Description   string          `json:"description"`
	Total         int64           `json:"total"`
	CreatedBy     string          `json:"created_by"`
	CreatedAt     time.Time       `json:"created_at"`
	LastUpdatedAt time.Time       `json:"last_updated_at"`
}

// createExport creates an export and returns its id and total.
func (e *coreEnv) createExport(key string, body any) (string, int64) {
	e.t.Helper()
	var got struct {
		ID     string `json:"id"`
		Total  int64  `json:"total"`
		Object string `json:"object"`
	}
	if st, b := e.sendJSON(key, "POST", "/v1/logs/exports", body, &got); st != 200 || got.ID == "" || got.Object != "export" {
		e.t.Fatalf("create export: %d %s", st, b)
	}
	return got.ID, got.Total
}

// waitExport polls the export until its status is final.
func (e *coreEnv) waitExport(key, id string) exportItem {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var it exportItem
		if st, b := e.sendJSON(key, "GET", "/v1/logs/exports/"+id, nil, &it); st != 200 {
			e.t.Fatalf("GET export: %d %s", st, b)
		}
		if observe.ExportStatus(it.Status).Final() {
			return it
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("export %s still %s", id, it.Status)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// downloadExport follows the download route's signed_url, without a
// key, and returns the JSON Lines, each decoded. The content route with
// key answers the same lines.
func (e *coreEnv) downloadExport(key, id string) []map[string]any {
	e.t.Helper()
	u := e.signedURL(key, id)
	if u.Host != "" || u.Path != "/v1/logs/exports/"+id+"/content" {
		e.t.Fatalf("signed_url %q, want a relative URL to the export's content (no Options.PublicURL)", u)
	}
	res := e.do("GET", u.RequestURI(), nil)
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/x-ndjson" {
		e.t.Fatalf("signed URL: %d %s %s", res.StatusCode, res.Header.Get("Content-Type"), body)
	}
	res = e.do("GET", u.Path, nil, gateway.HeaderAPIKey+": "+key)
	if withKey, _ := io.ReadAll(res.Body); res.StatusCode != 200 || string(withKey) != string(body) {
		e.t.Fatalf("content with the key: %d %s, want the signed URL's %s", res.StatusCode, withKey, body)
	}
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			e.t.Fatalf("line %d %q: %v", len(out)+1, sc.Text(), err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// signedURL returns the signed_url the download route answers key for
// export id, parsed; the request has headers ("Name: value"), among
// which Host sets the request's host.
func (e *coreEnv) signedURL(key, id string, headers ...string) *url.URL {
	e.t.Helper()
	req, err := http.NewRequest("GET", e.srv.URL+"/v1/logs/exports/"+id+"/download", nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set(gateway.HeaderAPIKey, key)
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		if req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v)); strings.EqualFold(k, "Host") {
			req.Host = strings.TrimSpace(v)
		}
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var dl struct {
		SignedURL string `json:"signed_url"`
	}
	if res.StatusCode != 200 || json.Unmarshal(b, &dl) != nil {
		e.t.Fatalf("download: %d %s", res.StatusCode, b)
	}
	if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
		e.t.Errorf("download: Cache-Control %q, want no-store", cc)
	}
	u, err := url.Parse(dl.SignedURL)
	if err != nil {
		e.t.Fatalf("signed_url %q: %v", dl.SignedURL, err)
	}
	return u
}

// listedLogs returns every record GET /logs answers for query, page after
// page, with only fields.
func (e *coreEnv) listedLogs(key, query string, fields []string) []map[string]any {
	e.t.Helper()
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
		if st, b := e.getJSON(key, "/v1/logs?"+q, &page); st != 200 {
			e.t.Fatalf("GET /logs?%s: %d %s", q, st, b)
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

func TestLogExportLifecycle(t *testing.T) {
	e := newExportsEnv(t, nil)
	addTestLogs(t, e.store, expLogsPerTest)
	fields := []string{"id", "trace_id", "created_at", "ai_model", "response_status_code", "cost", "metadata", "virtual_key", "cache_status", "workspace_id"}
	cases := []struct {
		name    string
		filters map[string]any
		query   string // the same filters, as GET /logs takes them
		skip    int
		limit   int
	}{
		{"every record", map[string]any{}, "", 0, -1},
		{"status and metadata", map[string]any{"status_code": "200,429", "metadata": map[string]string{"team": "t1"}},
			"status_code=200,429&metadata=" + url.QueryEscape(`{"team":"t1"}`), 0, -1},
		{"numbers as numbers", map[string]any{"status_code": 500, "prompt_token_min": 10, "cost_max": 0.2, "trace_id": "trace-3"},
			"status_code=500&prompt_token_min=10&cost_max=0.2&trace_id=trace-3", 0, -1},
		{"a page", map[string]any{"page_size": 100, "current_page": 2, "ai_org_model": "openai__gpt-4o"},
			"ai_org_model=openai__gpt-4o", 200, 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id, total := e.createExport(coreAdminKey, map[string]any{"filters": c.filters, "requested_data": fields})
			want := e.listedLogs(coreAdminKey, c.query, fields)
			if c.limit >= 0 {
				want = want[min(c.skip, len(want)):min(c.skip+c.limit, len(want))]
			}
			if len(want) == 0 {
				t.Fatal("the case selects no record")
			}
			if total != int64(len(want)) {
				t.Errorf("create: total %d, want %d", total, len(want))
			}
			var it exportItem
			if st, b := e.sendJSON(coreAdminKey, "GET", "/v1/logs/exports/"+id, nil, &it); st != 200 || it.Status != "draft" ||
				it.WorkspaceID == nil || *it.WorkspaceID != "ws-1" || it.CreatedBy != "key-admin" || it.Object != "export" ||
				!cmp.Equal(it.RequestedData, fields) {
				t.Fatalf("draft = %d %s", st, b)
			}
			if st, b := e.sendJSON(coreAdminKey, "GET", "/v1/logs/exports/"+id+"/download", nil, nil); st != 409 {
				t.Errorf("download of a draft: %d %s, want 409", st, b)
			}
			var task struct{ Message, Object string }
			if st, b := e.sendJSON(coreAdminKey, "POST", "/v1/logs/exports/"+id+"/start", nil, &task); st != 200 || task.Object != "export" {
				t.Fatalf("start: %d %s", st, b)
			}
			it = e.waitExport(coreAdminKey, id)
			if it.Status != "success" || it.Total != int64(len(want)) {
				t.Fatalf("export ended %s (%s), total %d; want success, %d", it.Status, it.Description, it.Total, len(want))
			}
			got := e.downloadExport(coreAdminKey, id)
			if !cmp.Equal(got, want) {
				t.Errorf("downloaded %d records, GET /logs lists %d; first difference:\n%s", len(got), len(want), cmp.Diff(want, got))
			}
			// A finished export is not run again, nor changed, nor cancelled.
			for _, r := range []struct{ method, path string }{
				{"POST", "/start"}, {"POST", "/cancel"}, {"PUT", ""},
			} {
				st, b := e.sendJSON(coreAdminKey, r.method, "/v1/logs/exports/"+id+r.path, map[string]any{"filters": map[string]any{}}, nil)
				if st != 409 || !strings.Contains(b, `"code":"conflict"`) || !strings.Contains(b, "success") {
					t.Errorf("%s %s of a finished export: %d %s, want 409 conflict naming its status", r.method, r.path, st, b)
				}
			}
			if again := e.downloadExport(coreAdminKey, id); !cmp.Equal(again, got) {
				t.Error("a second download differs from the first")
			}
		})
	}

	var list struct {
		Object string       `json:"object"`
		Total  int          `json:"total"`
		Data   []exportItem `json:"data"`
	}
	if st, b := e.sendJSON(coreAdminKey, "GET", "/v1/logs/exports?page_size=2", nil, &list); st != 200 || list.Object != "list" ||
		list.Total != len(cases) || len(list.Data) != 2 || list.Data[0].CreatedAt.Before(list.Data[1].CreatedAt) {
		t.Errorf("list = %d %s", st, b)
	}
}

func TestLogExportUpdateDraft(t *testing.T) {
	e := newExportsEnv(t, nil)
	addTestLogs(t, e.store, 40)
	id, total := e.createExport(coreAdminKey, map[string]any{"filters": map[string]any{}, "requested_data": []string{"id"}})
	if total != 40 {
		t.Fatalf("total %d, want 40", total)
	}
	var got struct {
		ID    string `json:"id"`
		Total int64  `json:"total"`
	}
	if st, b := e.sendJSON(coreAdminKey, "PUT", "/v1/logs/exports/"+id, map[string]any{
		"filters": map[string]any{"status_code": "500"}, "requested_data": []string{"id", "response_status_code"},
	}, &got); st != 200 || got.ID != id || got.Total != 10 {
		t.Fatalf("PUT: %d %s, want total 10", st, b)
	}
	e.sendJSON(coreAdminKey, "POST", "/v1/logs/exports/"+id+"/start", nil, nil)
	if it := e.waitExport(coreAdminKey, id); it.Status != "success" {
		t.Fatalf("status %s", it.Status)
	}
	for _, rec := range e.downloadExport(coreAdminKey, id) {
		if len(rec) != 2 || rec["response_status_code"] != float64(500) {
			t.Errorf("record %v: want only id and response_status_code 500", rec)
		}
	}
}

// gatedLogs is a Store whose Logs, once armed, says it was called and
// waits for the gate to open (or its context to end).
type gatedLogs struct {
	*memstore.Store
	armed   chan struct{} // closed to arm
	entered chan struct{} // receives once per gated call
	gate    chan struct{} // closed to let calls through
}

func newGatedLogs() *gatedLogs {
	return &gatedLogs{Store: nil, armed: make(chan struct{}), entered: make(chan struct{}, 16), gate: make(chan struct{})}
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

func TestLogExportCancel(t *testing.T) {
	gl := newGatedLogs()
	e := newExportsEnv(t, gl)
	gl.Store = e.store
	addTestLogs(t, e.store, 20)
	id, _ := e.createExport(coreAdminKey, map[string]any{"filters": map[string]any{}, "requested_data": []string{"id"}})
	close(gl.armed)
	if st, b := e.sendJSON(coreAdminKey, "POST", "/v1/logs/exports/"+id+"/start", nil, nil); st != 200 {
		t.Fatalf("start: %d %s", st, b)
	}
	<-gl.entered // the job is reading the logs
	var it exportItem
	if e.sendJSON(coreAdminKey, "GET", "/v1/logs/exports/"+id, nil, &it); it.Status != "in_progress" {
		t.Fatalf("running export is %s", it.Status)
	}
	if st, b := e.sendJSON(coreAdminKey, "POST", "/v1/logs/exports/"+id+"/start", nil, nil); st != 409 || !strings.Contains(b, "already running") {
		t.Errorf("second start: %d %s", st, b)
	}
	if st, b := e.sendJSON(coreAdminKey, "POST", "/v1/logs/exports/"+id+"/cancel", nil, nil); st != 200 {
		t.Fatalf("cancel: %d %s", st, b)
	}
	close(gl.gate)
	e.routes.WaitExports() // the job has ended
	if it = e.waitExport(coreAdminKey, id); it.Status != "stopped" {
		t.Fatalf("cancelled export is %s (%s)", it.Status, it.Description)
	}
	for _, p := range []string{"/download", "/content"} {
		if st, b := e.sendJSON(coreAdminKey, "GET", "/v1/logs/exports/"+id+p, nil, nil); st != 409 {
			t.Errorf("GET %s of a stopped export: %d %s", p, st, b)
		}
	}
	if st, b := e.sendJSON(coreAdminKey, "POST", "/v1/logs/exports/"+id+"/start", nil, nil); st != 409 || !strings.Contains(b, "cannot be restarted") {
		t.Errorf("restart of a stopped export: %d %s", st, b)
	}

	// A draft may be cancelled too; it never runs.
	id2, _ := e.createExport(coreAdminKey, map[string]any{"filters": map[string]any{}, "requested_data": []string{"id"}})
	if st, b := e.sendJSON(coreAdminKey, "POST", "/v1/logs/exports/"+id2+"/cancel", nil, nil); st != 200 {
		t.Fatalf("cancel draft: %d %s", st, b)
	}
	if st, _ := e.sendJSON(coreAdminKey, "POST", "/v1/logs/exports/"+id2+"/start", nil, nil); st != 409 {
		t.Errorf("start of a cancelled draft: %d, want 409", st)
	}
}

func TestLogExportGatewayClose(t *testing.T) {
	gl := newGatedLogs()
	e := newExportsEnv(t, gl)
	gl.Store = e.store
	addTestLogs(t, e.store, 5)
	id, _ := e.createExport(coreAdminKey, map[string]any{"filters": map[string]any{}, "requested_data": []string{"id"}})
	close(gl.armed)
	e.sendJSON(coreAdminKey, "POST", "/v1/logs/exports/"+id+"/start", nil, nil)
	<-gl.entered
	e.routes.Close() // cancels the job, and waits for it
	got, err := e.store.LogExport(context.Background(), "", id)
	if err != nil || got.Status != observe.ExportFailed || !strings.Contains(got.Description, "stopped") {
		t.Fatalf("export after Close = %+v, %v; want failed", got, err)
	}
}

func TestLogExportStale(t *testing.T) {
	e := newExportsEnv(t, nil)
	long := time.Now().Add(-time.Hour).UTC().Truncate(time.Microsecond)
	if err := e.store.CreateLogExport(context.Background(), &observe.Export{ID: "stale", WorkspaceID: "ws-1", Filters: json.RawMessage(`{}`),
		Fields: []string{"id"}, Status: observe.ExportInProgress, CreatedAt: long, UpdatedAt: long}); err != nil {
		t.Fatal(err)
	}
	var it exportItem
	if st, b := e.sendJSON(coreAdminKey, "GET", "/v1/logs/exports/stale", nil, &it); st != 200 || it.Status != "failed" {
		t.Fatalf("an export whose gateway went away: %d %s; want failed", st, b)
	}
}

func TestLogExportAccess(t *testing.T) {
	e := newExportsEnv(t, nil)
	addTestLogs(t, e.store, 10)
	body := map[string]any{"filters": map[string]any{}, "requested_data": []string{"id", "workspace_id"}}
	id, total := e.createExport(coreAdminKey, body)
	if total != 10 {
		t.Errorf("ws-1 export selects %d records, want ws-1's 10", total)
	}
	orgAll, orgTotal := e.createExport(expOrgKey, body)
	if orgTotal != 20 {
		t.Errorf("organisation export of every workspace selects %d, want 20", orgTotal)
	}
	for _, c := range []struct {
		name, key, method, path string
		want                    int
	}{
		{"other workspace reads", expAdmin2Key, "GET", "/" + id, 404},
		{"other workspace starts", expAdmin2Key, "POST", "/" + id + "/start", 404},
		{"other workspace cancels", expAdmin2Key, "POST", "/" + id + "/cancel", 404},
		{"other workspace downloads", expAdmin2Key, "GET", "/" + id + "/download", 404},
		{"other workspace content", expAdmin2Key, "GET", "/" + id + "/content", 404},
		{"other workspace updates", expAdmin2Key, "PUT", "/" + id, 404},
		{"workspace key, organisation's export", coreAdminKey, "GET", "/" + orgAll, 404},
		{"no workspace", expNoWSKey, "GET", "/" + id, 404},
		{"unknown id", coreAdminKey, "GET", "/nope", 404},
		{"unknown action", coreAdminKey, "GET", "/" + id + "/nope", 404},
		{"member lacks logs.read", coreKey, "GET", "", 403},
		{"member lacks logs.read to create", coreKey, "POST", "", 403},
		{"reader lacks logs.write", expReaderKey, "POST", "", 403},
		{"reader lacks logs.write to start", expReaderKey, "POST", "/" + id + "/start", 403},
		{"writer lacks logs.read", expWriterKey, "POST", "", 403},
		{"reader may read", expReaderKey, "GET", "/" + id, 200},
		{"organisation reads", expOrgKey, "GET", "/" + id, 200},
		{"other workspace named", coreAdminKey, "GET", "?workspace_id=ws-2", 403},
		{"method", coreAdminKey, "DELETE", "/" + id, 405},
		{"method on start", coreAdminKey, "GET", "/" + id + "/start", 405},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, b := e.sendJSON(c.key, c.method, "/v1/logs/exports"+c.path, body, nil)
			if st != c.want {
				t.Fatalf("%s %s: %d %s, want %d", c.method, c.path, st, b, c.want)
			}
			if st >= 400 {
				res := e.do(c.method, "/v1/logs/exports"+c.path, strings.NewReader("{}"), gateway.HeaderAPIKey+": "+c.key)
				decodeError(t, res)
			}
		})
	}
	var list struct {
		Total int          `json:"total"`
		Data  []exportItem `json:"data"`
	}
	if e.sendJSON(expAdmin2Key, "GET", "/v1/logs/exports", nil, &list); list.Total != 0 || len(list.Data) != 0 {
		t.Errorf("ws-2 lists %d exports, want none of ws-1's", list.Total)
	}
	if e.sendJSON(expOrgKey, "GET", "/v1/logs/exports?workspace_id=ws-1", nil, &list); list.Total != 1 {
		t.Errorf("organisation lists %d exports of ws-1, want 1", list.Total)
	}
	if e.sendJSON(expOrgKey, "GET", "/v1/logs/exports", nil, &list); list.Total != 2 {
		t.Errorf("organisation lists %d exports, want 2", list.Total)
	}
	// ws-1's export holds only ws-1's records.
	e.sendJSON(coreAdminKey, "POST", "/v1/logs/exports/"+id+"/start", nil, nil)
	e.waitExport(coreAdminKey, id)
	for _, rec := range e.downloadExport(coreAdminKey, id) {
		if rec["workspace_id"] != "ws-1" {
			t.Fatalf("ws-1's export holds %v", rec)
		}
	}
	if st, _ := e.sendJSON(expAdmin2Key, "GET", "/v1/logs/exports/"+id+"/content", nil, nil); st != 404 {
		t.Errorf("ws-2 reads ws-1's finished export: %d, want 404", st)
	}
}

func TestLogExportNotKept(t *testing.T) {
	e := newCoreEnv(t, nil, func(o *Options) { o.Logs = o.Keys.(*memstore.Store) })
	res := e.do("GET", "/v1/logs/exports", nil, gateway.HeaderAPIKey+": "+coreAdminKey)
	if res.StatusCode != 404 {
		t.Fatalf("without Options.Exports: %d, want 404", res.StatusCode)
	}
	decodeError(t, res)
}

// TestLogExportsAudited: an export's writes (create, start, and a refused
// cancel) are in the audit log, with the export's id; its reads are not.
func TestLogExportsAudited(t *testing.T) {
	e := newCoreEnv(t, nil, func(o *Options) {
		ms := o.Keys.(*memstore.Store)
		o.Logs, o.LogExports, o.Audit = ms, ms, ms
	})
	addTestLogs(t, e.store, 5)
	id, _ := e.createExport(coreAdminKey, map[string]any{"filters": map[string]any{}, "requested_data": []string{"id"}})
	if st, b := e.sendJSON(coreAdminKey, "POST", "/v1/logs/exports/"+id+"/start", nil, nil); st != 200 {
		t.Fatalf("start: %d %s", st, b)
	}
	e.waitExport(coreAdminKey, id)
	if st, b := e.sendJSON(coreAdminKey, "POST", "/v1/logs/exports/"+id+"/cancel", nil, nil); st != 409 {
		t.Fatalf("cancel of a finished export: %d %s", st, b)
	}
	e.downloadExport(coreAdminKey, id)
	l, _ := auditLogs(e, coreAdminKey, "?resource_type=log_exports")
	var got []string
	for _, r := range l.Records {
		if r.ResourceID != id || r.APIKeyID != "key-admin" || r.WorkspaceID != "ws-1" {
			t.Errorf("audit record %+v: want export %s, key-admin, ws-1", r, id)
		}
		got = append(got, fmt.Sprintf("%s %d", r.Action, r.Status))
	}
	slices.Sort(got)
	if want := []string{"log_exports.cancel 409", "log_exports.create 200", "log_exports.start 200"}; !slices.Equal(got, want) {
		t.Errorf("audited %q, want %q", got, want)
	}
}
