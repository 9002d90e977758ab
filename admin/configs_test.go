package admin_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/modelgateway/gateway"
)

type cfgObject struct {
	ID          string          `json:"id"`
	Slug        string          `json:"slug"`
	Name        string          `json:"name"`
	WorkspaceID string          `json:"workspace_id"`
	Status      string          `json:"status"`
	Version     int             `json:"version"`
	VersionID   string          `json:"version_id"`
	Config      json.RawMessage `json:"config"`
	Format      string          `json:"format"`
	Object      string          `json:"object"`
}

type cfgCreated struct {
	Success bool
	Data    struct {
		ID, Slug  string
		VersionID string `json:"version_id"`
	}
}

type cfgRead struct {
	Success bool
	Data    cfgObject
}

type cfgList struct {
	Object string
	Data   []cfgObject
	Total  int
}

// cfgJSON is a config sending every request to the fake upstream with
// api key k.
func cfgJSON(e *akEnv, k string) string {
	return `{"provider":"openai","api_key":"` + k + `","custom_host":"` + e.up.URL + `/v1","retry":{"attempts":2}}`
}

func TestConfigsLifecycle(t *testing.T) {
	e := newCPEnv(t)
	const s1, s2 = "sk-cfg-secret-0001", "sk-cfg-secret-0002"
	var c cfgCreated
	e.want(200, coreAdminKey, "POST", "/v1/configs", `{"name":"Prod Routing","config":`+cfgJSON(e, s1)+`}`, &c)
	if !c.Success || c.Data.ID != "prod-routing" || c.Data.Slug != "prod-routing" || c.Data.VersionID == "" {
		t.Fatalf("create = %+v", c)
	}
	if st, auth := e.upstreamCall(coreKey, gateway.HeaderConfig+": prod-routing"); st != 200 || auth != "Bearer "+s1 {
		t.Fatalf("call through the new config: %d, Authorization %q", st, auth)
	}

	var got cfgRead
	e.want(200, cpVKReader, "GET", "/v1/configs/prod-routing", "", &got)
	var cfg map[string]any
	json.Unmarshal(got.Data.Config, &cfg)
	if got.Data.Name != "Prod Routing" || got.Data.Version != 1 || got.Data.VersionID != c.Data.VersionID ||
		got.Data.WorkspaceID != "ws-1" || cfg["api_key"] != "sk**************01" || cfg["provider"] != "openai" {
		t.Errorf("GET = %+v, config %s", got.Data, got.Data.Config)
	}

	// Every PUT adds a version; the newest is used at once.
	var u struct {
		Success bool
		Data    struct {
			VersionID string `json:"version_id"`
		}
	}
	e.want(200, coreAdminKey, "PUT", "/v1/configs/prod-routing", `{"config":`+cfgJSON(e, s2)+`}`, &u)
	if st, auth := e.upstreamCall(coreKey, gateway.HeaderConfig+": prod-routing"); st != 200 || auth != "Bearer "+s2 {
		t.Fatalf("call after update: %d, Authorization %q", st, auth)
	}
	e.want(200, coreAdminKey, "PUT", "/v1/configs/prod-routing", `{"name":"Renamed"}`, nil)
	var vs cfgList
	e.want(200, coreAdminKey, "GET", "/v1/configs/prod-routing/versions", "", &vs)
	if vs.Object != "list" || vs.Total != 3 || len(vs.Data) != 3 {
		t.Fatalf("versions = %+v", vs)
	}
	for i, wantV := range []int{3, 2, 1} {
		if vs.Data[i].Version != wantV {
			t.Errorf("versions[%d].version = %d, want %d (newest first)", i, vs.Data[i].Version, wantV)
		}
	}
	if vs.Data[1].VersionID != u.Data.VersionID || vs.Data[2].VersionID != c.Data.VersionID || vs.Data[0].Name != "Renamed" ||
		vs.Data[2].Name != "Prod Routing" || vs.Data[0].Format != "json" {
		t.Errorf("versions = %+v", vs.Data)
	}
	var old string
	json.Unmarshal(vs.Data[2].Config, &old)
	if !strings.Contains(old, `"api_key":"sk**************01"`) {
		t.Errorf("version 1's config = %s, want its masked key", old)
	}
	e.want(200, coreAdminKey, "GET", "/v1/configs/prod-routing/versions?page_size=1&current_page=2", "", &vs)
	if vs.Total != 3 || len(vs.Data) != 1 || vs.Data[0].Version != 1 {
		t.Errorf("versions page 2 of 1 = %+v", vs)
	}

	var list cfgList
	e.want(200, coreAdminKey, "GET", "/v1/configs", "", &list)
	if list.Total != 1 || list.Data[0].Slug != "prod-routing" || list.Data[0].Version != 3 || list.Data[0].Config != nil {
		t.Errorf("list = %+v", list)
	}

	e.wantErr(409, "slug", coreAdminKey, "POST", "/v1/configs", `{"name":"x","slug":"prod-routing","config":{"provider":"openai"}}`)
	e.want(200, coreAdminKey, "DELETE", "/v1/configs/prod-routing", "", nil)
	if st, code := e.upstreamCall(coreKey, gateway.HeaderConfig+": prod-routing"); st != 400 || code != gateway.CodeUnknownConfig {
		t.Fatalf("call through a deleted config: %d %s, want 400 %s", st, code, gateway.CodeUnknownConfig)
	}
	e.wantErr(404, "", coreAdminKey, "GET", "/v1/configs/prod-routing", "")
	e.wantErr(404, "", coreAdminKey, "GET", "/v1/configs/prod-routing/versions", "")

	// A slug freed by a delete starts again from version 1.
	e.want(200, coreAdminKey, "POST", "/v1/configs", `{"name":"prod routing","config":{"provider":"openai"}}`, nil)
	e.want(200, coreAdminKey, "GET", "/v1/configs/prod-routing", "", &got)
	if got.Data.Version != 1 {
		t.Errorf("recreated config version = %d, want 1", got.Data.Version)
	}
	e.noSecrets(s1, s2)
}

func TestConfigsAWSSecretsMasked(t *testing.T) {
	e := newCPEnv(t)
	body := `{"name":"aws","config":{"strategy":{"mode":"fallback"},"targets":[
		{"provider":"openai","api_key":"sk-target-secret-1"},
		{"provider":"bedrock","region":"us-east-1","access_key_id":"AKIAEXAMPLE","secret_access_key":"aws-secret-key-1","session_token":"aws-session-tok-1"}]}}`
	e.want(200, coreAdminKey, "POST", "/v1/configs", body, nil)
	var got cfgRead
	e.want(200, coreAdminKey, "GET", "/v1/configs/aws", "", &got)
	if !strings.Contains(string(got.Data.Config), `"access_key_id":"AKIAEXAMPLE"`) {
		t.Errorf("config = %s, want the access key id as it is", got.Data.Config)
	}
	if _, err := gateway.ParseConfig(got.Data.Config); err != nil {
		t.Errorf("masked config does not parse: %v", err)
	}
	e.want(200, coreAdminKey, "GET", "/v1/configs/aws/versions", "", nil)
	e.want(200, coreAdminKey, "GET", "/v1/configs", "", nil)
	e.noSecrets("sk-target-secret-1", "aws-secret-key-1", "aws-session-tok-1")
}

func TestConfigsInvalidConfig(t *testing.T) {
	e := newCPEnv(t)
	e.want(200, coreAdminKey, "POST", "/v1/configs", `{"name":"ok","config":{"provider":"openai"}}`, nil)
	for _, tc := range []struct {
		name, method, path, config, inMessage string
	}{
		{"bad mode", "POST", "/v1/configs", `{"targets":[{"provider":"openai"},{"provider":"openai","strategy":{"mode":"bogus"}}]}`, "targets[1].strategy.mode"},
		{"bad type", "POST", "/v1/configs", `{"targets":[{"provider":"openai","retry":{"attempts":"x"}}]}`, "targets[0].retry.attempts"},
		{"negative weight", "PUT", "/v1/configs/ok", `{"strategy":{"mode":"fallback"},"targets":[{"provider":"openai","weight":-1}]}`, "targets[0].weight"},
		{"private custom_host", "POST", "/v1/configs", `{"targets":[{"provider":"openai","custom_host":"http://10.1.2.3/v1"}]}`, "targets[0].custom_host"},
		{"not an object", "POST", "/v1/configs", `[1]`, "invalid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			res := e.do(tc.method, tc.path, strings.NewReader(`{"name":"x","config":`+tc.config+`}`), gateway.HeaderAPIKey+": "+coreAdminKey)
			if res.StatusCode != 400 {
				t.Fatalf("status = %d, want 400", res.StatusCode)
			}
			eb := decodeError(t, res)
			if deref(eb.Error.Param) != "config" || !strings.Contains(eb.Error.Message, tc.inMessage) {
				t.Errorf("error = %+v, want param config and a message naming %s", eb.Error, tc.inMessage)
			}
			if code := deref(eb.Error.Code); code != gateway.CodeInvalidConfig && code != gateway.CodeInvalidCustomHost {
				t.Errorf("code = %s, want %s", code, gateway.CodeInvalidConfig)
			}
		})
	}
	e.t = t
	var vs cfgList
	e.want(200, coreAdminKey, "GET", "/v1/configs/ok/versions", "", &vs)
	if vs.Total != 1 {
		t.Errorf("a refused PUT added a version: %+v", vs)
	}
}

func TestConfigsWorkspacesScopesBadInput(t *testing.T) {
	e := newCPEnv(t)
	e.want(200, akAdmin2, "POST", "/v1/configs", `{"name":"two","config":`+cfgJSON(e, "sk-two-cfg-secret")+`}`, nil)
	for _, m := range []struct{ method, path, body string }{
		{"GET", "/v1/configs/two", ""}, {"PUT", "/v1/configs/two", `{"name":"x"}`},
		{"DELETE", "/v1/configs/two", ""}, {"GET", "/v1/configs/two/versions", ""},
	} {
		e.wantErr(404, "", coreAdminKey, m.method, m.path, m.body)
	}
	if st, code := e.upstreamCall(coreKey, gateway.HeaderConfig+": two"); st != 400 || code != gateway.CodeUnknownConfig {
		t.Errorf("ws-1 using ws-2's config: %d %s, want 400 %s", st, code, gateway.CodeUnknownConfig)
	}
	if st, auth := e.upstreamCall(cpCompleter, gateway.HeaderConfig+": two"); st != 200 || auth != "Bearer sk-two-cfg-secret" {
		t.Errorf("ws-2 using its config: %d %q", st, auth)
	}
	var list cfgList
	e.want(200, coreAdminKey, "GET", "/v1/configs", "", &list)
	if list.Total != 0 {
		t.Errorf("ws-1's list = %+v, want empty", list)
	}
	e.want(200, akOrg, "GET", "/v1/configs/two?workspace_id=ws-2", "", nil)
	e.want(200, akOrg, "POST", "/v1/configs", `{"name":"two","workspace_id":"ws-1","config":{"provider":"openai"}}`, nil)
	e.want(200, akOrg, "GET", "/v1/configs", "", &list)
	if list.Total != 2 {
		t.Errorf("organisation's list total = %d, want 2", list.Total)
	}

	e.wantErr(403, "", coreKey, "GET", "/v1/configs", "")
	e.wantErr(403, "", cpVKReader, "POST", "/v1/configs", `{"name":"x","config":{}}`)
	e.wantErr(403, "", cpVKReader, "PUT", "/v1/configs/two", `{"name":"x"}`)
	e.wantErr(403, "workspace_id", coreAdminKey, "POST", "/v1/configs", `{"name":"x","workspace_id":"ws-2","config":{}}`)
	for _, tc := range []struct {
		name, method, path, body, param string
	}{
		{"unknown field", "POST", "/v1/configs", `{"name":"x","config":{},"isDefault":1}`, "isDefault"},
		{"no name", "POST", "/v1/configs", `{"config":{}}`, "name"},
		{"no config", "POST", "/v1/configs", `{"name":"x"}`, "config"},
		{"null config", "POST", "/v1/configs", `{"name":"x","config":null}`, "config"},
		{"bad slug", "POST", "/v1/configs", `{"name":"x","slug":"-x","config":{}}`, "slug"},
		{"update slug", "PUT", "/v1/configs/two", `{"slug":"y"}`, "slug"},
		{"page_size 101", "GET", "/v1/configs?page_size=101", "", "page_size"},
		{"versions page_size", "GET", "/v1/configs/two/versions?page_size=0", "", "page_size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			e.wantErr(400, tc.param, coreAdminKey, tc.method, tc.path, tc.body)
		})
	}
	e.t = t
	e.wantErr(405, "", coreAdminKey, "POST", "/v1/configs/two/versions", "")
}

func TestConfigsPaging(t *testing.T) {
	e := newCPEnv(t)
	for i := range 23 {
		e.want(200, coreAdminKey, "POST", "/v1/configs", `{"name":"c `+strconv.Itoa(i)+`","config":{"provider":"openai"}}`, nil)
	}
	var list cfgList
	e.want(200, coreAdminKey, "GET", "/v1/configs?page_size=10&current_page=2", "", &list)
	if list.Total != 23 || len(list.Data) != 3 {
		t.Errorf("page 2 of 10: total %d, %d items; want 23, 3", list.Total, len(list.Data))
	}
	e.want(200, coreAdminKey, "GET", "/v1/configs?current_page=5", "", &list)
	if list.Total != 23 || len(list.Data) != 0 {
		t.Errorf("page past the end: total %d, %d items", list.Total, len(list.Data))
	}
}

// TestStoreFileConfigControlPlane: a config of a store file is found and
// versioned by the control plane like one made through it.
func TestStoreFileConfigControlPlane(t *testing.T) {
	e := newCPEnv(t)
	e.store.AddConfig(gateway.SavedConfig{ID: "from-file", WorkspaceID: "ws-1", Config: json.RawMessage(cfgJSON(e, "sk-file-secret-01"))})
	if st, auth := e.upstreamCall(coreKey, gateway.HeaderConfig+": from-file"); st != 200 || auth != "Bearer sk-file-secret-01" {
		t.Fatalf("store-file config: %d %q", st, auth)
	}
	e.want(200, coreAdminKey, "PUT", "/v1/configs/from-file", `{"config":`+cfgJSON(e, "sk-file-secret-02")+`}`, nil)
	if st, auth := e.upstreamCall(coreKey, gateway.HeaderConfig+": from-file"); st != 200 || auth != "Bearer sk-file-secret-02" {
		t.Fatalf("store-file config after PUT: %d %q", st, auth)
	}
	var vs cfgList
	e.want(200, coreAdminKey, "GET", "/v1/configs/from-file/versions", "", &vs)
	if vs.Total != 2 || vs.Data[0].Version != 2 {
		t.Errorf("versions = %+v", vs)
	}
	e.noSecrets("sk-file-secret-01", "sk-file-secret-02")
}
