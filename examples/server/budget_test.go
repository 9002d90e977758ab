package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/redis"
	"github.com/modelgateway/gateway/sqlstore"
	goredis "github.com/redis/go-redis/v9"
)

// TestBudgetSurvivesRestart: with a SQLite -db, a usage-limits policy and
// the usage of its entities are the database's: a budget spent before a
// restart is still spent after it.
func TestBudgetSurvivesRestart(t *testing.T) {
	t.Setenv(masterKeyEnv, "")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","model":"gpt-4o","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":30,"total_tokens":40}}`)
	}))
	defer up.Close()
	upURL, _ := url.Parse(up.URL)
	admin := secret("gw-admin-")
	t.Setenv("E2E_BUDGET_ADMIN", admin)
	dir := t.TempDir()
	db := filepath.Join(dir, "gw.db")
	cfg := writeFile(t, t.TempDir(), "gateway.json", fmt.Sprintf(`{
		"api_keys": [{"id": "key-admin", "key": "${E2E_BUDGET_ADMIN}", "workspace_id": "ws-1", "role": "admin"}],
		"custom_hosts": {"allow": [%q]}}`, upURL.Host))

	complete := func(base string) int {
		res := call(t, "POST", base+"/v1/chat/completions", `{"model":"gpt-4o","max_tokens":5,"messages":[]}`,
			map[string]string{"x-gateway-api-key": admin, "x-gateway-virtual-key": "up", "Content-Type": "application/json"})
		readAll(t, res)
		return res.StatusCode
	}
	r := startRun(t, "-db", db, "-config", cfg)
	if status, body := postJSON(t, r.base+"/v1/virtual-keys", admin,
		fmt.Sprintf(`{"name": "up", "slug": "up", "provider": "openai", "key": "sk-up", "base_url": %q}`, up.URL+"/v1")); status/100 != 2 {
		t.Fatalf("creating a virtual key: %d %s", status, body)
	}
	status, body := postJSON(t, r.base+"/v1/policies/usage-limits", admin,
		`{"conditions":[{"key":"workspace_id","value":"ws-1"}],"group_by":[{"key":"workspace_id"}],"type":"tokens","credit_limit":50}`)
	var created struct{ ID string }
	if err := json.Unmarshal([]byte(body), &created); status != 200 || err != nil {
		t.Fatalf("creating a usage-limits policy: %d %s", status, body)
	}
	for _, want := range []int{200, 200, 412} {
		if got := complete(r.base); got != want {
			t.Fatalf("before the restart: %d, want %d", got, want)
		}
	}
	r.shutdown()
	if err := r.wait(); err != nil {
		t.Fatal(err)
	}

	r = startRun(t, "-db", db, "-config", cfg)
	if got := complete(r.base); got != 412 {
		t.Fatalf("after the restart: %d, want 412 (the budget stays spent)", got)
	}
	res := call(t, "GET", r.base+"/v1/policies/usage-limits/"+created.ID+"/entities", "", map[string]string{"x-gateway-api-key": admin})
	var list struct {
		Data []struct {
			ValueKey     string  `json:"value_key"`
			CurrentUsage float64 `json:"current_usage"`
			Status       string
		}
	}
	if b := readAll(t, res); res.StatusCode != 200 || json.Unmarshal([]byte(b), &list) != nil || len(list.Data) != 1 ||
		list.Data[0].ValueKey != "ws-1" || list.Data[0].CurrentUsage != 80 || list.Data[0].Status != "exhausted" {
		t.Fatalf("entities after the restart: %d %s", res.StatusCode, b)
	}
}

// TestBudgetStores: a database store keeps the usage-limits policies and
// the budget counters, unless -redis set a Budget for the counters.
func TestBudgetStores(t *testing.T) {
	db, err := sqlstore.Open(t.Context(), filepath.Join(t.TempDir(), "gw.db"), sqlstore.Options{MasterKey: make([]byte, sqlstore.MasterKeySize)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var o gateway.Options
	var p products
	setStores(&o, &p, db)
	if b := p.budget; b.Store != db || b.Counter != db || b.Workspaces != db {
		t.Fatalf("database: Store %T, Counter %T, Workspaces %T, want the store", b.Store, b.Counter, b.Workspaces)
	}
	client := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"})
	defer client.Close()
	o, p = gateway.Options{}, products{}
	setRedis(&o, &p.budget, client)
	setStores(&o, &p, db)
	if b := p.budget; b.Store != db {
		t.Fatalf("with -redis: Store %T, want the store", b.Store)
	} else if _, ok := b.Counter.(*redis.Budget); !ok {
		t.Fatalf("with -redis: Counter %T, want *redis.Budget", b.Counter)
	}
	o, p = gateway.Options{}, products{}
	setStores(&o, &p, memstore.New())
	if b := p.budget; b.Store == nil || b.Counter != nil {
		t.Fatalf(":memory:: Store %T, Counter %T, want the memstore.Store and the budgets' own counter", b.Store, b.Counter)
	}
}
