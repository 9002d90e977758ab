package catalog_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgateway/gateway"
)

func TestIntegrationRoutesShapesAndMasking(t *testing.T) {
	e := newEnv(t)
	var created struct{ ID, Slug string }
	e.ok(keyOrg, "POST", "/integrations", map[string]any{"name": "OpenAI Prod", "ai_provider_id": "openai",
		"key": "sk-abcdefghijklmnop", "description": "prod", "configurations": map[string]any{"custom_host": e.up.URL}}, &created)
	if created.Slug != "openai-prod" || len(created.ID) != 36 {
		t.Fatalf("create answered %+v", created)
	}
	var got map[string]any
	e.ok(keyOrg, "GET", "/integrations/openai-prod", nil, &got)
	for k, want := range map[string]any{"object": "integration", "slug": "openai-prod", "ai_provider_id": "openai",
		"name": "OpenAI Prod", "status": "active", "masked_key": "sk***************op", "allow_all_models": true,
		"workspace_count": float64(0), "description": "prod"} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	if cfg := got["configurations"].(map[string]any); cfg["custom_host"] != e.up.URL {
		t.Errorf("configurations = %v", cfg)
	}
	var list struct {
		Object string
		Total  int
		Data   []map[string]any
	}
	e.ok(keyOrg, "GET", "/integrations", nil, &list)
	if list.Object != "list" || list.Total != 1 || list.Data[0]["slug"] != "openai-prod" {
		t.Fatalf("list = %+v", list)
	}
	for _, path := range []string{"/integrations", "/integrations/openai-prod"} {
		_, b := e.do(keyOrg, "GET", path, nil)
		if strings.Contains(string(b), "abcdefghijkl") {
			t.Errorf("GET %s reveals the key: %s", path, b)
		}
	}
	// Writes: organisation keys only; bad input names the field.
	e.fails(keyAdmin, "POST", "/integrations", map[string]any{"name": "x", "ai_provider_id": "openai"}, 403, "", "")
	e.fails(keyOrg, "POST", "/integrations", map[string]any{"name": "x", "ai_provider_id": "nope"}, 400, "ai_provider_id", "")
	e.fails(keyOrg, "POST", "/integrations", map[string]any{"name": "x", "ai_provider_id": "openai", "bogus": 1}, 400, "bogus", "")
	e.fails(keyOrg, "POST", "/integrations", map[string]any{"name": "OpenAI Prod", "ai_provider_id": "openai"}, 409, "slug", "conflict")
	e.fails(keyOrg, "POST", "/integrations", map[string]any{"name": "y", "ai_provider_id": "openai",
		"configurations": map[string]any{"custom_host": "http://169.254.169.254/"}}, 400, "configurations.custom_host", "")
	e.fails(keyOrg, "POST", "/integrations", map[string]any{"name": "y", "ai_provider_id": "openai",
		"configurations": map[string]any{"colour": "red"}}, 400, "configurations.colour", "")
	// Moving the host needs the key again.
	e.fails(keyOrg, "PUT", "/integrations/openai-prod", map[string]any{"configurations": map[string]any{"custom_host": "https://example.com"}},
		400, "key", gateway.CodeSecretRequired)
	e.ok(keyOrg, "PUT", "/integrations/openai-prod", map[string]any{"name": "Renamed"}, nil)
	e.ok(keyOrg, "GET", "/integrations/openai-prod", nil, &got)
	if got["name"] != "Renamed" {
		t.Errorf("name after PUT = %v", got["name"])
	}
	// A workspace key sees only what is granted to its workspace.
	e.fails(keyAdmin, "GET", "/integrations/openai-prod", nil, 404, "", "not_found")
	e.ok(keyAdmin, "GET", "/integrations", nil, &list)
	if list.Total != 0 {
		t.Errorf("a workspace key lists %d integrations not granted to it", list.Total)
	}
	e.ok(keyOrg, "DELETE", "/integrations/openai-prod", nil, nil)
	e.fails(keyOrg, "GET", "/integrations/openai-prod", nil, 404, "", "not_found")
	e.fails(keyOrg, "GET", "/integrations/x/nothing", nil, 404, "", "")
}

func TestGrantMakesProviderUsableByModelSlug(t *testing.T) {
	e := newEnv(t)
	e.integration("openai-prod", "ws-1")
	var grants struct {
		Total      int
		Workspaces []map[string]any
	}
	e.ok(keyOrg, "GET", "/integrations/openai-prod/workspaces", nil, &grants)
	if grants.Total != 1 || grants.Workspaces[0]["id"] != "ws-1" || grants.Workspaces[0]["enabled"] != true {
		t.Fatalf("grants = %+v", grants)
	}
	for _, tc := range []struct{ path, body string }{
		{"/chat/completions", `{"model":"@openai-prod/gpt-4o","messages":[{"role":"user","content":"hi"}]}`},
		{"/embeddings", `{"model":"@openai-prod/text-embedding-3-small","input":"hi"}`},
		{"/completions", `{"model":"@openai-prod/gpt-3.5-turbo-instruct","prompt":"hi"}`},
		{"/messages", `{"model":"@openai-prod/gpt-4o","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`},
		{"/responses", `{"model":"@openai-prod/gpt-4o","input":"hi"}`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			code, b := e.do(keyMember, "POST", tc.path, tc.body)
			if code != 200 {
				t.Fatalf("%d %s", code, b)
			}
			up := e.lastUpstream()
			if got := up.Header.Get("Authorization"); got != "Bearer sk-integration-secret-openai-prod" {
				t.Errorf("upstream Authorization = %q", got)
			}
			var m struct{ Model string }
			json.Unmarshal(up.Body, &m)
			if strings.HasPrefix(m.Model, "@") || m.Model == "" {
				t.Errorf("upstream model = %q, want the prefix stripped (%s)", m.Model, up.Body)
			}
		})
	}
	// Another workspace: the same answer as an unknown slug.
	a := e.fails(keyOther, "POST", "/chat/completions", `{"model":"@openai-prod/gpt-4o","messages":[]}`, 400, "model", gateway.CodeUnknownProvider)
	b := e.fails(keyOther, "POST", "/chat/completions", `{"model":"@no-such/gpt-4o","messages":[]}`, 400, "model", gateway.CodeUnknownProvider)
	if strings.ReplaceAll(a.Error.Message, "openai-prod", "X") != strings.ReplaceAll(b.Error.Message, "no-such", "X") {
		t.Errorf("another workspace's slug answers %q, an unknown one %q", a.Error.Message, b.Error.Message)
	}
	e.fails(keyMember, "POST", "/chat/completions", `{"model":"@openai-prod","messages":[]}`, 400, "model", "")
	// Revoking the grant: the provider is gone.
	e.ok(keyOrg, "PUT", "/integrations/openai-prod/workspaces", map[string]any{"workspaces": []map[string]any{{"id": "ws-1", "enabled": false}}}, nil)
	e.fails(keyMember, "POST", "/chat/completions", `{"model":"@openai-prod/gpt-4o","messages":[]}`, 400, "model", gateway.CodeUnknownProvider)
	e.fails(keyOrg, "PUT", "/integrations/openai-prod/workspaces", map[string]any{"workspaces": []map[string]any{{"id": "ws-9", "enabled": true}}}, 400, "workspaces[0].id", "")
}

func TestModelNotAllowedAndCustomPrices(t *testing.T) {
	e := newEnv(t)
	e.integration("openai-prod", "ws-1")
	e.ok(keyOrg, "PUT", "/integrations/openai-prod/models", map[string]any{"allow_all_models": false, "models": []map[string]any{
		{"slug": "gpt-4o", "enabled": true},
		{"slug": "my-ft", "enabled": true, "is_custom": true, "pricing_config": map[string]any{"type": "static",
			"pay_as_you_go": map[string]any{"request_token": map[string]any{"price": 0.0001}, "response_token": map[string]any{"price": 0.0002}}}},
		{"slug": "gpt-4o-mini", "enabled": false},
	}}, nil)
	var models struct {
		Total  int
		Models []map[string]any
	}
	e.ok(keyOrg, "GET", "/integrations/openai-prod/models", nil, &models)
	if models.Total != 3 || models.Models[1]["is_custom"] != true || models.Models[1]["pricing_config"] == nil {
		t.Fatalf("models = %+v", models)
	}
	e.fails(keyMember, "POST", "/chat/completions", `{"model":"@openai-prod/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`,
		400, "model", gateway.CodeModelNotAllowed)
	// Messages answers in Anthropic's shape.
	if code, b := e.do(keyMember, "POST", "/messages", `{"model":"@openai-prod/o3","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`); code != 400 || !strings.Contains(string(b), "not offered") {
		t.Fatalf("Messages with a model not offered: %d %s", code, b)
	}
	for len(e.logs) > 0 {
		<-e.logs
	}
	if code, b := e.do(keyMember, "POST", "/chat/completions", `{"model":"@openai-prod/my-ft","messages":[{"role":"user","content":"hi"}]}`); code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	e.gw.Close()
	var rec gateway.RequestLog
	for r := range e.logs {
		if r.Model == "my-ft" {
			rec = r
			break
		}
	}
	if rec.Model != "my-ft" || rec.VirtualKey != "openai-prod" || rec.CostUnknown || rec.Cost <= 0 {
		t.Fatalf("log = model %q vk %q cost %v unknown %v", rec.Model, rec.VirtualKey, rec.Cost, rec.CostUnknown)
	}
	want := (float64(rec.PromptTokens)*1 + float64(rec.CompletionTokens)*2) / 1e6
	if d := rec.Cost - want; d > 1e-12 || d < -1e-12 {
		t.Errorf("cost = %v, want %v from the custom model's prices", rec.Cost, want)
	}
	e.fails(keyOrg, "DELETE", "/integrations/openai-prod/models?slugs=gpt-4o", nil, 400, "slugs", "")
	e.ok(keyOrg, "DELETE", "/integrations/openai-prod/models?slugs=my-ft", nil, nil)
}

func TestModelsListAndPassThrough(t *testing.T) {
	e := newEnv(t)
	e.integration("openai-prod", "ws-1")
	e.ok(keyOrg, "PUT", "/integrations/openai-prod/models", map[string]any{"allow_all_models": false, "models": []map[string]any{
		{"slug": "gpt-4o", "enabled": true}, {"slug": "gpt-4o-mini", "enabled": true}}}, nil)
	var list struct {
		Object string
		Total  int
		Data   []map[string]any
	}
	e.ok(keyMember, "GET", "/models", nil, &list)
	if list.Object != "list" || list.Total != 2 || list.Data[0]["id"] != "@openai-prod/gpt-4o" || list.Data[0]["object"] != "model" {
		t.Fatalf("GET /models = %+v", list)
	}
	e.ok(keyMember, "GET", "/models?limit=1&order=desc", nil, &list)
	if len(list.Data) != 1 || list.Data[0]["id"] != "@openai-prod/gpt-4o-mini" {
		t.Fatalf("GET /models?limit=1&order=desc = %+v", list)
	}
	e.ok(keyOther, "GET", "/models", nil, &list)
	if list.Total != 0 {
		t.Fatalf("ws-2 lists %+v", list)
	}
	var m map[string]any
	e.ok(keyMember, "GET", "/models/@openai-prod/gpt-4o", nil, &m)
	if m["id"] != "@openai-prod/gpt-4o" {
		t.Fatalf("GET /models/@openai-prod/gpt-4o = %v", m)
	}
	e.fails(keyOther, "GET", "/models/@openai-prod/gpt-4o", nil, 404, "model", "not_found")
	// With a provider selected, the provider answers as before.
	before := len(e.up.Requests())
	resp := e.send(keyMember, "GET", "/models", nil, http.Header{gateway.HeaderProvider: {"openai"},
		gateway.HeaderCustomHost: {e.up.URL}, "Authorization": {"Bearer sk-caller"}})
	resp.Body.Close()
	if resp.StatusCode != 200 || len(e.up.Requests()) != before+1 || e.lastUpstream().Path != "/v1/models" {
		t.Fatalf("GET /models with a provider: %d, upstream %d requests", resp.StatusCode, len(e.up.Requests())-before)
	}
	// Prices.
	var price struct {
		PayAsYouGo map[string]struct{ Price float64 } `json:"pay_as_you_go"`
		Currency   string
	}
	e.ok(keyMember, "GET", "/model-configs/pricing/openai/gpt-4o", nil, &price)
	p := gateway.DefaultPrices()["openai/gpt-4o"]
	if price.Currency != "USD" || price.PayAsYouGo["request_token"].Price != p.Input/1e4 {
		t.Fatalf("pricing = %+v", price)
	}
	e.fails(keyMember, "GET", "/model-configs/pricing/openai/no-such-model-xyz", nil, 404, "model", "not_found")
}

func TestProvidersAreVirtualKeys(t *testing.T) {
	e := newEnv(t)
	e.integration("openai-prod", "ws-1")
	var list struct {
		Total int
		Data  []map[string]any
	}
	e.ok(keyAdmin, "GET", "/providers", nil, &list)
	if list.Total != 1 || list.Data[0]["slug"] != "openai-prod" || list.Data[0]["integration_id"] != "openai-prod" || list.Data[0]["object"] != "provider" {
		t.Fatalf("providers = %+v", list)
	}
	var created struct{ Slug string }
	e.ok(keyAdmin, "POST", "/providers", map[string]any{"name": "Team OpenAI", "integration_id": "openai-prod", "note": "n"}, &created)
	if created.Slug != "team-openai" {
		t.Fatalf("create = %+v", created)
	}
	// The same record through /virtual-keys: masked, never the secret.
	code, b := e.do(keyAdmin, "GET", "/virtual-keys/team-openai", nil)
	if code != 200 || strings.Contains(string(b), "integration-secret") {
		t.Fatalf("virtual key view: %d %s", code, b)
	}
	if code, b := e.do(keyMember, "POST", "/chat/completions", `{"model":"@team-openai/gpt-4o","messages":[{"role":"user","content":"hi"}]}`); code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	e.fails(keyOther, "POST", "/providers", map[string]any{"name": "x", "integration_id": "openai-prod"}, 400, "integration_id", "")
	e.fails(keyOther, "GET", "/providers/team-openai", nil, 404, "", "not_found")
	e.fails(keyAdmin, "POST", "/providers", map[string]any{"name": "x"}, 400, "integration_id", "")
	e.ok(keyAdmin, "PUT", "/providers/team-openai", map[string]any{"name": "Renamed"}, nil)
	var one map[string]any
	e.ok(keyAdmin, "GET", "/providers/team-openai", nil, &one)
	if one["name"] != "Renamed" || one["note"] != "n" {
		t.Fatalf("provider = %v", one)
	}
	e.ok(keyAdmin, "DELETE", "/providers/team-openai", nil, nil)
	e.fails(keyMember, "POST", "/chat/completions", `{"model":"@team-openai/gpt-4o","messages":[]}`, 400, "model", gateway.CodeUnknownProvider)
	// A provider from an integration is not a config's target.
	e.ok(keyAdmin, "POST", "/configs", map[string]any{"name": "c", "config": map[string]any{"virtual_key": "openai-prod"}}, nil)
	resp := e.send(keyMember, "POST", "/chat/completions", `{"model":"gpt-4o","messages":[]}`, http.Header{gateway.HeaderConfig: {"c"}})
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("a config naming an integration's provider answered %d", resp.StatusCode)
	}
}

func TestGrantRateLimitIsEnforced(t *testing.T) {
	e := newEnv(t)
	e.integration("openai-prod")
	e.ok(keyOrg, "PUT", "/integrations/openai-prod/workspaces", map[string]any{"workspaces": []map[string]any{
		{"id": "ws-1", "enabled": true, "rate_limits": []map[string]any{{"type": "requests", "unit": "rpm", "value": 2}}},
		{"id": "ws-2", "enabled": true},
	}}, nil)
	body := `{"model":"@openai-prod/gpt-4o","messages":[{"role":"user","content":"hi"}]}`
	for i := range 2 {
		if code, b := e.do(keyMember, "POST", "/chat/completions", body); code != 200 {
			t.Fatalf("request %d: %d %s", i, code, b)
		}
	}
	e.fails(keyMember, "POST", "/chat/completions", body, 429, "", "")
	// Another workspace's grant has no limit; nor has ws-1 without the provider.
	for range 3 {
		if code, b := e.do(keyOther, "POST", "/chat/completions", body); code != 200 {
			t.Fatalf("ws-2: %d %s", code, b)
		}
	}
	// The limit is the organisation's: the workspace's admin cannot lift it.
	var pols struct{ Data []map[string]any }
	e.ok(keyAdmin, "GET", "/policies/rate-limits", nil, &pols)
	for _, p := range pols.Data {
		e.fails(keyAdmin, "DELETE", "/policies/rate-limits/"+p["id"].(string), nil, 404, "", "")
	}
	// A second provider would escape it.
	e.fails(keyAdmin, "POST", "/providers", map[string]any{"name": "x", "integration_id": "openai-prod"}, 409, "integration_id", "conflict")
	var grants struct{ Workspaces []map[string]any }
	e.ok(keyAdmin, "GET", "/integrations/openai-prod/workspaces", nil, &grants)
	if len(grants.Workspaces) != 1 || grants.Workspaces[0]["rate_limits"] == nil {
		t.Fatalf("ws-1 sees grants %+v", grants)
	}
}

func TestGrantUsageLimitIsEnforced(t *testing.T) {
	e := newEnv(t)
	e.integration("openai-prod")
	e.ok(keyOrg, "PUT", "/integrations/openai-prod/workspaces", map[string]any{"workspaces": []map[string]any{
		{"id": "ws-1", "enabled": true, "usage_limits": []map[string]any{{"type": "tokens", "credit_limit": 1}}},
	}}, nil)
	body := `{"model":"@openai-prod/gpt-4o","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
	// The first request spends the budget (it was not spent when it came).
	if code, b := e.do(keyMember, "POST", "/chat/completions", body); code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	e.fails(keyMember, "POST", "/chat/completions", body, 412, "", "budget_exhausted")
	if code, b := e.do(keyOther, "POST", "/chat/completions", body); code != 400 {
		t.Fatalf("ws-2 has no grant: %d %s", code, b)
	}
	e.fails(keyOrg, "PUT", "/integrations/openai-prod/workspaces", map[string]any{"workspaces": []map[string]any{
		{"id": "ws-1", "enabled": true, "usage_limits": []map[string]any{{"type": "tokens", "credit_limit": -1}}},
	}}, 400, "workspaces[0].usage_limits[0].credit_limit", "")
	// Lifted by the organisation: the policy is archived.
	e.ok(keyOrg, "PUT", "/integrations/openai-prod/workspaces", map[string]any{"workspaces": []map[string]any{{"id": "ws-1", "enabled": true}}}, nil)
	if code, b := e.do(keyMember, "POST", "/chat/completions", body); code != 200 {
		t.Fatalf("%d %s", code, b)
	}
}

func TestCatalogWritesAreAudited(t *testing.T) {
	e := newEnv(t)
	e.integration("openai-prod", "ws-1")
	var logs struct{ Records []map[string]any }
	e.ok(keyOrg, "GET", "/audit-logs", nil, &logs)
	_, b := e.do(keyOrg, "GET", "/audit-logs", nil)
	if strings.Contains(string(b), "sk-integration-secret") {
		t.Fatalf("an audit record holds the secret: %s", b)
	}
	n := 0
	for _, r := range logs.Records {
		if strings.HasPrefix(r["resource_type"].(string), "integrations") {
			n++
		}
	}
	if n < 2 {
		t.Fatalf("%d audit records of integrations: %s", n, b)
	}
}
