package sqlstore_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/observe"
	"github.com/modelgateway/gateway/sqlstore"
)

// TestLogBodiesStored: bodies are stored beside their record, returned
// by Log and not by Logs, stored once for a retried batch, and deleted
// with their record.
func TestLogBodiesStored(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn, sqlstore.Options{})
		now := time.Now().UTC().Truncate(time.Microsecond)
		recs := genLogs(5, now, 6)
		recs[1].RequestBody, recs[1].ResponseBody = `{"model":"m","x":"ü\u0000"}`, "data: {}\n\ndata: [DONE]\n\n"
		recs[2].RequestBody, recs[2].RequestBodyTruncated = `{"model":"m","messages":[{"con`, true
		recs[3].ResponseBodyTruncated = true
		for range 2 { // the second time, a retried batch
			if err := s.AddLogs(ctx, recs); err != nil {
				t.Fatal(err)
			}
		}
		for i, want := range recs {
			got, err := s.Log(ctx, "", want.ID)
			if err != nil || got.RequestBody != want.RequestBody || got.ResponseBody != want.ResponseBody ||
				got.RequestBodyTruncated != want.RequestBodyTruncated || got.ResponseBodyTruncated != want.ResponseBodyTruncated {
				t.Errorf("record %d: bodies %q %v %q %v, want %q %v %q %v (%v)", i, got.RequestBody, got.RequestBodyTruncated,
					got.ResponseBody, got.ResponseBodyTruncated, want.RequestBody, want.RequestBodyTruncated, want.ResponseBody,
					want.ResponseBodyTruncated, err)
			}
		}
		page, err := s.Logs(ctx, &observe.Query{})
		if err != nil || len(page) != len(recs) {
			t.Fatalf("Logs = %d records, %v", len(page), err)
		}
		for _, r := range page {
			if r.RequestBody != "" || r.ResponseBody != "" {
				t.Errorf("Logs returned record %s with its bodies", r.ID)
			}
		}
		if n, err := s.DeleteLogsBefore(ctx, now.Add(time.Hour)); err != nil || n != int64(len(recs)) {
			t.Fatalf("DeleteLogsBefore = %d, %v", n, err)
		}
		var left int
		if err := rawDB(t, dsn).QueryRow(`SELECT COUNT(*) FROM request_log_bodies`).Scan(&left); err != nil || left != 0 {
			t.Errorf("bodies left after their records: %d, %v", left, err)
		}
	})
}

// TestLogBodiesAtRest: requests through a gateway keeping bodies in a
// SQLite file, with credentials in the request's body and headers and in
// the answer's body: GET /logs/{id} shows the bodies, and no canary is
// in the answer nor, in clear, hex or base64, in any of the database's
// files.
func TestLogBodiesAtRest(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, filepath.Join(dir, "gateway.db"), sqlstore.Options{})
	canaries := []string{"canary-gateway-key-b0d1e5", "canary-body-api-key-77aa", "canary-body-password-e1e1",
		"canary-answer-token-5e5e", "canary-provider-key-c3c3"}
	f, err := admin.Decode(strings.NewReader(`{
	  "api_keys": [{"id": "key-canary", "key": "` + canaries[0] + `", "workspace_id": "ws-1", "role": "admin"}],
	  "virtual_keys": [{"slug": "vk-up", "provider": "openai", "api_key": "` + canaries[4] + `", "base_url": "BASE", "workspace_id": "ws-1"}]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","refresh_token":"`+canaries[3]+`","choices":[{"index":0,"message":{"role":"assistant","content":"hello"}}]}`)
	}))
	defer up.Close()
	f.VirtualKeys[0].BaseURL = up.URL + "/v1"
	if err := s.Load(ctx, f); err != nil {
		t.Fatal(err)
	}
	g := gateway.New(gateway.Options{Keys: s, VirtualKeys: s, Configs: s, Policies: s, LogSinks: []gateway.LogSink{observe.Sink(s)},
		LogBodies: true, CustomHostAllow: []string{"127.0.0.1"}})
	observe.Mount(g, observe.Options{Logs: s})
	srv := httptest.NewServer(g)
	defer func() { srv.Close(); g.Close() }()
	var seen strings.Builder
	body := `{"model":"gpt-4o","api_key":"` + canaries[1] + `","user":{"password":"` + canaries[2] + `"},` +
		`"messages":[{"role":"user","content":"hi, my key is ` + canaries[0] + `"}]}`
	for range 20 {
		if st, b := doTo(t, srv.URL, &seen, canaries[0], "POST", "/v1/chat/completions", body, gateway.HeaderVirtualKey, "vk-up"); st != 200 {
			t.Fatalf("chat: %d %s", st, b)
		}
	}
	var recs []gateway.RequestLog
	waitFor(t, 10*time.Second, "request logs stored", func() bool {
		recs, _ = s.Logs(ctx, &observe.Query{})
		return len(recs) == 20
	})
	st, b := doTo(t, srv.URL, &seen, canaries[0], "GET", "/v1/logs/"+recs[0].ID, "")
	var detail struct {
		Request, Response struct{ Body map[string]any }
	}
	if err := json.Unmarshal(b, &detail); st != 200 || err != nil || detail.Request.Body["model"] != "gpt-4o" ||
		detail.Request.Body["api_key"] != "[REDACTED]" || detail.Response.Body["id"] != "chatcmpl-1" {
		t.Fatalf("GET /logs/{id}: %d %s (%v)", st, b, err)
	}
	for _, c := range canaries[1:] {
		if strings.Contains(seen.String(), c) && c != canaries[3] { // the answer itself carries canaries[3]
			t.Errorf("an answer holds canary %q", c)
		}
	}
	if strings.Contains(string(b), canaries[3]) || strings.Contains(string(b), canaries[0]) {
		t.Errorf("GET /logs/{id} holds a canary: %s", b)
	}
	scan := func(when string) {
		files, _ := filepath.Glob(filepath.Join(dir, "gateway.db*"))
		for _, name := range files {
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range canaries[1:4] { // the gateway key and provider key: TestNoSecretAtRest
				for _, form := range []string{c, hex.EncodeToString([]byte(c)), base64.StdEncoding.EncodeToString([]byte(c))} {
					if bytes.Contains(data, []byte(form)) {
						t.Errorf("%s: %s holds a canary secret (%q)", when, filepath.Base(name), form)
					}
				}
			}
			if bytes.Contains(data, []byte(canaries[0])) {
				t.Errorf("%s: %s holds the gateway key", when, filepath.Base(name))
			}
		}
	}
	scan("while open")
	srv.Close()
	g.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	scan("after Close")
}
