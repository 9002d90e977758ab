package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunConfigDefaultGuardrails: the config file's keys and workspaces
// attach default guardrails by id, each one checked against the stored
// guardrails at start as the admin routes check them: a file naming one
// the workspace cannot attach stops the server, and one naming a stored
// guardrail sets the defaults the admin routes show.
func TestRunConfigDefaultGuardrails(t *testing.T) {
	t.Setenv(masterKeyEnv, "")
	t.Setenv(apiKeyEnv, "")
	dir := t.TempDir()
	db := filepath.Join(dir, "gw.db")
	keys := `"api_keys": [{"id": "key-org", "key": "gw-cfg-org", "role": "admin"}]`
	cfg := writeFile(t, dir, "gateway.json", `{`+keys+`}`)
	r := startRun(t, "-db", db, "-config", cfg)
	if status, body := send(t, r.base, "gw-cfg-org", "POST", "/v1/admin/workspaces", `{"name": "One", "slug": "ws-1"}`); status != http.StatusOK {
		t.Fatalf("creating ws-1: %d %s", status, body)
	}
	status, body := send(t, r.base, "gw-cfg-org", "POST", "/v1/guardrails?workspace_id=ws-1",
		`{"name": "PII", "workspace_id": "ws-1", "checks": [{"id": "default.pii", "parameters": {"categories": ["EMAIL_ADDRESS"], "redact": true}}]}`)
	if status != http.StatusOK {
		t.Fatalf("creating a guardrail: %d %s", status, body)
	}
	var g struct{ ID, Slug string }
	json.Unmarshal([]byte(body), &g)
	r.stop(t)

	bad := writeFile(t, dir, "bad.json", `{`+keys+`, "workspaces": [{"id": "ws-1", "name": "One", "defaults": {"input_guardrails": ["nope"]}}]}`)
	err := run(context.Background(), context.Background(), []string{"-addr", "127.0.0.1:0", "-db", db, "-config", bad}, io.Discard, newLines())
	if err == nil || !strings.Contains(err.Error(), `workspaces[0].defaults.input_guardrails[0]: no guardrail "nope"`) {
		t.Fatalf("run with an unknown guardrail = %v, want it named", err)
	}

	good := writeFile(t, dir, "good.json", `{"api_keys": [{"id": "key-org", "key": "gw-cfg-org", "role": "admin"},
		{"id": "key-ws", "key": "gw-cfg-ws", "workspace_id": "ws-1", "defaults": {"output_guardrails": ["`+g.ID+`"]}}],
		"workspaces": [{"id": "ws-1", "name": "One", "defaults": {"input_guardrails": ["`+g.ID+`"]}}]}`)
	r = startRun(t, "-db", db, "-config", good)
	defer r.stop(t)
	if status, body := send(t, r.base, "gw-cfg-org", "GET", "/v1/admin/workspaces/ws-1", ""); status != http.StatusOK || !strings.Contains(body, `"input_guardrails":["`+g.ID+`"]`) {
		t.Errorf("GET /admin/workspaces/ws-1: %d %s, want the file's default guardrails", status, body)
	}
	if status, body := send(t, r.base, "gw-cfg-org", "GET", "/v1/api-keys/key-ws", ""); status != http.StatusOK || !strings.Contains(body, `"output_guardrails":["`+g.ID+`"]`) {
		t.Errorf("GET /api-keys/key-ws: %d %s, want the file's default guardrails", status, body)
	}
}
