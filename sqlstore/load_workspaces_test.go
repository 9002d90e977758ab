package sqlstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/sqlstore"
)

// TestLoadDefaultGuardrails: a store file's API keys and workspaces keep
// their default guardrails; a workspace the file names again keeps what
// the file does not set (its rate limits).
func TestLoadDefaultGuardrails(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn, sqlstore.Options{})
		f, err := admin.Decode(strings.NewReader(`{
		  "api_keys": [{"id": "k1", "key": "gw-1", "workspace_id": "ws-1",
		                "defaults": {"input_guardrails": ["pii"], "output_guardrails": ["json"]}}],
		  "workspaces": [{"id": "ws-1", "name": "Team one", "defaults": {"output_guardrails": ["no-secrets"]}}]
		}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Load(ctx, f); err != nil {
			t.Fatal(err)
		}
		k, err := s.APIKey(ctx, gateway.HashAPIKey("gw-1"))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([][]string{{"pii"}, {"json"}}, [][]string{k.InputGuardrails, k.OutputGuardrails}); diff != "" {
			t.Errorf("key's default guardrails (-want +got):\n%s", diff)
		}
		ws, err := s.Workspace(ctx, "ws-1")
		if err != nil {
			t.Fatal(err)
		}
		if ws.Name != "Team one" || len(ws.InputGuardrails) != 0 || !cmp.Equal(ws.OutputGuardrails, []string{"no-secrets"}) {
			t.Errorf("workspace = %+v", ws)
		}
		changed := ws.Clone()
		changed.RateLimits = []byte(`[{"type":"requests","unit":"rpm","value":5}]`)
		if err := s.UpdateWorkspace(ctx, ws, changed); err != nil {
			t.Fatal(err)
		}
		if err := s.Load(ctx, f); err != nil {
			t.Fatal(err)
		}
		if ws, _ = s.Workspace(ctx, "ws-1"); !strings.Contains(string(ws.RateLimits), `"rpm"`) || !cmp.Equal(ws.OutputGuardrails, []string{"no-secrets"}) {
			t.Errorf("workspace loaded again = %+v", ws)
		}
	})
}
