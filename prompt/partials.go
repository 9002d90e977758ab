package prompt

import (
	"net/http"
	"time"

	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// servePartials serves the prompt partials (the reference's shapes):
//
//	POST   /prompts/partials                   create → {"id","slug","version_id"}
//	GET    /prompts/partials                   list   → [the partials]
//	GET    /prompts/partials/{id}              read   → the partial at the version {id} addresses
//	PUT    /prompts/partials/{id}              update → {"prompt_partial_version_id"}
//	DELETE /prompts/partials/{id}              delete → {}
//	GET    /prompts/partials/{id}/versions     the versions, newest first
//	PUT    /prompts/partials/{id}/makeDefault  pick the default version → {}
//
// A template includes a partial by its slug: {{>slug}} places its
// default version, {{>slug@2}} version 2, {{>slug@latest}} the newest.
func (p *plane) servePartials(w http.ResponseWriter, r *http.Request, ws string) error {
	return p.versioned(KindPartial, r.PathValue("id"), r.PathValue("sub"), "",
		p.listPartials, p.createPartial, p.getPartial, p.updatePartial).serve(w, r, ws, r.PathValue("id"))
}

// partialBody is the body of POST /prompts/partials and PUT
// /prompts/partials/{id}.
type partialBody struct {
	WorkspaceID        *string `json:"workspace_id"`
	Name               *string `json:"name"`
	String             *string `json:"string"`
	VersionDescription *string `json:"version_description"` // of a create
	Description        *string `json:"description"`         // of an update
	Status             *string `json:"status"`              // of an update
}

// version returns the version b makes.
func (b *partialBody) version() (*Version, error) {
	if b.String == nil {
		return nil, control.Invalid("string", "string is required")
	}
	if err := checkTemplate(*b.String); err != nil {
		return nil, err
	}
	v := &Version{Template: *b.String}
	for param, d := range map[string]*string{"version_description": b.VersionDescription, "description": b.Description} {
		if d != nil {
			if err := checkText(param, *d, maxDescLen); err != nil {
				return nil, err
			}
			v.Description = *d
		}
	}
	return v, nil
}

func (p *plane) createPartial(w http.ResponseWriter, r *http.Request, ws, _ string) error {
	var b partialBody
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	switch {
	case b.Description != nil:
		return control.Invalid("description", "a create takes version_description")
	case b.Status != nil:
		return control.Invalid("status", "a partial is created active")
	}
	ws, err := createIn(r, ws, b.WorkspaceID, b.Name)
	if err != nil {
		return err
	}
	v, err := b.version()
	if err != nil {
		return err
	}
	return p.createVersioned(w, r, KindPartial, ws, *b.Name, "", v)
}

// updatePartial serves PUT /prompts/partials/{id}: a new name or status
// changes the partial; a string makes a new version (the default one
// stays until makeDefault picks another).
func (p *plane) updatePartial(w http.ResponseWriter, r *http.Request, ws, key string) error {
	var b partialBody
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	switch {
	case b.WorkspaceID != nil:
		return control.Invalid("workspace_id", "workspace_id cannot be changed")
	case b.VersionDescription != nil:
		return control.Invalid("version_description", "an update takes description")
	case b.Status != nil && *b.Status != statusActive && *b.Status != "archived":
		return control.Invalid("status", "status must be active or archived")
	case b.Description != nil && b.String == nil:
		return control.Invalid("description", "description describes a new version: send string too")
	}
	if err := control.CheckName(b.Name, false); err != nil {
		return err
	}
	var nv *Version
	if b.String != nil {
		var err error
		if nv, err = b.version(); err != nil {
			return err
		}
	}
	rec, v, err := p.change(r.Context(), KindPartial, ws, key, func(rec *Record) (*Record, *Version, error) {
		if b.Name != nil {
			rec.Name = *b.Name
		}
		if b.Status != nil {
			rec.Status = *b.Status
		}
		if nv == nil {
			return rec, nil, nil
		}
		v := *nv
		return rec, p.nextVersion(rec, &v), nil
	})
	if err != nil {
		return err
	}
	versionID := p.versionAfter(r.Context(), rec, v)
	httpapi.WriteJSON(w, http.StatusOK, struct {
		VersionID string `json:"prompt_partial_version_id"`
	}{versionID})
	return nil
}

// partialWire is a partial at one version, as GET
// /prompts/partials/{id} answers it.
type partialWire struct {
	ID                 string    `json:"id"`
	Slug               string    `json:"slug"`
	Name               string    `json:"name"`
	CollectionID       *string   `json:"collection_id"`
	WorkspaceID        string    `json:"workspace_id,omitempty"`
	String             string    `json:"string"`
	Version            int       `json:"version"`
	VersionDescription string    `json:"version_description"`
	VersionID          string    `json:"prompt_partial_version_id"`
	DefaultVersion     int       `json:"default_version"`
	LatestVersion      int       `json:"latest_version"`
	CreatedAt          time.Time `json:"created_at"`
	LastUpdatedAt      time.Time `json:"last_updated_at"`
	Status             string    `json:"status"`
	Object             string    `json:"object"`
}

func (p *plane) getPartial(w http.ResponseWriter, r *http.Request, ws, key string) error {
	rec, v, err := resolve(r.Context(), p.o.Store, KindPartial, ws, key, "")
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, partialWire{ID: rec.ID, Slug: rec.Slug, Name: rec.Name, CollectionID: nullable(rec.CollectionID),
		WorkspaceID: rec.WorkspaceID, String: v.Template, Version: v.Number, VersionDescription: v.Description, VersionID: v.ID,
		DefaultVersion: rec.DefaultVersion, LatestVersion: rec.LatestVersion, CreatedAt: rec.CreatedAt,
		LastUpdatedAt: rec.UpdatedAt, Status: rec.Status, Object: "partial"})
	return nil
}

// partialSummary is a partial in GET /prompts/partials.
type partialSummary struct {
	ID            string    `json:"id"`
	Slug          string    `json:"slug"`
	Name          string    `json:"name"`
	CollectionID  *string   `json:"collection_id"`
	CreatedAt     time.Time `json:"created_at"`
	LastUpdatedAt time.Time `json:"last_updated_at"`
	Status        string    `json:"status"`
	Object        string    `json:"object"`
}

// listPartials serves GET /prompts/partials: every partial of the
// workspace (of a collection_id, when given), as an array.
func (p *plane) listPartials(w http.ResponseWriter, r *http.Request, ws, _ string) error {
	q := r.URL.Query()
	keep, err := p.listFilter(r.Context(), ws, q.Get("collection_id"), q.Get("search"))
	if err != nil {
		return err
	}
	all, err := p.o.Store.Records(r.Context(), KindPartial, ws)
	if err != nil {
		return err
	}
	out := make([]partialSummary, 0, len(all))
	for i := range all {
		if rec := &all[i]; keep(rec) {
			out = append(out, partialSummary{ID: rec.ID, Slug: rec.Slug, Name: rec.Name, CollectionID: nullable(rec.CollectionID),
				CreatedAt: rec.CreatedAt, LastUpdatedAt: rec.UpdatedAt, Status: rec.Status, Object: "partial"})
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

// nullable returns s, nil when empty.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
