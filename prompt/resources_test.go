package prompt_test

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
)

func TestPartialRoutes(t *testing.T) {
	e := newEnv(t)
	var c struct {
		ID        string `json:"id"`
		Slug      string `json:"slug"`
		VersionID string `json:"version_id"`
	}
	e.ok(keyAdmin, "POST", "/prompts/partials", map[string]any{"name": "Safety Rules", "string": "Never {{verb}}.", "version_description": "first"}, &c)
	if c.Slug != "safety-rules" || c.ID == "" || c.VersionID == "" {
		t.Fatalf("create: %+v", c)
	}
	var got struct {
		ID, Slug, Name, String, Status, Object string
		Version                                int     `json:"version"`
		VersionDescription                     string  `json:"version_description"`
		VersionID                              string  `json:"prompt_partial_version_id"`
		CollectionID                           *string `json:"collection_id"`
		CreatedAt                              string  `json:"created_at"`
	}
	e.ok(keyAdmin, "GET", "/prompts/partials/safety-rules", nil, &got)
	if got.ID != c.ID || got.String != "Never {{verb}}." || got.Version != 1 || got.VersionDescription != "first" ||
		got.VersionID != c.VersionID || got.Status != "active" || got.Object != "partial" || got.CreatedAt == "" {
		t.Fatalf("read: %+v", got)
	}
	var upd struct {
		VersionID string `json:"prompt_partial_version_id"`
	}
	e.ok(keyAdmin, "PUT", "/prompts/partials/"+c.ID, map[string]any{"string": "Never ever {{verb}}.", "description": "second"}, &upd)
	if upd.VersionID == "" || upd.VersionID == c.VersionID {
		t.Fatalf("update: %+v", upd)
	}
	var versions []struct {
		PartialID   string `json:"prompt_partial_id"`
		VersionID   string `json:"prompt_partial_version_id"`
		Slug        string `json:"slug"`
		Version     string `json:"version"`
		String      string `json:"string"`
		Description string `json:"description"`
		Status      string `json:"prompt_version_status"`
		Object      string `json:"object"`
	}
	e.ok(keyAdmin, "GET", "/prompts/partials/safety-rules/versions", nil, &versions)
	if len(versions) != 2 || versions[0].Version != "2" || versions[0].VersionID != upd.VersionID || versions[0].Description != "second" ||
		versions[1].String != "Never {{verb}}." || versions[0].Object != "partial" || versions[0].PartialID != c.ID || versions[0].Status != "active" {
		t.Fatalf("versions: %+v", versions)
	}
	e.ok(keyAdmin, "GET", "/prompts/partials/safety-rules@latest", nil, &got)
	if got.Version != 2 {
		t.Fatalf("@latest: %+v", got)
	}
	e.ok(keyAdmin, "PUT", "/prompts/partials/safety-rules/makeDefault", map[string]any{"version": 2}, nil)
	e.ok(keyAdmin, "GET", "/prompts/partials/safety-rules", nil, &got)
	if got.Version != 2 || got.String != "Never ever {{verb}}." {
		t.Fatalf("after makeDefault: %+v", got)
	}
	e.ok(keyAdmin, "PUT", "/prompts/partials/safety-rules", map[string]any{"name": "Rules", "status": "archived"}, nil)
	var list []struct {
		ID, Slug, Name, Status, Object string
	}
	e.ok(keyAdmin, "GET", "/prompts/partials", nil, &list)
	if len(list) != 1 || list[0].Name != "Rules" || list[0].Slug != "safety-rules" || list[0].Status != "archived" || list[0].Object != "partial" {
		t.Fatalf("list: %+v", list)
	}
	e.fails(keyAdmin, "POST", "/prompts/partials", map[string]any{"name": "Rules2"}, http.StatusBadRequest, "string")
	e.fails(keyAdmin, "POST", "/prompts/partials", map[string]any{"name": "x", "string": "{{/x}}"}, http.StatusBadRequest, "string")
	e.fails(keyAdmin, "POST", "/prompts/partials", map[string]any{"name": "Safety Rules", "string": "x"}, http.StatusConflict, "name")
	e.fails(keyAdmin, "PUT", "/prompts/partials/safety-rules", map[string]any{"status": "gone"}, http.StatusBadRequest, "status")
	e.fails(keyAdmin, "GET", "/prompts/partials/safety-rules/other", nil, http.StatusNotFound, "")
	e.fails(keyOther, "GET", "/prompts/partials/safety-rules", nil, http.StatusNotFound, "")
	e.ok(keyAdmin, "DELETE", "/prompts/partials/safety-rules", nil, nil)
	e.fails(keyAdmin, "GET", "/prompts/partials/"+c.ID, nil, http.StatusNotFound, "")
}

func TestLabelRoutes(t *testing.T) {
	e := newEnv(t)
	var c struct {
		ID string `json:"id"`
	}
	e.ok(keyAdmin, "POST", "/labels", map[string]any{"name": "canary", "description": "early users", "color_code": "#ffaa00"}, &c)
	type label struct {
		ID          string  `json:"id"`
		Name        string  `json:"name"`
		Description string  `json:"description"`
		ColorCode   string  `json:"color_code"`
		WorkspaceID *string `json:"workspace_id"`
		IsUniversal bool    `json:"is_universal"`
		Status      string  `json:"status"`
		CreatedAt   *string `json:"created_at"`
	}
	var got label
	e.ok(keyAdmin, "GET", "/labels/"+c.ID, nil, &got)
	if got.Name != "canary" || got.Description != "early users" || got.ColorCode != "#ffaa00" || got.WorkspaceID == nil ||
		*got.WorkspaceID != "ws-1" || got.IsUniversal || got.Status != "active" || got.CreatedAt == nil {
		t.Fatalf("read: %+v", got)
	}
	var list struct {
		Total int     `json:"total"`
		Data  []label `json:"data"`
	}
	e.ok(keyAdmin, "GET", "/labels", nil, &list)
	if list.Total != 4 || list.Data[0].Name != "production" || !list.Data[0].IsUniversal || list.Data[3].ID != c.ID {
		t.Fatalf("list: %+v", list)
	}
	e.ok(keyAdmin, "GET", "/labels?search=CAN&page_size=1", nil, &list)
	if list.Total != 1 || len(list.Data) != 1 || list.Data[0].ID != c.ID {
		t.Fatalf("search: %+v", list)
	}
	e.ok(keyOther, "GET", "/labels", nil, &list)
	if list.Total != 3 {
		t.Fatalf("ws-2 sees %d labels, want the 3 universal ones", list.Total)
	}
	e.fails(keyOther, "GET", "/labels/"+c.ID, nil, http.StatusNotFound, "")
	e.ok(keyAdmin, "PUT", "/labels/canary", map[string]any{"name": "early", "color_code": "#000000"}, nil)
	e.ok(keyAdmin, "GET", "/labels/early", nil, &got)
	if got.ID != c.ID || got.ColorCode != "#000000" || got.Description != "early users" {
		t.Fatalf("after update: %+v", got)
	}
	e.fails(keyAdmin, "POST", "/labels", map[string]any{"name": "early"}, http.StatusConflict, "name")
	e.fails(keyAdmin, "PUT", "/labels/production", map[string]any{"name": "prod"}, http.StatusForbidden, "")
	e.fails(keyAdmin, "DELETE", "/labels/staging", nil, http.StatusForbidden, "")
	e.fails(keyAdmin, "GET", "/labels/x/y", nil, http.StatusNotFound, "")
	e.ok(keyAdmin, "DELETE", "/labels/"+c.ID, nil, nil)
	e.fails(keyAdmin, "GET", "/labels/early", nil, http.StatusNotFound, "")
}

func TestCollectionRoutes(t *testing.T) {
	e := newEnv(t)
	var root, child struct {
		ID   string `json:"id"`
		Slug string `json:"slug"`
	}
	e.ok(keyAdmin, "POST", "/collections", map[string]any{"name": "Customer Support"}, &root)
	e.ok(keyAdmin, "POST", "/collections", map[string]any{"name": "Refunds", "parent_collection_id": root.Slug, "workspace_id": "ws-1"}, &child)
	if root.Slug != "customer-support" || child.Slug != "refunds" {
		t.Fatalf("creates: %+v %+v", root, child)
	}
	e.ok(keyAdmin, "POST", "/prompts", map[string]any{"name": "P", "collection_id": child.ID, "string": "[]", "parameters": map[string]any{}}, nil)
	type details struct {
		Children int     `json:"child_collections_count"`
		Prompts  int     `json:"prompts_count"`
		PLast    *string `json:"prompts_last_updated_at"`
	}
	var list struct {
		Total int `json:"total"`
		Data  []struct {
			ID, Name, Slug, Status string
			WorkspaceID            *string `json:"workspace_id"`
			Parent                 *string `json:"parent_collection_id"`
			IsDefault              bool    `json:"is_default"`
			Details                details `json:"collection_details"`
		} `json:"data"`
	}
	e.ok(keyAdmin, "GET", "/collections", nil, &list)
	if list.Total != 2 || list.Data[0].Details.Children != 1 || list.Data[0].Parent != nil || list.Data[1].Details.Prompts != 1 ||
		list.Data[1].Details.PLast == nil || *list.Data[1].Parent != root.ID || *list.Data[0].WorkspaceID != "ws-1" || list.Data[0].Status != "active" {
		t.Fatalf("list: %+v", list)
	}
	var got struct {
		ID       string `json:"id"`
		Children []struct {
			ID      string  `json:"id"`
			Name    string  `json:"name"`
			Details details `json:"collection_details"`
		} `json:"child_collections"`
	}
	e.ok(keyAdmin, "GET", "/collections/customer-support", nil, &got)
	if got.ID != root.ID || len(got.Children) != 1 || got.Children[0].ID != child.ID || got.Children[0].Details.Prompts != 1 {
		t.Fatalf("read: %+v", got)
	}
	e.ok(keyAdmin, "PUT", "/collections/"+child.ID, map[string]any{"name": "Refund Desk"}, nil)
	e.fails(keyAdmin, "PUT", "/collections/"+child.ID, map[string]any{}, http.StatusBadRequest, "name")
	e.fails(keyAdmin, "DELETE", "/collections/customer-support", nil, http.StatusConflict, "")
	e.fails(keyAdmin, "DELETE", "/collections/refunds", nil, http.StatusConflict, "")
	e.fails(keyAdmin, "POST", "/collections", map[string]any{"name": "X", "parent_collection_id": "nope"}, http.StatusNotFound, "parent_collection_id")
	e.fails(keyOther, "GET", "/collections/"+root.ID, nil, http.StatusNotFound, "")
	e.ok(keyAdmin, "DELETE", "/prompts/p", nil, nil)
	e.ok(keyAdmin, "DELETE", "/collections/refunds", nil, nil)
	e.ok(keyAdmin, "DELETE", "/collections/customer-support", nil, nil)
	e.ok(keyAdmin, "GET", "/collections", nil, &list)
	if list.Total != 0 {
		t.Fatalf("after deletes: %+v", list)
	}
}

// TestConcurrentUpdates: racing updates of one prompt each make a
// version of their own, numbered without gaps, and render meanwhile.
func TestConcurrentUpdates(t *testing.T) {
	e := newEnv(t)
	e.seed(greeterV1)
	const writers = 8
	errs := make(chan string, 2*writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			body := map[string]any{"patch": true, "string": `[{"role":"user","content":"w` + strconv.Itoa(i) + ` {{question}}"}]`}
			if status, b := e.do(keyAdmin, "PUT", "/prompts/greeter", body); status != 200 {
				errs <- string(b)
			}
		}()
		go func() {
			defer wg.Done()
			vars := map[string]any{"variables": map[string]any{"company": "a", "question": "q"}}
			if status, b := e.do(keyAdmin, "POST", "/prompts/greeter@latest/render", vars); status != 200 {
				errs <- string(b)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Error(msg)
	}
	var versions []struct {
		Version int `json:"prompt_version"`
	}
	e.ok(keyAdmin, "GET", "/prompts/greeter/versions", nil, &versions)
	if len(versions) != writers+1 {
		t.Fatalf("%d versions, want %d", len(versions), writers+1)
	}
	for i, v := range versions {
		if v.Version != writers+1-i {
			t.Fatalf("versions %+v are not numbered without gaps", versions)
		}
	}
}

// TestPartialsStayInTheirWorkspace: a template includes the partials of
// its own workspace only.
func TestPartialsStayInTheirWorkspace(t *testing.T) {
	e := newEnv(t)
	e.ok(keyAdmin, "POST", "/prompts/partials", map[string]any{"name": "Tone", "string": "secret of ws-1"}, nil)
	e.ok(keyOther, "POST", "/collections", map[string]any{"name": "C"}, nil)
	e.ok(keyOther, "POST", "/prompts", map[string]any{"name": "P", "collection_id": "c", "parameters": map[string]any{},
		"string": `[{"role":"user","content":"{{>tone}}"}]`}, nil)
	e.fails(keyOther, "POST", "/prompts/p/render", map[string]any{}, http.StatusBadRequest, "string")
}
