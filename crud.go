package gateway

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/modelgateway/gateway/internal/httpapi"
)

// slugKind is what the virtual keys and configs control planes share:
// records of type T (answered as W) kept by workspace and slug, a
// workspace key acting on its own workspace, an organisation key on the
// one it names with workspace_id (none without it). Each route file fills
// one in; the skeleton of the routes is here once.
type slugKind[T, W any] struct {
	what string // "virtual key", "config": in messages

	in     func(ctx context.Context, ws, slug string) (*T, error)
	all    func(ctx context.Context, ws string) ([]T, error)
	create func(ctx context.Context, t *T) error
	update func(ctx context.Context, old, t *T) error
	delete func(ctx context.Context, ws, slug string) error
	ws     func(t *T) string
	clone  func(t *T) *T
	wire   func(t *T) W

	// success adds "success":true to the answer of a list.
	success bool
}

// notFound is the answer for an unknown slug, and for one of another
// workspace.
func (k *slugKind[T, W]) notFound(slug string) *Error {
	return &Error{Status: http.StatusNotFound, Type: TypeNotFound, Code: CodeNotFound,
		Message: "no " + k.what + " " + quoteShort(slug)}
}

// serve serves the collection (slug "": list, and create) or the record
// slug (read, update, and delete) for the key id; the resource gives
// what is its own.
func (k *slugKind[T, W]) serve(w http.ResponseWriter, r *http.Request, id Identity, slug string,
	create func(w http.ResponseWriter, r *http.Request, k *slugKind[T, W], id Identity) error,
	read, update func(w http.ResponseWriter, r *http.Request, k *slugKind[T, W], id Identity, slug string) error) error {
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

// lookup returns a copy of the record slug of the workspace the request
// acts on, else 404.
func (k *slugKind[T, W]) lookup(r *http.Request, id Identity, slug string) (*T, error) {
	ws, err := queryWorkspace(id, r)
	if err != nil {
		return nil, err
	}
	orgActedIn(r, id, ws)
	t, err := k.in(r.Context(), ws, slug)
	if errors.Is(err, ErrNotFound) || err == nil && (t == nil || k.ws(t) != ws) {
		return nil, k.notFound(slug)
	}
	if err != nil {
		return nil, err
	}
	return k.clone(t), nil
}

// list serves GET of the collection: the records of the workspace the
// request acts on (every one for an organisation key naming none), in
// pages, answered as {"object":"list","data","total"}.
func (k *slugKind[T, W]) list(w http.ResponseWriter, r *http.Request, id Identity) error {
	q := r.URL.Query()
	size, page, err := pageParams(q)
	if err != nil {
		return err
	}
	named, err := workspaceParam(q)
	if err != nil {
		return err
	}
	ws, err := actingWorkspace(id, named)
	if err != nil {
		return err
	}
	all, err := k.all(r.Context(), ws)
	if err != nil {
		return err
	}
	var keep func(*T) bool
	if ws != "" {
		keep = func(t *T) bool { return k.ws(t) == ws }
	}
	data, total := listPage(all, keep, k.wire, size, page)
	writeJSON(w, http.StatusOK, struct {
		Object  string `json:"object"`
		Success bool   `json:"success,omitempty"`
		Data    []W    `json:"data"`
		Total   int    `json:"total"`
	}{"list", k.success, data, total})
	return nil
}

// createIn returns the workspace and slug of a record id creates with
// body fields workspace_id (named; nil when absent), slug (given) and
// name: an organisation key naming an empty workspace is a 400 (it leaves
// workspace_id out for a record of no workspace).
func (k *slugKind[T, W]) createIn(r *http.Request, id Identity, named, given *string, name string) (ws, slug string, err error) {
	n := ""
	if named != nil {
		if *named == "" && id.Type == KeyOrganisation {
			return "", "", policyInvalid("workspace_id", "workspace_id must not be empty; leave it out for a "+k.what+" of no workspace")
		}
		n = *named
	}
	if ws, err = actingWorkspace(id, n); err != nil {
		return "", "", err
	}
	if slug, err = newSlug(given, name); err != nil {
		return "", "", err
	}
	return ws, slug, nil
}

// orgActedIn notes, for the audit record of an organisation key's
// write, the workspace ws it acts in (a workspace key's is its own).
func orgActedIn(r *http.Request, id Identity, ws string) {
	if id.Type == KeyOrganisation {
		auditActedIn(r, ws)
	}
}

// store creates t, of slug: a slug its workspace already holds is a 409
// naming slug.
func (k *slugKind[T, W]) store(r *http.Request, slug string, t *T) error {
	if err := k.create(r.Context(), t); err != nil {
		if errors.Is(err, ErrConflict) {
			return &Error{Status: http.StatusConflict, Type: TypeInvalidRequest, Code: CodeConflict, Param: "slug",
				Message: "the workspace already has a " + k.what + " " + quoteShort(slug)}
		}
		return err
	}
	return nil
}

// fixed refuses an update body that sets slug or workspace_id, which
// cannot be changed.
func fixed(slug, workspaceID *string) error {
	switch {
	case slug != nil:
		return policyInvalid("slug", "slug cannot be changed")
	case workspaceID != nil:
		return policyInvalid("workspace_id", "workspace_id cannot be changed; name the workspace in the query")
	}
	return nil
}

// change serves PUT of record slug: it reads the record, makes the new
// one with change (which also returns, for the audit record, what it
// changed of where secrets go) and writes it only if the record is still
// as read, reading it again otherwise (at most maxAPIKeySwaps times), so
// that an update never undoes a racing one nor resurrects a deleted
// record. The written record is answered with answer.
func (k *slugKind[T, W]) change(w http.ResponseWriter, r *http.Request, id Identity, slug string,
	change func(old *T) (*T, []string, error), answer func(t *T)) error {
	var (
		t       *T
		changes []string
	)
	err := swapStored(r.Context(), maxAPIKeySwaps, k.what+" "+quoteShort(slug), k.notFound(slug), func() (error, error) {
		old, err := k.lookup(r, id, slug)
		if err != nil {
			return nil, err
		}
		if t, changes, err = change(old); err != nil {
			return nil, err
		}
		return k.update(r.Context(), old, t), nil
	})
	if err != nil {
		return err
	}
	if len(changes) > 0 {
		auditDetail(r, strings.Join(changes, "; "))
	}
	answer(t)
	return nil
}

// remove serves DELETE of record slug.
func (k *slugKind[T, W]) remove(w http.ResponseWriter, r *http.Request, id Identity, slug string) error {
	t, err := k.lookup(r, id, slug)
	if err != nil {
		return err
	}
	if err := k.delete(r.Context(), k.ws(t), slug); err != nil {
		if errors.Is(err, ErrNotFound) {
			return k.notFound(slug)
		}
		return err
	}
	writeJSON(w, http.StatusOK, struct{}{})
	return nil
}

// swapStored runs the "read, change, compare-and-swap" loop of a store
// whose update returns ErrConflict when the record changed since it was
// read: attempt reads and changes the record, returning an error that
// ends the loop as err, and updates it, returning the store's answer as
// updated. On an updated of ErrConflict it is called again (at most tries
// times, then a 409 saying that what kept changing); ErrNotFound is
// answered with notFound.
func swapStored(ctx context.Context, tries int, what string, notFound *Error, attempt func() (updated, err error)) error {
	err := httpapi.Swap(ctx, tries, func() (bool, error) {
		err, stop := attempt()
		if stop != nil {
			return false, stop
		}
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, ErrNotFound):
			return false, notFound
		case errors.Is(err, ErrConflict):
			return false, nil
		}
		return false, err
	})
	if errors.Is(err, httpapi.ErrKeptChanging) {
		return &Error{Status: http.StatusConflict, Type: TypeInvalidRequest, Code: CodeConflict,
			Message: what + " kept changing during the update; try again"}
	}
	return err
}
