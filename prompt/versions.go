package prompt

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// versionSummary is a version of a prompt in GET /prompts/{id}/versions.
type versionSummary struct {
	ID          string          `json:"id"`
	PromptID    string          `json:"prompt_id"`
	Template    json.RawMessage `json:"prompt_template"`
	Version     int             `json:"prompt_version"`
	Description string          `json:"prompt_description"`
	LabelID     *string         `json:"label_id"`
	CreatedAt   time.Time       `json:"created_at"`
	Status      string          `json:"status"`
	Object      string          `json:"object"`
}

// partialVersionWire is a version of a partial in GET
// /prompts/partials/{id}/versions.
type partialVersionWire struct {
	PartialID   string    `json:"prompt_partial_id"`
	VersionID   string    `json:"prompt_partial_version_id"`
	Slug        string    `json:"slug"`
	Version     string    `json:"version"`
	String      string    `json:"string"`
	Description string    `json:"description"`
	LabelID     *string   `json:"label_id"`
	CreatedAt   time.Time `json:"created_at"`
	Status      string    `json:"prompt_version_status"`
	Object      string    `json:"object"`
}

// listVersions serves GET of the versions of record key of kind, newest
// first.
func (p *plane) listVersions(w http.ResponseWriter, r *http.Request, kind Kind, ws, key string) error {
	rec, err := p.find(r.Context(), kind, ws, key)
	if err != nil {
		return err
	}
	vs, err := p.o.Store.Versions(r.Context(), rec.ID)
	if err != nil {
		return err
	}
	if kind == KindPartial {
		out := make([]partialVersionWire, len(vs))
		for i, v := range vs {
			out[i] = partialVersionWire{PartialID: rec.ID, VersionID: v.ID, Slug: rec.Slug, Version: strconv.Itoa(v.Number),
				String: v.Template, Description: v.Description, LabelID: labelOf(rec, v.Number), CreatedAt: v.CreatedAt,
				Status: statusActive, Object: "partial"}
		}
		httpapi.WriteJSON(w, http.StatusOK, out)
		return nil
	}
	out := make([]versionSummary, len(vs))
	for i := range vs {
		v := &vs[i]
		tmpl, _ := json.Marshal(promptWireOf(rec, v))
		out[i] = versionSummary{ID: v.ID, PromptID: rec.ID, Template: tmpl, Version: v.Number, Description: v.Description,
			LabelID: labelOf(rec, v.Number), CreatedAt: v.CreatedAt, Status: statusActive, Object: "prompt"}
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

// makeDefault serves PUT …/makeDefault {"version": n}: version n of
// record key becomes the one used when none is named.
func (p *plane) makeDefault(w http.ResponseWriter, r *http.Request, kind Kind, ws, key string) error {
	var b struct {
		Version *float64 `json:"version"`
	}
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	if b.Version == nil {
		return control.Invalid("version", "version is required")
	}
	n := int(*b.Version)
	if float64(n) != *b.Version || n < 1 {
		return control.Invalid("version", "version must be a version number, from 1")
	}
	_, _, err := p.change(r.Context(), kind, ws, key, func(rec *Record) (*Record, *Version, error) {
		if n > rec.LatestVersion {
			return nil, nil, notFound("version", "no version "+strconv.Itoa(n)+" of "+string(kind)+" "+control.Quote(key))
		}
		rec.DefaultVersion = n
		return rec, nil, nil
	})
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, empty)
	return nil
}

// labelVersion serves PUT /prompts/{id}/versions/{versionId}
// {"label_id"}: the label (its ID or name) points at that version of the
// prompt from then on, and at no other; a null label_id takes every label
// off the version.
func (p *plane) labelVersion(w http.ResponseWriter, r *http.Request, ws, key string) error {
	version := r.PathValue("versionId")
	var b struct {
		LabelID *string `json:"label_id"`
	}
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	_, v, err := p.versionOf(r.Context(), KindPrompt, ws, key, version)
	if err != nil {
		return err
	}
	var labelID string
	if b.LabelID != nil {
		l, err := label(r.Context(), p.o.Store, ws, *b.LabelID)
		if errors.Is(err, gateway.ErrNotFound) {
			return notFound("label_id", "no label "+control.Quote(*b.LabelID))
		}
		if err != nil {
			return err
		}
		labelID = l.ID
	}
	_, _, err = p.change(r.Context(), KindPrompt, ws, key, func(rec *Record) (*Record, *Version, error) {
		if rec.Labels == nil {
			rec.Labels = map[string]int{}
		}
		if labelID != "" {
			rec.Labels[labelID] = v.Number
			return rec, nil, nil
		}
		for id, n := range rec.Labels {
			if n == v.Number {
				delete(rec.Labels, id)
			}
		}
		return rec, nil, nil
	})
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, empty)
	return nil
}
