package observe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
)

// TestLogExportOfTraffic exports every field of the records real
// requests left: the export equals GET /logs, and holds no credential
// the requests carried or the virtual key stores.
func TestLogExportOfTraffic(t *testing.T) {
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"gpt-4o","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}`)
	})
	e := newCoreEnv(t, up, func(o *Options) {
		ms := o.Keys.(*memstore.Store)
		o.Logs, o.LogExports = ms, ms
	})
	chat := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
	for i := range 4 {
		res := e.do("POST", "/v1/chat/completions", strings.NewReader(chat), gateway.HeaderAPIKey+": "+coreKey, gateway.HeaderVirtualKey+": vk-up",
			gateway.HeaderTraceID+": trace-"+fmt.Sprint(i), gateway.HeaderMetadata+`: {"team":"search"}`)
		if res.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, res.StatusCode)
		}
	}
	res := e.do("POST", "/v1/chat/completions", strings.NewReader(chat), gateway.HeaderAPIKey+": "+coreKey, gateway.HeaderProvider+": openai",
		gateway.HeaderCustomHost+": "+up.URL+"/v1", "Authorization: Bearer sk-caller-secret-1234")
	if res.StatusCode != 200 {
		t.Fatalf("custom-host request: %d", res.StatusCode)
	}
	waitLogs(t, e.store, 5)

	var every []string
	wt := reflect.TypeFor[observe.LogWire]()
	for i := range wt.NumField() {
		if name, _, _ := strings.Cut(wt.Field(i).Tag.Get("json"), ","); name != "object" {
			every = append(every, name)
		}
	}
	id, total := e.createExport(coreAdminKey, map[string]any{"filters": map[string]any{}, "requested_data": every})
	if total != 5 {
		t.Fatalf("total %d, want 5", total)
	}
	e.sendJSON(coreAdminKey, "POST", "/v1/logs/exports/"+id+"/start", nil, nil)
	if it := e.waitExport(coreAdminKey, id); it.Status != "success" {
		t.Fatalf("export %s: %s", it.Status, it.Description)
	}
	got := e.downloadExport(coreAdminKey, id)
	if want := e.listedLogs(coreAdminKey, "", every); !cmp.Equal(got, want) {
		t.Errorf("export differs from GET /logs:\n%s", cmp.Diff(want, got))
	}
	b, _ := json.Marshal(got)
	for _, secret := range []string{"sk-stored-secret", "sk-caller-secret", coreKey, coreAdminKey} {
		if strings.Contains(string(b), secret) {
			t.Errorf("the export holds %q", secret)
		}
	}
	if got[0]["req_units"] != float64(9) || got[0]["metadata"] == nil {
		t.Errorf("newest record %v: want the answer's usage and the metadata", got[0])
	}
}

// beatCounter is a ExportStore that counts heartbeats: updates that
// keep an export in progress.
type beatCounter struct {
	observe.ExportStore
	beats atomic.Int64
}

func (c *beatCounter) UpdateLogExport(ctx context.Context, old, e *observe.Export, content []byte) error {
	err := c.ExportStore.UpdateLogExport(ctx, old, e, content)
	if err == nil && old.Status == observe.ExportInProgress && e.Status == observe.ExportInProgress {
		c.beats.Add(1)
	}
	return err
}

// TestLogExportHeartbeat: a job moves its export's last_updated_at after
// each full batch once the heartbeat interval has passed (on a clock that
// jumps past it at every reading), and still ends in success.
func TestLogExportHeartbeat(t *testing.T) {
	counter := &beatCounter{}
	e := newCoreEnv(t, nil, func(o *Options) {
		ms := o.Keys.(*memstore.Store)
		counter.ExportStore = ms
		o.Logs, o.LogExports = ms, counter
	})
	var ticks atomic.Int64
	base := time.Now()
	e.now = func() time.Time {
		return base.Add(time.Duration(ticks.Add(1)) * (observe.ExportHeartbeat + time.Second))
	}
	addTestLogs(t, e.store, observe.ExportBatch*2)
	id, _ := e.createExport(coreAdminKey, map[string]any{"filters": map[string]any{}, "requested_data": []string{"id"}})
	e.sendJSON(coreAdminKey, "POST", "/v1/logs/exports/"+id+"/start", nil, nil)
	it := e.waitExport(coreAdminKey, id)
	if it.Status != "success" || it.Total != observe.ExportBatch*2 {
		t.Fatalf("export %s (%s), total %d", it.Status, it.Description, it.Total)
	}
	if n := counter.beats.Load(); n != 2 {
		t.Errorf("%d heartbeats, want 2: one after each full batch", n)
	}
}
