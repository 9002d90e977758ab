package prompt

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// servePrompts serves the prompts (the reference's shapes):
//
//	POST   /prompts                         create → {"id","slug","version_id","object"}
//	GET    /prompts                         list   → {"data","total"}
//	GET    /prompts/{id}                    read   → the prompt at the version {id} addresses
//	PUT    /prompts/{id}                    update → {"id","slug","prompt_version_id"}
//	DELETE /prompts/{id}                    delete → {}
//	GET    /prompts/{id}/versions           the versions, newest first
//	GET    /prompts/{id}/versions/{version} one version, as a prompt
//	PUT    /prompts/{id}/versions/{version} point a label at it → {}
//	PUT    /prompts/{id}/makeDefault        pick the default version → {}
//	POST   /prompts/{id}/render             render → {"success":true,"data"}
//	POST   /prompts/{id}/completions        run the rendered body as a chat completion
//
// {id} is a prompt's ID or slug, optionally followed by @ and a version
// number, a label's name, latest or default.
func (p *plane) servePrompts(w http.ResponseWriter, r *http.Request, ws string) error {
	key, sub, version := r.PathValue("id"), r.PathValue("sub"), r.PathValue("versionId")
	rs := p.versioned(KindPrompt, key, sub, version, p.listPrompts, p.createPrompt, p.getPrompt, p.updatePrompt)
	switch {
	case rs != nil:
	case sub == "versions":
		rs = routes{http.MethodGet: p.getPrompt, http.MethodPut: p.labelVersion}
	case sub == "render" && version == "":
		rs = routes{http.MethodPost: p.render}
	case sub == "completions" && version == "":
		rs = routes{http.MethodPost: p.completions}
	}
	return rs.serve(w, r, ws, key)
}

// versionBody is the content of a version a prompt's create or update
// sets.
type versionBody struct {
	String             *string         `json:"string"`
	Parameters         json.RawMessage `json:"parameters"`
	Model              *string         `json:"model"`
	VirtualKey         *string         `json:"virtual_key"`
	VersionDescription *string         `json:"version_description"`
	Functions          json.RawMessage `json:"functions"`
	Tools              json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	IsRawTemplate      *int            `json:"is_raw_template"`
}

// any reports whether b sets any field of a version.
func (b *versionBody) any(metadata json.RawMessage) bool {
	return b.String != nil || b.Parameters != nil || b.Model != nil || b.VirtualKey != nil || b.VersionDescription != nil ||
		b.Functions != nil || b.Tools != nil || b.ToolChoice != nil || b.IsRawTemplate != nil || metadata != nil
}

// version checks b and returns the version it makes, with the fields it
// leaves out taken from base (nil: left empty). metadata is the version's
// template_metadata or prompt_metadata.
func (b *versionBody) version(base *Version, metadata json.RawMessage, metaParam string) (*Version, error) {
	v := &Version{}
	if base != nil {
		*v = *base
	}
	if b.String != nil {
		if err := checkTemplate(*b.String); err != nil {
			return nil, err
		}
		v.Template = *b.String
	} else if base == nil {
		return nil, control.Invalid("string", "string is required")
	}
	for _, f := range []struct {
		param string
		raw   *json.RawMessage
		want  string
		dst   *json.RawMessage
	}{
		{"parameters", &b.Parameters, "{", &v.Parameters},
		{"functions", &b.Functions, "[", &v.Functions},
		{"tools", &b.Tools, "[", &v.Tools},
		{"tool_choice", &b.ToolChoice, "{\"", &v.ToolChoice},
		{metaParam, &metadata, "{", &v.Metadata},
	} {
		if *f.raw == nil {
			continue
		}
		if err := checkJSON(f.param, f.raw, f.want); err != nil {
			return nil, err
		}
		*f.dst = *f.raw
	}
	if b.Model != nil {
		if err := checkText("model", *b.Model, maxModelLen); err != nil {
			return nil, err
		}
		v.Model = *b.Model
	}
	if b.VirtualKey != nil {
		if err := checkText("virtual_key", *b.VirtualKey, maxNameLen); err != nil {
			return nil, err
		}
		v.VirtualKey = *b.VirtualKey
	}
	if b.VersionDescription != nil {
		if err := checkText("version_description", *b.VersionDescription, maxDescLen); err != nil {
			return nil, err
		}
		v.Description = *b.VersionDescription
	} else if base != nil {
		v.Description = ""
	}
	if b.IsRawTemplate != nil {
		if *b.IsRawTemplate != 0 && *b.IsRawTemplate != 1 {
			return nil, control.Invalid("is_raw_template", "is_raw_template must be 0 or 1")
		}
		v.Raw = *b.IsRawTemplate == 1
	}
	return v, nil
}

// createPromptBody is the body of POST /prompts.
type createPromptBody struct {
	versionBody
	Name             *string         `json:"name"`
	CollectionID     *string         `json:"collection_id"`
	WorkspaceID      *string         `json:"workspace_id"`
	TemplateMetadata json.RawMessage `json:"template_metadata"`
}

func (p *plane) createPrompt(w http.ResponseWriter, r *http.Request, ws, _ string) error {
	var b createPromptBody
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	ws, err := createIn(r, ws, b.WorkspaceID, b.Name)
	if err != nil {
		return err
	}
	if b.Parameters == nil {
		return control.Invalid("parameters", "parameters is required")
	}
	v, err := b.version(nil, b.TemplateMetadata, "template_metadata")
	if err != nil {
		return err
	}
	if b.CollectionID == nil {
		return control.Invalid("collection_id", "collection_id is required")
	}
	coll, err := p.collection(r.Context(), ws, *b.CollectionID)
	if err != nil {
		return err
	}
	return p.createVersioned(w, r, KindPrompt, ws, *b.Name, coll.ID, v)
}

// createVersioned stores a new prompt or partial named name, whose
// first version is v (which it completes), and answers its IDs: {"id",
// "slug","version_id"}, with "object":"prompt" for a prompt.
func (p *plane) createVersioned(w http.ResponseWriter, r *http.Request, kind Kind, ws, name, collection string, v *Version) error {
	slug := control.SlugOf(name)
	if slug == "" {
		return control.Invalid("name", "name must hold a letter or digit to derive a slug from")
	}
	now := p.now()
	rec := &Record{Kind: kind, ID: control.NewUUID(), WorkspaceID: ws, Slug: slug, Name: name, CollectionID: collection,
		DefaultVersion: 1, LatestVersion: 1, Status: statusActive, CreatedAt: now, UpdatedAt: now}
	v.ID, v.RecordID, v.Number, v.CreatedAt = control.NewUUID(), rec.ID, 1, now
	if err := p.create(r.Context(), rec, v, "name"); err != nil {
		return err
	}
	object := ""
	if kind == KindPrompt {
		object = "prompt"
	}
	httpapi.WriteJSON(w, http.StatusOK, struct {
		ID        string `json:"id"`
		Slug      string `json:"slug"`
		VersionID string `json:"version_id"`
		Object    string `json:"object,omitempty"`
	}{rec.ID, rec.Slug, v.ID, object})
	return nil
}

// collection returns the collection key of workspace ws, else a 404
// naming collection_id.
func (p *plane) collection(ctx context.Context, ws, key string) (*Record, error) {
	c, err := p.o.Store.Record(ctx, KindCollection, ws, key)
	if errors.Is(err, gateway.ErrNotFound) {
		return nil, notFound("collection_id", "no collection "+control.Quote(key))
	}
	return c, err
}

// updatePromptBody is the body of PUT /prompts/{id}.
type updatePromptBody struct {
	versionBody
	Patch          bool            `json:"patch"`
	Name           *string         `json:"name"`
	CollectionID   *string         `json:"collection_id"`
	PromptMetadata json.RawMessage `json:"prompt_metadata"`
}

func (p *plane) updatePrompt(w http.ResponseWriter, r *http.Request, ws, key string) error {
	if strings.Contains(key, "@") {
		return control.Invalid("promptId", "an update names the prompt, not one of its versions")
	}
	var b updatePromptBody
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	if err := control.CheckName(b.Name, false); err != nil {
		return err
	}
	var collection string
	if b.CollectionID != nil {
		c, err := p.collection(r.Context(), ws, *b.CollectionID)
		if err != nil {
			return err
		}
		collection = c.ID
	}
	newVersion := b.any(b.PromptMetadata)
	rec, v, err := p.change(r.Context(), KindPrompt, ws, key, func(rec *Record) (*Record, *Version, error) {
		if b.Name != nil {
			rec.Name = *b.Name
		}
		if collection != "" {
			rec.CollectionID = collection
		}
		if !newVersion {
			return rec, nil, nil
		}
		var base *Version
		if b.Patch {
			var err error
			if base, err = p.o.Store.Version(r.Context(), rec.ID, rec.LatestVersion); err != nil {
				return nil, nil, err
			}
		} else if b.Parameters == nil {
			return nil, nil, control.Invalid("parameters", "parameters is required with string unless patch is true")
		}
		v, err := b.version(base, b.PromptMetadata, "prompt_metadata")
		if err != nil {
			return nil, nil, err
		}
		return rec, p.nextVersion(rec, v), nil
	})
	if err != nil {
		return err
	}
	versionID := p.versionAfter(r.Context(), rec, v)
	httpapi.WriteJSON(w, http.StatusOK, struct {
		ID              string `json:"id"`
		Slug            string `json:"slug"`
		PromptVersionID string `json:"prompt_version_id"`
	}{rec.ID, rec.Slug, versionID})
	return nil
}

// versionAfter returns the ID of the version an update of rec made (v),
// or of rec's default version when it made none.
func (p *plane) versionAfter(ctx context.Context, rec *Record, v *Version) string {
	if v != nil {
		return v.ID
	}
	if cur, err := p.o.Store.Version(ctx, rec.ID, rec.DefaultVersion); err == nil {
		return cur.ID
	}
	return ""
}

// nextVersion makes v the newest version of rec.
func (p *plane) nextVersion(rec *Record, v *Version) *Version {
	rec.LatestVersion++
	v.ID, v.RecordID, v.Number, v.CreatedAt = control.NewUUID(), rec.ID, rec.LatestVersion, p.now()
	return v
}

// remove serves DELETE of record key of kind.
func (p *plane) remove(w http.ResponseWriter, r *http.Request, kind Kind, ws, key string) error {
	rec, err := p.find(r.Context(), kind, ws, key)
	if err != nil {
		return err
	}
	if err := p.o.Store.DeleteRecord(r.Context(), kind, ws, rec.ID); err != nil {
		if errors.Is(err, gateway.ErrNotFound) {
			return notFound("", "no "+string(kind)+" "+control.Quote(key))
		}
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, empty)
	return nil
}

// promptWire is a prompt at one version, as GET /prompts/{id} answers it.
type promptWire struct {
	ID               string          `json:"id"`
	Slug             string          `json:"slug"`
	Name             string          `json:"name"`
	CollectionID     string          `json:"collection_id"`
	WorkspaceID      string          `json:"workspace_id,omitempty"`
	String           string          `json:"string"`
	Parameters       json.RawMessage `json:"parameters"`
	PromptVersion    int             `json:"prompt_version"`
	PromptVersionID  string          `json:"prompt_version_id"`
	VersionStatus    string          `json:"prompt_version_status"`
	VersionDesc      string          `json:"prompt_version_description"`
	VersionLabelID   *string         `json:"prompt_version_label_id"`
	VirtualKey       string          `json:"virtual_key"`
	Model            string          `json:"model"`
	Functions        json.RawMessage `json:"functions,omitempty"`
	Tools            json.RawMessage `json:"tools,omitempty"`
	ToolChoice       json.RawMessage `json:"tool_choice,omitempty"`
	TemplateMetadata json.RawMessage `json:"template_metadata,omitempty"`
	IsRawTemplate    bool            `json:"is_raw_template"`
	DefaultVersion   int             `json:"default_version"`
	LatestVersion    int             `json:"latest_version"`
	Status           string          `json:"status"`
	CreatedAt        time.Time       `json:"created_at"`
	LastUpdatedAt    time.Time       `json:"last_updated_at"`
	Object           string          `json:"object"`
}

// labelOf returns the ID of a label of rec that points at version n,
// nil for none (the first by ID when several do).
func labelOf(rec *Record, n int) *string {
	var found *string
	for id, v := range rec.Labels {
		if v == n && (found == nil || id < *found) {
			found = &id
		}
	}
	return found
}

func promptWireOf(rec *Record, v *Version) promptWire {
	params := v.Parameters
	if params == nil {
		params = json.RawMessage("{}")
	}
	return promptWire{ID: rec.ID, Slug: rec.Slug, Name: rec.Name, CollectionID: rec.CollectionID, WorkspaceID: rec.WorkspaceID,
		String: v.Template, Parameters: params, PromptVersion: v.Number, PromptVersionID: v.ID,
		VersionStatus: statusActive, VersionDesc: v.Description, VersionLabelID: labelOf(rec, v.Number),
		VirtualKey: v.VirtualKey, Model: v.Model, Functions: v.Functions, Tools: v.Tools, ToolChoice: v.ToolChoice,
		TemplateMetadata: v.Metadata, IsRawTemplate: v.Raw, DefaultVersion: rec.DefaultVersion, LatestVersion: rec.LatestVersion,
		Status: rec.Status, CreatedAt: rec.CreatedAt, LastUpdatedAt: rec.UpdatedAt, Object: "prompt"}
}

// getPrompt serves GET of the prompt key at the version it addresses, or
// at the version its path names (a version's ID or number).
func (p *plane) getPrompt(w http.ResponseWriter, r *http.Request, ws, key string) error {
	rec, v, err := p.versionOf(r.Context(), KindPrompt, ws, key, r.PathValue("versionId"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, promptWireOf(rec, v))
	return nil
}

// versionOf returns the record key of kind with the version it
// addresses, or version (a version's ID or number) when not empty.
func (p *plane) versionOf(ctx context.Context, kind Kind, ws, key, version string) (*Record, *Version, error) {
	if version == "" {
		return resolve(ctx, p.o.Store, kind, ws, key, "")
	}
	if strings.Contains(key, "@") {
		return nil, nil, control.Invalid("versionId", "name the prompt, not one of its versions, before /versions/")
	}
	rec, err := p.find(ctx, kind, ws, key)
	if err != nil {
		return nil, nil, err
	}
	if n, err := strconv.Atoi(version); err == nil {
		v, err := p.o.Store.Version(ctx, rec.ID, n)
		if errors.Is(err, gateway.ErrNotFound) {
			return nil, nil, notFound("versionId", "no version "+control.Quote(version)+" of "+string(kind)+" "+control.Quote(key))
		}
		return rec, v, err
	}
	vs, err := p.o.Store.Versions(ctx, rec.ID)
	if err != nil {
		return nil, nil, err
	}
	for i := range vs {
		if strings.EqualFold(vs[i].ID, version) {
			return rec, &vs[i], nil
		}
	}
	return nil, nil, notFound("versionId", "no version "+control.Quote(version)+" of "+string(kind)+" "+control.Quote(key))
}

// promptSummary is a prompt in a list.
type promptSummary struct {
	ID            string    `json:"id"`
	Slug          string    `json:"slug"`
	Name          string    `json:"name"`
	CollectionID  string    `json:"collection_id"`
	Model         string    `json:"model"`
	Status        string    `json:"status"`
	CreatedAt     time.Time `json:"created_at"`
	LastUpdatedAt time.Time `json:"last_updated_at"`
	Object        string    `json:"object"`
}

// listPrompts serves GET /prompts: the prompts of the workspace, in
// pages, those of a collection_id or whose name holds search.
func (p *plane) listPrompts(w http.ResponseWriter, r *http.Request, ws, _ string) error {
	q := r.URL.Query()
	page, err := httpapi.ParsePage(q)
	if err != nil {
		return err
	}
	keep, err := p.listFilter(r.Context(), ws, q.Get("collection_id"), q.Get("search"))
	if err != nil {
		return err
	}
	all, err := p.o.Store.Records(r.Context(), KindPrompt, ws)
	if err != nil {
		return err
	}
	data, total := httpapi.Filter(all, keep, func(rec *Record) promptSummary {
		s := promptSummary{ID: rec.ID, Slug: rec.Slug, Name: rec.Name, CollectionID: rec.CollectionID, Status: rec.Status,
			CreatedAt: rec.CreatedAt, LastUpdatedAt: rec.UpdatedAt, Object: "prompt"}
		if v, err := p.o.Store.Version(r.Context(), rec.ID, rec.DefaultVersion); err == nil {
			s.Model = v.Model
		}
		return s
	}, page)
	httpapi.WriteJSON(w, http.StatusOK, struct {
		Data  []promptSummary `json:"data"`
		Total int             `json:"total"`
	}{data, total})
	return nil
}

// listFilter returns what a list keeps: the records of collection (a
// collection's ID or slug; "" for any) whose name holds search (case
// folded; "" for any).
func (p *plane) listFilter(ctx context.Context, ws, collection, search string) (func(*Record) bool, error) {
	if collection != "" {
		c, err := p.collection(ctx, ws, collection)
		if err != nil {
			return nil, err
		}
		collection = c.ID
	}
	search = strings.ToLower(search)
	return func(rec *Record) bool {
		return (collection == "" || rec.CollectionID == collection) &&
			(search == "" || strings.Contains(strings.ToLower(rec.Name), search))
	}, nil
}
