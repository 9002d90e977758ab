package control

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// SlugKind is what the routes of records kept by workspace and slug
// share (virtual keys, configs): records of type T (answered as W), a
// workspace key acting on its own workspace, an organisation key on the
// one it names with workspace_id (none without it). Each product fills
// one in; the skeleton of the routes is here once.
type SlugKind[T, W any] struct {
	What string // "virtual key", "config": in messages

	In     func(ctx context.Context, ws, slug string) (*T, error)
	All    func(ctx context.Context, ws string) ([]T, error)
	Create func(ctx context.Context, t *T) error
	Update func(ctx context.Context, old, t *T) error
	Delete func(ctx context.Context, ws, slug string) error
	WS     func(t *T) string
	Clone  func(t *T) *T
	Wire   func(t *T) W

	// Success adds "success":true to the answer of a list.
	Success bool
}

// NotFound is the answer for an unknown slug, and for one of another
// workspace.
func (k *SlugKind[T, W]) NotFound(slug string) *gateway.Error {
	return NotFound("no " + k.What + " " + Quote(slug))
}

// Serve serves the collection (slug "": list, and create) or the record
// slug (read, update, and delete) for the key id; the resource gives
// what is its own.
func (k *SlugKind[T, W]) Serve(w http.ResponseWriter, r *http.Request, id gateway.Identity, slug string,
	create func(w http.ResponseWriter, r *http.Request, k *SlugKind[T, W], id gateway.Identity) error,
	read, update func(w http.ResponseWriter, r *http.Request, k *SlugKind[T, W], id gateway.Identity, slug string) error) error {
	m := httpapi.Methods{
		http.MethodGet:  func(w http.ResponseWriter, r *http.Request) error { return k.list(w, r, id) },
		http.MethodPost: func(w http.ResponseWriter, r *http.Request) error { return create(w, r, k, id) },
	}
	if slug != "" {
		m = httpapi.Methods{
			http.MethodGet:    func(w http.ResponseWriter, r *http.Request) error { return read(w, r, k, id, slug) },
			http.MethodPut:    func(w http.ResponseWriter, r *http.Request) error { return update(w, r, k, id, slug) },
			http.MethodDelete: func(w http.ResponseWriter, r *http.Request) error { return k.remove(w, r, id, slug) },
		}
	}
	return m.Serve(w, r)
}

// Lookup returns a copy of the record slug of the workspace the request
// acts on, else 404.
func (k *SlugKind[T, W]) Lookup(r *http.Request, id gateway.Identity, slug string) (*T, error) {
	ws, err := QueryWorkspace(id, r)
	if err != nil {
		return nil, err
	}
	OrgActedIn(r, id, ws)
	t, err := k.In(r.Context(), ws, slug)
	if errors.Is(err, gateway.ErrNotFound) || err == nil && (t == nil || k.WS(t) != ws) {
		return nil, k.NotFound(slug)
	}
	if err != nil {
		return nil, err
	}
	return k.Clone(t), nil
}

// list serves GET of the collection: the records of the workspace the
// request acts on (every one for an organisation key naming none), in
// pages, answered as {"object":"list","data","total"}.
func (k *SlugKind[T, W]) list(w http.ResponseWriter, r *http.Request, id gateway.Identity) error {
	q := r.URL.Query()
	page, err := Page(q)
	if err != nil {
		return err
	}
	named, err := WorkspaceParam(q)
	if err != nil {
		return err
	}
	ws, err := ActingWorkspace(id, named)
	if err != nil {
		return err
	}
	all, err := k.All(r.Context(), ws)
	if err != nil {
		return err
	}
	var keep func(*T) bool
	if ws != "" {
		keep = func(t *T) bool { return k.WS(t) == ws }
	}
	data, total := httpapi.Filter(all, keep, k.Wire, page)
	httpapi.WriteJSON(w, http.StatusOK, struct {
		Object  string `json:"object"`
		Success bool   `json:"success,omitempty"`
		Data    []W    `json:"data"`
		Total   int    `json:"total"`
	}{"list", k.Success, data, total})
	return nil
}

// CreateIn returns the workspace and slug of a record id creates with
// body fields workspace_id (named; nil when absent), slug (given) and
// name: an organisation key naming an empty workspace is a 400 (it leaves
// workspace_id out for a record of no workspace).
func (k *SlugKind[T, W]) CreateIn(id gateway.Identity, named, given *string, name string) (ws, slug string, err error) {
	n := ""
	if named != nil {
		if *named == "" && id.Type == gateway.KeyOrganisation {
			return "", "", Invalid("workspace_id", "workspace_id must not be empty; leave it out for a "+k.What+" of no workspace")
		}
		n = *named
	}
	if ws, err = ActingWorkspace(id, n); err != nil {
		return "", "", err
	}
	if slug, err = NewSlug(given, name); err != nil {
		return "", "", err
	}
	return ws, slug, nil
}

// Store creates t, of slug: a slug its workspace already holds is a 409
// naming slug.
func (k *SlugKind[T, W]) Store(r *http.Request, slug string, t *T) error {
	if err := k.Create(r.Context(), t); err != nil {
		if errors.Is(err, gateway.ErrConflict) {
			return Conflict("slug", "the workspace already has a "+k.What+" "+Quote(slug))
		}
		return err
	}
	return nil
}

// Fixed refuses an update body that sets slug or workspace_id, which
// cannot be changed.
func Fixed(slug, workspaceID *string) error {
	switch {
	case slug != nil:
		return Invalid("slug", "slug cannot be changed")
	case workspaceID != nil:
		return Invalid("workspace_id", "workspace_id cannot be changed; name the workspace in the query")
	}
	return nil
}

// Change serves PUT of record slug: it reads the record, makes the new
// one with change (which also returns, for the audit record, what it
// changed of where secrets go) and writes it only if the record is still
// as read, reading it again otherwise (at most Swaps times), so that an
// update never undoes a racing one nor resurrects a deleted record. The
// written record is answered with answer.
func (k *SlugKind[T, W]) Change(r *http.Request, id gateway.Identity, slug string,
	change func(old *T) (*T, []string, error), answer func(t *T)) error {
	var (
		t       *T
		changes []string
	)
	err := SwapStored(r, k.What+" "+Quote(slug), k.NotFound(slug), func() (error, error) {
		old, err := k.Lookup(r, id, slug)
		if err != nil {
			return nil, err
		}
		if t, changes, err = change(old); err != nil {
			return nil, err
		}
		return k.Update(r.Context(), old, t), nil
	})
	if err != nil {
		return err
	}
	if len(changes) > 0 {
		Detail(r, strings.Join(changes, "; "))
	}
	answer(t)
	return nil
}

// remove serves DELETE of record slug.
func (k *SlugKind[T, W]) remove(w http.ResponseWriter, r *http.Request, id gateway.Identity, slug string) error {
	t, err := k.Lookup(r, id, slug)
	if err != nil {
		return err
	}
	if err := k.Delete(r.Context(), k.WS(t), slug); err != nil {
		if errors.Is(err, gateway.ErrNotFound) {
			return k.NotFound(slug)
		}
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, struct{}{})
	return nil
}
