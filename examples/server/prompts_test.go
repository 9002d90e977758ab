package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelgateway/gateway/gatewaytest"
)

// TestRunPrompts drives the prompt routes of the server over real HTTP,
// in memory and on SQLite: a collection and a prompt are made, the
// prompt rendered and run as a chat completion against a fake provider,
// and the completion's request log names the prompt and its version.
func TestRunPrompts(t *testing.T) {
	for _, db := range []string{":memory:", "sqlite"} {
		t.Run(db, func(t *testing.T) {
			gwKey, upKey := secret("gw-"), secret("sk-")
			fake := newProvider(t, upKey)
			t.Setenv("E2E_GATEWAY_KEY", gwKey)
			t.Setenv("E2E_UPSTREAM_KEY", upKey)
			t.Setenv("E2E_FAKE_URL", fake.URL)
			args := []string{"-config", writeConfig(t, "gw-hashed")}
			if db == "sqlite" {
				t.Setenv("GATEWAY_MASTER_KEY", newMasterKey())
				args = append(args, "-db", filepath.Join(t.TempDir(), "gateway.db"))
			}
			r := startRun(t, args...)
			hdr := map[string]string{"x-gateway-api-key": gwKey, "Content-Type": "application/json"}
			do := func(method, path, body string, out any) {
				t.Helper()
				res := call(t, method, r.base+"/v1"+path, body, hdr)
				b := readAll(t, res)
				if res.StatusCode != http.StatusOK {
					t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, b)
				}
				if out != nil {
					if err := json.Unmarshal([]byte(b), out); err != nil {
						t.Fatalf("%s %s: %v in %s", method, path, err, b)
					}
				}
			}
			var coll, p struct{ ID, Slug string }
			do("POST", "/collections", `{"name":"Support"}`, &coll)
			do("POST", "/prompts", `{"name":"Greeter","collection_id":"`+coll.ID+`","virtual_key":"fake","model":"gpt-4o-mini",
				"parameters":{"temperature":0.3},
				"string":"[{\"role\":\"system\",\"content\":\"You help {{company}}.\"},{\"role\":\"user\",\"content\":\"{{question}}\"}]"}`, &p)
			vars := `{"variables":{"company":"ACME","question":"Is \"it\" broken?\nSay so."}}`
			var rendered struct {
				Success bool `json:"success"`
				Data    struct {
					Model    string `json:"model"`
					Messages []struct{ Content string }
				} `json:"data"`
			}
			do("POST", "/prompts/greeter/render", vars, &rendered)
			if !rendered.Success || rendered.Data.Model != "gpt-4o-mini" || rendered.Data.Messages[1].Content != "Is \"it\" broken?\nSay so." {
				t.Fatalf("render: %+v", rendered)
			}
			hdr["x-gateway-trace-id"] = "trace-prompt-" + db
			var answer struct {
				Choices []struct {
					Message struct{ Content string }
				}
			}
			do("POST", "/prompts/"+p.ID+"@1/completions", vars, &answer)
			if want := gatewaytest.CompletionText("Is \"it\" broken?\nSay so."); answer.Choices[0].Message.Content != want {
				t.Fatalf("completion %+v, want %q", answer, want)
			}
			var rec struct {
				Path     string            `json:"path"`
				Status   int               `json:"status"`
				KeyID    string            `json:"key_id"`
				Metadata map[string]string `json:"metadata"`
				Tokens   int64             `json:"total_tokens"`
			}
			r.stdout.wait(t, "the completion's request log", r.done, func(s string) bool {
				return json.Unmarshal([]byte(s), &rec) == nil && rec.Path == "/v1/chat/completions" &&
					strings.Contains(s, `"trace_id":"trace-prompt-`+db+`"`)
			})
			if rec.Status != 200 || rec.KeyID != "key-e2e" || rec.Metadata["_prompt"] != "greeter" || rec.Metadata["_prompt_id"] != p.ID ||
				rec.Metadata["_prompt_version"] != "1" || rec.Metadata["_environment"] != "e2e" || rec.Tokens == 0 {
				t.Fatalf("request log %+v", rec)
			}
			if strings.Contains(r.stdout.String(), upKey) || strings.Contains(r.stderr.String(), upKey) {
				t.Fatal("the provider key reached the output")
			}
		})
	}
}
