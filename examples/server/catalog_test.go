package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// catalogConfig is a config file of an organisation key and a member key
// of ws-1, and the fake provider's host allowed as a custom host.
const catalogConfig = `{
  "api_keys": [
    {"id": "key-org", "key": "${E2E_ORG_KEY}", "role": "admin"},
    {"id": "key-team", "key": "${E2E_TEAM_KEY}", "workspace_id": "ws-1"}
  ],
  "custom_hosts": {"allow": ["${E2E_FAKE_HOST}"]}
}`

// TestRunCatalog drives the catalogue over real HTTP, in memory and on
// SQLite: the organisation key registers a workspace, an integration
// holding the provider's key, and grants it to the workspace; the
// workspace's key then calls "@slug/model" on chat completions and
// Messages with nothing but its gateway key, lists its models, and the
// provider receives the integration's key and the model without its
// prefix.
func TestRunCatalog(t *testing.T) {
	for _, db := range []string{":memory:", "sqlite"} {
		t.Run(db, func(t *testing.T) {
			orgKey, teamKey, upKey := secret("gw-org-"), secret("gw-team-"), secret("sk-")
			fake := newProvider(t, upKey)
			u, _ := url.Parse(fake.URL)
			t.Setenv("E2E_ORG_KEY", orgKey)
			t.Setenv("E2E_TEAM_KEY", teamKey)
			t.Setenv("E2E_FAKE_HOST", u.Host)
			cfg := filepath.Join(t.TempDir(), "gateway.json")
			if err := os.WriteFile(cfg, []byte(catalogConfig), 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{"-config", cfg}
			if db == "sqlite" {
				t.Setenv("GATEWAY_MASTER_KEY", newMasterKey())
				args = append(args, "-db", filepath.Join(t.TempDir(), "gateway.db"))
			}
			r := startRun(t, args...)
			do := func(key, method, path, body string, want int) string {
				t.Helper()
				res := call(t, method, r.base+"/v1"+path, body, map[string]string{"x-gateway-api-key": key, "Content-Type": "application/json"})
				b := readAll(t, res)
				if res.StatusCode != want {
					t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, b)
				}
				return b
			}
			do(orgKey, "POST", "/admin/workspaces", `{"name":"Team 1","slug":"ws-1"}`, http.StatusOK)
			do(orgKey, "POST", "/integrations", `{"name":"OpenAI Prod","slug":"openai-prod","ai_provider_id":"openai",
				"key":"`+upKey+`","configurations":{"custom_host":"`+fake.URL+`"}}`, http.StatusOK)
			do(orgKey, "PUT", "/integrations/openai-prod/models", `{"allow_all_models":false,"models":[{"slug":"gpt-4o-mini","enabled":true}]}`, http.StatusOK)
			do(orgKey, "PUT", "/integrations/openai-prod/workspaces", `{"workspaces":[{"id":"ws-1","enabled":true}]}`, http.StatusOK)
			if b := do(orgKey, "GET", "/integrations/openai-prod", "", http.StatusOK); strings.Contains(b, upKey) {
				t.Fatalf("the integration reads back its key: %s", b)
			}

			do(teamKey, "POST", "/chat/completions", `{"model":"@openai-prod/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`, http.StatusOK)
			var m struct{ Model string }
			json.Unmarshal(fake.Requests()[len(fake.Requests())-1].Body, &m)
			if m.Model != "gpt-4o-mini" {
				t.Fatalf("the provider got model %q", m.Model)
			}
			do(teamKey, "POST", "/messages", `{"model":"@openai-prod/gpt-4o-mini","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`, http.StatusOK)
			do(teamKey, "POST", "/chat/completions", `{"model":"@openai-prod/gpt-4o","messages":[{"role":"user","content":"hi"}]}`, http.StatusBadRequest)
			var list struct {
				Data []struct{ ID string }
			}
			if err := json.Unmarshal([]byte(do(teamKey, "GET", "/models", "", http.StatusOK)), &list); err != nil || len(list.Data) != 1 || list.Data[0].ID != "@openai-prod/gpt-4o-mini" {
				t.Fatalf("GET /v1/models = %+v, %v", list, err)
			}
		})
	}
}
