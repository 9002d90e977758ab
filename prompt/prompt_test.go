package prompt_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelgateway/gateway/observe"
)

const greeterV1 = `[{"role":"system","content":"You help {{company}}."},{"role":"user","content":"{{question}}"}]`

// promptRead is the part of GET /prompts/{id} the tests read.
type promptRead struct {
	ID             string          `json:"id"`
	Slug           string          `json:"slug"`
	Name           string          `json:"name"`
	CollectionID   string          `json:"collection_id"`
	String         string          `json:"string"`
	Parameters     json.RawMessage `json:"parameters"`
	Version        int             `json:"prompt_version"`
	VersionID      string          `json:"prompt_version_id"`
	VersionStatus  string          `json:"prompt_version_status"`
	VersionDesc    string          `json:"prompt_version_description"`
	LabelID        *string         `json:"prompt_version_label_id"`
	VirtualKey     string          `json:"virtual_key"`
	Model          string          `json:"model"`
	Status         string          `json:"status"`
	Object         string          `json:"object"`
	CreatedAt      string          `json:"created_at"`
	LastUpdatedAt  string          `json:"last_updated_at"`
	DefaultVersion int             `json:"default_version"`
}

func TestPromptVersionsAndAddresses(t *testing.T) {
	e := newEnv(t)
	p := e.seed(greeterV1)
	if p.Object != "prompt" || p.Slug != "greeter" || p.ID == "" || p.VersionID == "" {
		t.Fatalf("create answered %+v", p)
	}
	var got promptRead
	for _, key := range []string{p.ID, p.Slug} {
		e.ok(keyAdmin, "GET", "/prompts/"+key, nil, &got)
		if got.ID != p.ID || got.Version != 1 || got.VersionID != p.VersionID || got.String != greeterV1 ||
			got.Model != "gpt-4o-mini" || got.VirtualKey != "vk" || got.Object != "prompt" || got.VersionStatus != "active" ||
			got.CreatedAt == "" || got.LastUpdatedAt == "" || got.LabelID != nil {
			t.Fatalf("GET %s: %+v", key, got)
		}
	}

	// Every update is a version; the default stays until makeDefault.
	v2 := `[{"role":"user","content":"v2 {{question}}"}]`
	var upd struct {
		ID              string `json:"id"`
		Slug            string `json:"slug"`
		PromptVersionID string `json:"prompt_version_id"`
	}
	e.ok(keyAdmin, "PUT", "/prompts/greeter", map[string]any{"string": v2, "parameters": map[string]any{"temperature": 1},
		"version_description": "shorter"}, &upd)
	if upd.ID != p.ID || upd.PromptVersionID == "" || upd.PromptVersionID == p.VersionID {
		t.Fatalf("update answered %+v", upd)
	}
	e.ok(keyAdmin, "GET", "/prompts/greeter", nil, &got)
	if got.Version != 1 {
		t.Fatalf("the default moved to %d on update", got.Version)
	}
	e.ok(keyAdmin, "GET", "/prompts/greeter@latest", nil, &got)
	if got.Version != 2 || got.String != v2 || got.VersionDesc != "shorter" || got.Model != "" || string(got.Parameters) != `{"temperature":1}` {
		t.Fatalf("@latest: %+v", got)
	}
	// patch: true keeps what the update leaves out.
	e.ok(keyAdmin, "PUT", "/prompts/greeter", map[string]any{"patch": true, "model": "gpt-4o"}, nil)
	e.ok(keyAdmin, "GET", "/prompts/greeter@3", nil, &got)
	if got.String != v2 || got.Model != "gpt-4o" || string(got.Parameters) != `{"temperature":1}` {
		t.Fatalf("patched version 3: %+v", got)
	}
	// A metadata-only update makes no version.
	e.ok(keyAdmin, "PUT", "/prompts/greeter", map[string]any{"name": "Greeter Two"}, nil)
	e.ok(keyAdmin, "GET", "/prompts/greeter@latest", nil, &got)
	if got.Version != 3 || got.Name != "Greeter Two" || got.Slug != "greeter" {
		t.Fatalf("after a rename: %+v", got)
	}

	var versions []struct {
		ID       string          `json:"id"`
		PromptID string          `json:"prompt_id"`
		Template json.RawMessage `json:"prompt_template"`
		Version  int             `json:"prompt_version"`
		Desc     string          `json:"prompt_description"`
		LabelID  *string         `json:"label_id"`
		Status   string          `json:"status"`
		Object   string          `json:"object"`
	}
	e.ok(keyAdmin, "GET", "/prompts/"+p.ID+"/versions", nil, &versions)
	if len(versions) != 3 || versions[0].Version != 3 || versions[2].Version != 1 || versions[2].ID != p.VersionID ||
		versions[1].Desc != "shorter" || versions[0].PromptID != p.ID || versions[0].Object != "prompt" || versions[0].Status != "active" {
		t.Fatalf("versions: %+v", versions)
	}

	e.ok(keyAdmin, "PUT", "/prompts/greeter/makeDefault", map[string]any{"version": 2}, nil)
	e.ok(keyAdmin, "GET", "/prompts/greeter", nil, &got)
	if got.Version != 2 || got.DefaultVersion != 2 {
		t.Fatalf("after makeDefault 2: %+v", got)
	}
	e.fails(keyAdmin, "PUT", "/prompts/greeter/makeDefault", map[string]any{"version": 9}, http.StatusNotFound, "version")
	e.fails(keyAdmin, "PUT", "/prompts/greeter/makeDefault", map[string]any{"version": 1.5}, http.StatusBadRequest, "version")

	// Labels point at versions, by ID or name; one version per prompt.
	var lbl struct {
		ID string `json:"id"`
	}
	e.ok(keyAdmin, "POST", "/labels", map[string]any{"name": "canary", "color_code": "#ff0000"}, &lbl)
	e.ok(keyAdmin, "PUT", "/prompts/greeter/versions/"+p.VersionID, map[string]any{"label_id": lbl.ID}, nil)
	e.ok(keyAdmin, "PUT", "/prompts/greeter/versions/3", map[string]any{"label_id": "production"}, nil)
	for addr, want := range map[string]int{"greeter@canary": 1, "greeter@production": 3, p.ID + "@2": 2, "greeter@default": 2} {
		e.ok(keyAdmin, "GET", "/prompts/"+addr, nil, &got)
		if got.Version != want {
			t.Errorf("%s: version %d, want %d", addr, got.Version, want)
		}
	}
	e.ok(keyAdmin, "GET", "/prompts/greeter/versions/1", nil, &got)
	if got.LabelID == nil || *got.LabelID != lbl.ID {
		t.Fatalf("version 1's label: %v", got.LabelID)
	}
	e.ok(keyAdmin, "PUT", "/prompts/greeter/versions/2", map[string]any{"label_id": "canary"}, nil)
	e.ok(keyAdmin, "GET", "/prompts/greeter@canary", nil, &got)
	if got.Version != 2 {
		t.Fatalf("canary moved to version %d, want 2", got.Version)
	}
	e.fails(keyAdmin, "GET", "/prompts/greeter@staging", nil, http.StatusNotFound, "")
	e.fails(keyAdmin, "GET", "/prompts/greeter@nolabel", nil, http.StatusNotFound, "")
	e.fails(keyAdmin, "GET", "/prompts/greeter@7", nil, http.StatusNotFound, "")
	e.fails(keyAdmin, "GET", "/prompts/greeter/versions/7", nil, http.StatusNotFound, "versionId")
	e.fails(keyAdmin, "PUT", "/prompts/greeter/versions/1", map[string]any{"label_id": "nope"}, http.StatusNotFound, "label_id")

	var list struct {
		Data []struct {
			ID, Slug, Name, Model, Object string
		} `json:"data"`
		Total int `json:"total"`
	}
	e.ok(keyAdmin, "GET", "/prompts?search=two", nil, &list)
	if list.Total != 1 || list.Data[0].Slug != "greeter" || list.Data[0].Model != "" || list.Data[0].Object != "prompt" {
		t.Fatalf("list: %+v", list)
	}
	e.ok(keyAdmin, "GET", "/prompts?search=zzz", nil, &list)
	if list.Total != 0 {
		t.Fatalf("search zzz: %+v", list)
	}

	e.ok(keyAdmin, "DELETE", "/prompts/greeter", nil, nil)
	e.fails(keyAdmin, "GET", "/prompts/"+p.ID, nil, http.StatusNotFound, "")
}

func TestPromptBadInput(t *testing.T) {
	e := newEnv(t)
	e.seed(greeterV1)
	base := func(mod func(m map[string]any)) map[string]any {
		m := map[string]any{"name": "X", "collection_id": "support", "string": "[]", "parameters": map[string]any{}}
		mod(m)
		return m
	}
	for _, c := range []struct {
		body   any
		status int
		param  string
	}{
		{base(func(m map[string]any) { delete(m, "name") }), 400, "name"},
		{base(func(m map[string]any) { delete(m, "string") }), 400, "string"},
		{base(func(m map[string]any) { delete(m, "parameters") }), 400, "parameters"},
		{base(func(m map[string]any) { delete(m, "collection_id") }), 400, "collection_id"},
		{base(func(m map[string]any) { m["collection_id"] = "nope" }), 404, "collection_id"},
		{base(func(m map[string]any) { m["string"] = "{{#open}}" }), 400, "string"},
		{base(func(m map[string]any) { m["parameters"] = []int{1} }), 400, "parameters"},
		{base(func(m map[string]any) { m["tools"] = map[string]any{} }), 400, "tools"},
		{base(func(m map[string]any) { m["nope"] = 1 }), 400, "nope"},
		{base(func(m map[string]any) { m["name"] = "Greeter" }), 409, "name"},
		{base(func(m map[string]any) { m["name"] = "a\x00b" }), 400, "name"},
		{base(func(m map[string]any) { m["workspace_id"] = "ws-2" }), 403, "workspace_id"},
		{`{"name":`, 400, ""},
	} {
		e.fails(keyAdmin, "POST", "/prompts", c.body, c.status, c.param)
	}
	e.fails(keyAdmin, "PATCH", "/prompts/greeter", map[string]any{}, http.StatusMethodNotAllowed, "")
	e.fails(keyAdmin, "PUT", "/prompts/greeter", map[string]any{"string": "[]"}, http.StatusBadRequest, "parameters")
	e.fails(keyAdmin, "PUT", "/prompts/greeter@1", map[string]any{"name": "x"}, http.StatusBadRequest, "promptId")
	e.fails(keyAdmin, "GET", "/prompts/greeter/nothing", nil, http.StatusNotFound, "")
	e.fails(keyAdmin, "GET", "/prompts/a/b/c/d", nil, http.StatusNotFound, "")
	for _, name := range []string{"latest", "default", "42", "production", "has space", "a@b", ""} {
		e.fails(keyAdmin, "POST", "/labels", map[string]any{"name": name}, http.StatusBadRequest, "name")
	}
}

func TestPromptScopesAndIsolation(t *testing.T) {
	e := newEnv(t)
	p := e.seed(greeterV1)
	msg := e.fails(keyMember, "GET", "/prompts", nil, http.StatusForbidden, "")
	if msg != "this gateway API key lacks the prompts.read scope" {
		t.Errorf("member: %q", msg)
	}
	e.ok(keyReader, "GET", "/prompts/greeter", nil, nil)
	e.ok(keyReader, "POST", "/prompts/greeter/render", map[string]any{"variables": map[string]any{"company": "a", "question": "b"}}, nil)
	if msg := e.fails(keyReader, "PUT", "/prompts/greeter", map[string]any{"name": "x"}, http.StatusForbidden, ""); msg != "this gateway API key lacks the prompts.write scope" {
		t.Errorf("reader: %q", msg)
	}
	e.fails(keyReader, "POST", "/labels", map[string]any{"name": "x"}, http.StatusForbidden, "")

	// Another workspace's records answer as if they did not exist.
	for _, path := range []string{"/prompts/" + p.ID, "/prompts/greeter", "/prompts/greeter/versions", "/collections/support"} {
		e.fails(keyOther, "GET", path, nil, http.StatusNotFound, "")
	}
	e.fails(keyOther, "POST", "/prompts/greeter/render", map[string]any{"variables": map[string]any{}}, http.StatusNotFound, "promptId")
	e.fails(keyOther, "POST", "/prompts/greeter/completions", map[string]any{"variables": map[string]any{}}, http.StatusNotFound, "promptId")
	e.fails(keyOther, "DELETE", "/prompts/"+p.ID, nil, http.StatusNotFound, "")
	e.fails(keyOther, "GET", "/prompts?workspace_id=ws-1", nil, http.StatusForbidden, "workspace_id")
	var list struct {
		Total int `json:"total"`
	}
	e.ok(keyOther, "GET", "/prompts", nil, &list)
	if list.Total != 0 {
		t.Fatalf("ws-2 lists %d prompts", list.Total)
	}
	// ws-2 may make a prompt of the same name; each workspace sees its own.
	var c created
	e.ok(keyOther, "POST", "/collections", map[string]any{"name": "Support"}, &c)
	e.ok(keyOther, "POST", "/prompts", map[string]any{"name": "Greeter", "collection_id": "support", "string": "[]", "parameters": map[string]any{}}, nil)
	var got promptRead
	e.ok(keyOther, "GET", "/prompts/greeter", nil, &got)
	if got.String != "[]" {
		t.Fatalf("ws-2 reads %q", got.String)
	}
	// An organisation key names the workspace.
	e.ok(keyOrg, "GET", "/prompts/greeter?workspace_id=ws-1", nil, &got)
	if got.ID != p.ID {
		t.Fatalf("the organisation key read %+v", got)
	}
	e.fails(keyOrg, "GET", "/prompts/greeter", nil, http.StatusNotFound, "")
}

func TestPromptAudit(t *testing.T) {
	e := newEnv(t)
	p := e.seed(greeterV1)
	e.ok(keyAdmin, "PUT", "/prompts/greeter/makeDefault", map[string]any{"version": 1}, nil)
	e.ok(keyAdmin, "POST", "/prompts/greeter/render", map[string]any{"variables": map[string]any{"company": "a", "question": "b"}}, nil)
	var part created
	e.ok(keyAdmin, "POST", "/prompts/partials", map[string]any{"name": "Tone", "string": "Be kind."}, &part)
	var lbl created
	e.ok(keyAdmin, "POST", "/labels", map[string]any{"name": "beta"}, &lbl)
	e.ok(keyAdmin, "DELETE", "/labels/beta", nil, nil)
	recs, _, err := e.store.AuditRecords(t.Context(), observe.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(recs) // oldest first
	type row struct{ action, resource, id string }
	var got []row
	for _, r := range recs {
		if r.WorkspaceID != "ws-1" || r.KeyID != "key-admin" {
			t.Errorf("%s: key %q in %q", r.Action, r.KeyID, r.WorkspaceID)
		}
		got = append(got, row{r.Action, r.ResourceType, r.ResourceID})
	}
	collID := ""
	for _, g := range got {
		if g.resource == "collections" {
			collID = g.id
		}
	}
	want := []row{
		{"collections.create", "collections", collID},
		{"prompts.create", "prompts", p.ID},
		{"prompts.update", "prompts", "greeter"},
		{"prompt_partials.create", "prompt_partials", part.ID},
		{"labels.create", "labels", lbl.ID},
		{"labels.delete", "labels", "beta"},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(row{})); diff != "" || collID == "" {
		t.Fatalf("audit records (-want +got):\n%s", diff)
	}
}
