package prompt

import (
	"net/http"
	"strings"
	"time"

	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// serveLabels serves the labels (the reference's shapes):
//
//	POST   /labels       create → {"id"}
//	GET    /labels       list   → {"total","data"}, the universal labels first
//	GET    /labels/{id}  read   → the label
//	PUT    /labels/{id}  update → {}
//	DELETE /labels/{id}  delete → {}
//
// {id} is a label's ID or name. The universal labels (production,
// staging, development) exist in every workspace and cannot be changed.
// A label points at one version of each prompt (PUT
// /prompts/{id}/versions/{versionId}), which {id}@{label} addresses.
func (p *plane) serveLabels(w http.ResponseWriter, r *http.Request, ws string) error {
	key := r.PathValue("id")
	return crud(key, p.listLabels, p.createLabel, p.getLabel, p.updateLabel, p.removeLabel).serve(w, r, ws, key)
}

// maxLabelLen bounds a label's name.
const maxLabelLen = 64

// checkLabelName checks a label's name: 1 to maxLabelLen characters of
// a-z, A-Z, 0-9, '_' and '-', neither all digits (a version number) nor
// latest, default or a universal label's name, which addresses use.
func checkLabelName(name string) error {
	if name == "" || len(name) > maxLabelLen {
		return control.Invalid("name", "name must be 1 to 64 characters")
	}
	digits := true
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return control.Invalid("name", "name must hold only a-z, A-Z, 0-9, '_' and '-'")
		}
		digits = digits && c >= '0' && c <= '9'
	}
	if _, universal := universalLabel(name); digits || universal || name == atLatest || name == atDefault {
		return control.Invalid("name", "name "+control.Quote(name)+" is reserved: addresses use version numbers, latest, default and the universal labels")
	}
	return nil
}

// labelBody is the body of POST /labels and PUT /labels/{id}.
type labelBody struct {
	OrganisationID *string `json:"organisation_id"`
	WorkspaceID    *string `json:"workspace_id"`
	Name           *string `json:"name"`
	Description    *string `json:"description"`
	ColorCode      *string `json:"color_code"`
}

// apply sets b's description and color code on l.
func (b *labelBody) apply(l *Record) error {
	if b.Description != nil {
		if err := checkText("description", *b.Description, maxDescLen); err != nil {
			return err
		}
		l.Description = *b.Description
	}
	if b.ColorCode != nil {
		if err := checkText("color_code", *b.ColorCode, 32); err != nil {
			return err
		}
		l.ColorCode = *b.ColorCode
	}
	return nil
}

func (p *plane) createLabel(w http.ResponseWriter, r *http.Request, ws, _ string) error {
	var b labelBody
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	ws, err := bodyWorkspace(r, ws, b.WorkspaceID)
	if err != nil {
		return err
	}
	if b.Name == nil {
		return control.Invalid("name", "name is required")
	}
	if err := checkLabelName(*b.Name); err != nil {
		return err
	}
	now := p.now()
	l := &Record{Kind: KindLabel, ID: control.NewUUID(), WorkspaceID: ws, Slug: *b.Name, Name: *b.Name, Status: statusActive,
		CreatedAt: now, UpdatedAt: now}
	if err := b.apply(l); err != nil {
		return err
	}
	if err := p.create(r.Context(), l, nil, "name"); err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, struct {
		ID string `json:"id"`
	}{l.ID})
	return nil
}

// labelWire is a label as the routes answer it.
type labelWire struct {
	ID            string     `json:"id"`
	Name          string     `json:"name"`
	Description   string     `json:"description"`
	ColorCode     string     `json:"color_code"`
	WorkspaceID   *string    `json:"workspace_id"`
	IsUniversal   bool       `json:"is_universal"`
	CreatedAt     *time.Time `json:"created_at"`
	LastUpdatedAt *time.Time `json:"last_updated_at"`
	Status        string     `json:"status"`
	Object        string     `json:"object"`
}

func labelWireOf(l *Record) labelWire {
	w := labelWire{ID: l.ID, Name: l.Name, Description: l.Description, ColorCode: l.ColorCode,
		WorkspaceID: nullable(l.WorkspaceID), Status: l.Status, Object: "label"}
	if _, w.IsUniversal = universalLabel(l.ID); !w.IsUniversal {
		w.CreatedAt, w.LastUpdatedAt = &l.CreatedAt, &l.UpdatedAt
	}
	return w
}

func (p *plane) getLabel(w http.ResponseWriter, r *http.Request, ws, key string) error {
	if l, ok := universalLabel(key); ok {
		httpapi.WriteJSON(w, http.StatusOK, labelWireOf(l))
		return nil
	}
	l, err := p.find(r.Context(), KindLabel, ws, key)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, labelWireOf(l))
	return nil
}

// listLabels serves GET /labels: the universal labels, then the
// workspace's, those whose name holds search, in pages.
func (p *plane) listLabels(w http.ResponseWriter, r *http.Request, ws, _ string) error {
	q := r.URL.Query()
	page, err := httpapi.ParsePage(q)
	if err != nil {
		return err
	}
	own, err := p.o.Store.Records(r.Context(), KindLabel, ws)
	if err != nil {
		return err
	}
	all := append(append(make([]Record, 0, len(universalLabels)+len(own)), universalLabels...), own...)
	search := strings.ToLower(q.Get("search"))
	data, total := httpapi.Filter(all, func(l *Record) bool {
		return search == "" || strings.Contains(strings.ToLower(l.Name), search)
	}, labelWireOf, page)
	httpapi.WriteJSON(w, http.StatusOK, struct {
		Total int         `json:"total"`
		Data  []labelWire `json:"data"`
	}{total, data})
	return nil
}

func (p *plane) updateLabel(w http.ResponseWriter, r *http.Request, ws, key string) error {
	if _, ok := universalLabel(key); ok {
		return control.Forbidden("", "the universal label "+control.Quote(key)+" cannot be changed")
	}
	var b labelBody
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	switch {
	case b.WorkspaceID != nil:
		return control.Invalid("workspace_id", "workspace_id cannot be changed")
	case b.OrganisationID != nil:
		return control.Invalid("organisation_id", "organisation_id cannot be changed")
	}
	if b.Name != nil {
		if err := checkLabelName(*b.Name); err != nil {
			return err
		}
	}
	_, _, err := p.change(r.Context(), KindLabel, ws, key, func(l *Record) (*Record, *Version, error) {
		if b.Name != nil {
			l.Name, l.Slug = *b.Name, *b.Name
		}
		return l, nil, b.apply(l)
	})
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, empty)
	return nil
}

func (p *plane) removeLabel(w http.ResponseWriter, r *http.Request, ws, key string) error {
	if _, ok := universalLabel(key); ok {
		return control.Forbidden("", "the universal label "+control.Quote(key)+" cannot be deleted")
	}
	return p.remove(w, r, KindLabel, ws, key)
}
