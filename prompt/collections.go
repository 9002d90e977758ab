package prompt

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// serveCollections serves the collections (the reference's shapes):
//
//	POST   /collections       create → {"id","slug"}
//	GET    /collections       list   → {"total","data"}, each with its details
//	GET    /collections/{id}  read   → the collection with its child collections
//	PUT    /collections/{id}  update → {}
//	DELETE /collections/{id}  delete → {}
//
// {id} is a collection's ID or slug. A collection that holds prompts,
// partials or child collections cannot be deleted (409).
func (p *plane) serveCollections(w http.ResponseWriter, r *http.Request, ws string) error {
	key := r.PathValue("id")
	return crud(key, p.listCollections, p.createCollection, p.getCollection, p.renameCollection, p.removeCollection).serve(w, r, ws, key)
}

func (p *plane) createCollection(w http.ResponseWriter, r *http.Request, ws, _ string) error {
	var b struct {
		WorkspaceID *string `json:"workspace_id"`
		Name        *string `json:"name"`
		Parent      *string `json:"parent_collection_id"`
	}
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	ws, err := createIn(r, ws, b.WorkspaceID, b.Name)
	if err != nil {
		return err
	}
	slug := control.SlugOf(*b.Name)
	if slug == "" {
		return control.Invalid("name", "name must hold a letter or digit to derive a slug from")
	}
	now := p.now()
	c := &Record{Kind: KindCollection, ID: control.NewUUID(), WorkspaceID: ws, Slug: slug, Name: *b.Name, Status: statusActive,
		CreatedAt: now, UpdatedAt: now}
	if b.Parent != nil {
		parent, err := p.o.Store.Record(r.Context(), KindCollection, ws, *b.Parent)
		if err != nil {
			return notFound("parent_collection_id", "no collection "+control.Quote(*b.Parent))
		}
		c.CollectionID = parent.ID
	}
	if err := p.create(r.Context(), c, nil, "name"); err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, struct {
		ID   string `json:"id"`
		Slug string `json:"slug"`
	}{c.ID, c.Slug})
	return nil
}

// collectionWire is a collection as the routes answer it: in a list
// with its details, read with its child collections.
type collectionWire struct {
	ID            string             `json:"id"`
	Name          string             `json:"name"`
	WorkspaceID   *string            `json:"workspace_id"`
	Slug          string             `json:"slug"`
	Parent        *string            `json:"parent_collection_id"`
	IsDefault     bool               `json:"is_default"`
	Status        string             `json:"status"`
	CreatedAt     time.Time          `json:"created_at"`
	LastUpdatedAt time.Time          `json:"last_updated_at"`
	Details       *collectionDetails `json:"collection_details,omitempty"`
	Children      []childCollection  `json:"child_collections,omitempty"`
}

type collectionDetails struct {
	ChildCount       int        `json:"child_collections_count"`
	PromptCount      int        `json:"prompts_count"`
	ChildrenUpdated  *time.Time `json:"child_collections_last_updated_at"`
	PromptsUpdatedAt *time.Time `json:"prompts_last_updated_at"`
}

type childCollection struct {
	ID            string            `json:"id"`
	Name          string            `json:"name"`
	LastUpdatedAt time.Time         `json:"last_updated_at"`
	Details       collectionDetails `json:"collection_details"`
}

func collectionWireOf(c *Record) collectionWire {
	return collectionWire{ID: c.ID, Name: c.Name, WorkspaceID: nullable(c.WorkspaceID), Slug: c.Slug,
		Parent: nullable(c.CollectionID), Status: c.Status, CreatedAt: c.CreatedAt, LastUpdatedAt: c.UpdatedAt}
}

// contents is what the collections of a workspace hold.
type contents struct {
	collections, prompts, partials []Record
}

func (p *plane) contents(ctx context.Context, ws string) (*contents, error) {
	var c contents
	for _, k := range []struct {
		kind Kind
		dst  *[]Record
	}{{KindCollection, &c.collections}, {KindPrompt, &c.prompts}, {KindPartial, &c.partials}} {
		recs, err := p.o.Store.Records(ctx, k.kind, ws)
		if err != nil {
			return nil, err
		}
		*k.dst = recs
	}
	return &c, nil
}

// details returns the details of collection id.
func (c *contents) details(id string) collectionDetails {
	var d collectionDetails
	count := func(recs []Record, n *int, last **time.Time) {
		for i := range recs {
			if recs[i].CollectionID == id {
				*n++
				if t := recs[i].UpdatedAt; *last == nil || t.After(**last) {
					*last = &t
				}
			}
		}
	}
	count(c.collections, &d.ChildCount, &d.ChildrenUpdated)
	count(c.prompts, &d.PromptCount, &d.PromptsUpdatedAt)
	return d
}

// listCollections serves GET /collections: the workspace's collections,
// those whose name holds search, in pages.
func (p *plane) listCollections(w http.ResponseWriter, r *http.Request, ws, _ string) error {
	q := r.URL.Query()
	page, err := httpapi.ParsePage(q)
	if err != nil {
		return err
	}
	c, err := p.contents(r.Context(), ws)
	if err != nil {
		return err
	}
	search := strings.ToLower(q.Get("search"))
	data, total := httpapi.Filter(c.collections, func(rec *Record) bool {
		return search == "" || strings.Contains(strings.ToLower(rec.Name), search)
	}, func(rec *Record) collectionWire {
		cw := collectionWireOf(rec)
		d := c.details(rec.ID)
		cw.Details = &d
		return cw
	}, page)
	httpapi.WriteJSON(w, http.StatusOK, struct {
		Total int              `json:"total"`
		Data  []collectionWire `json:"data"`
	}{total, data})
	return nil
}

// withContents returns the collection key of workspace ws, with what
// the workspace's collections hold.
func (p *plane) withContents(ctx context.Context, ws, key string) (*Record, *contents, error) {
	rec, err := p.find(ctx, KindCollection, ws, key)
	if err != nil {
		return nil, nil, err
	}
	c, err := p.contents(ctx, ws)
	return rec, c, err
}

func (p *plane) getCollection(w http.ResponseWriter, r *http.Request, ws, key string) error {
	rec, c, err := p.withContents(r.Context(), ws, key)
	if err != nil {
		return err
	}
	cw := collectionWireOf(rec)
	cw.Children = []childCollection{}
	for i := range c.collections {
		if ch := &c.collections[i]; ch.CollectionID == rec.ID {
			cw.Children = append(cw.Children, childCollection{ID: ch.ID, Name: ch.Name, LastUpdatedAt: ch.UpdatedAt,
				Details: c.details(ch.ID)})
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, cw)
	return nil
}

func (p *plane) renameCollection(w http.ResponseWriter, r *http.Request, ws, key string) error {
	var b struct {
		Name *string `json:"name"`
	}
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	if err := control.CheckName(b.Name, true); err != nil {
		return err
	}
	_, _, err := p.change(r.Context(), KindCollection, ws, key, func(c *Record) (*Record, *Version, error) {
		c.Name = *b.Name
		return c, nil, nil
	})
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, empty)
	return nil
}

func (p *plane) removeCollection(w http.ResponseWriter, r *http.Request, ws, key string) error {
	rec, c, err := p.withContents(r.Context(), ws, key)
	if err != nil {
		return err
	}
	for _, recs := range [][]Record{c.collections, c.prompts, c.partials} {
		for i := range recs {
			if recs[i].CollectionID == rec.ID {
				return control.Conflict("", "collection "+control.Quote(key)+" still holds "+string(recs[i].Kind)+" "+control.Quote(recs[i].Slug))
			}
		}
	}
	return p.remove(w, r, KindCollection, ws, rec.ID)
}
