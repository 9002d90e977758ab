package admin_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/memstore"
)

// knownGuardrails is an admin.Guardrails that finds the ids of each
// workspace it lists.
type knownGuardrails map[string][]string

func (k knownGuardrails) HasGuardrail(_ context.Context, ws, id string) (bool, error) {
	for _, g := range k[ws] {
		if g == id {
			return true, nil
		}
	}
	return false, nil
}

// TestFileDefaultGuardrails: a config file's API keys and workspaces
// carry default guardrails as the admin routes write them
// (defaults.input_guardrails, defaults.output_guardrails), checked the
// same way: at most 16 ids, each one the workspace may attach; applying
// the file again keeps what the file does not set of a stored workspace.
func TestFileDefaultGuardrails(t *testing.T) {
	doc := `{
	  "api_keys": [{"id": "k1", "key": "gw-1", "workspace_id": "ws-1",
	                "defaults": {"input_guardrails": ["pii"], "output_guardrails": ["no-secrets", "json"]}}],
	  "workspaces": [{"id": "ws-1", "name": "Team one", "description": "the first",
	                  "defaults": {"input_guardrails": ["pii"]}}]
	}`
	f, err := admin.Decode(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.CheckGuardrails(t.Context(), knownGuardrails{"ws-1": {"pii", "no-secrets", "json"}}); err != nil {
		t.Fatal(err)
	}
	err = f.CheckGuardrails(t.Context(), knownGuardrails{"ws-1": {"pii", "json"}, "ws-2": {"no-secrets"}})
	if err == nil || !strings.Contains(err.Error(), `api_keys[0].defaults.output_guardrails[0]: no guardrail "no-secrets"`) {
		t.Errorf("another workspace's guardrail: %v, want the id named", err)
	}
	s := memstore.New()
	if err := admin.Apply(t.Context(), f, s); err != nil {
		t.Fatal(err)
	}
	k, err := s.APIKey(t.Context(), gateway.HashAPIKey("gw-1"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]string{{"pii"}, {"no-secrets", "json"}}, [][]string{k.InputGuardrails, k.OutputGuardrails}); diff != "" {
		t.Errorf("key's default guardrails (-want +got):\n%s", diff)
	}
	ws, err := s.Workspace(t.Context(), "ws-1")
	if err != nil {
		t.Fatal(err)
	}
	if ws.Name != "Team one" || ws.Description != "the first" || !cmp.Equal(ws.InputGuardrails, []string{"pii"}) || ws.OutputGuardrails != nil || ws.CreatedAt.IsZero() {
		t.Errorf("workspace = %+v", ws)
	}

	// Applied again over a workspace the control plane changed: the
	// file's fields are set, the others kept.
	changed := ws.Clone()
	changed.RateLimits = []byte(`[{"type":"requests","unit":"rpm","value":5}]`)
	changed.OutputGuardrails = []string{"json"}
	if err := s.UpdateWorkspace(t.Context(), ws, changed); err != nil {
		t.Fatal(err)
	}
	if err := admin.Apply(t.Context(), f, s); err != nil {
		t.Fatal(err)
	}
	ws, _ = s.Workspace(t.Context(), "ws-1")
	if string(ws.RateLimits) != string(changed.RateLimits) || ws.OutputGuardrails != nil || !cmp.Equal(ws.InputGuardrails, []string{"pii"}) {
		t.Errorf("workspace applied again = %+v", ws)
	}

	ids := make([]string, 17)
	for i := range ids {
		ids[i] = fmt.Sprintf("%q", fmt.Sprint("g", i))
	}
	for _, c := range []struct{ doc, want string }{
		{`{"api_keys": [{"id": "k", "key": "gw", "defaults": {"input_guardrails": [` + strings.Join(ids, ",") + `]}}]}`,
			"api_keys[0].defaults.input_guardrails must hold at most 16 guardrail ids"},
		{`{"workspaces": [{"id": "w", "name": "w", "defaults": {"output_guardrails": [` + strings.Join(ids, ",") + `]}}]}`,
			"workspaces[0].defaults.output_guardrails must hold at most 16 guardrail ids"},
		{`{"workspaces": [{"id": "-w", "name": "w"}]}`, "workspaces[0].id must be"},
		{`{"workspaces": [{"id": "w"}]}`, "workspaces[0].name is required"},
		{`{"workspaces": [{"id": "w", "name": "a"}, {"id": "w", "name": "b"}]}`, "workspaces[1].id repeats workspaces[0].id"},
	} {
		f, err := admin.Decode(strings.NewReader(c.doc))
		if err == nil {
			err = admin.Apply(t.Context(), f, memstore.New())
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.doc, err, c.want)
		}
	}
	if _, err := admin.Decode(strings.NewReader(`{"api_keys": [{"id": "k", "key": "gw", "defaults": {"metadata": {}}}]}`)); err == nil {
		t.Error("an unknown defaults field was accepted")
	}
}
