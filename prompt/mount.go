package prompt

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
	"github.com/modelgateway/gateway/observe"
)

// Options configure the prompt routes Mount adds to a gateway.
type Options struct {
	// Store keeps the prompts, partials, labels and collections. Nil
	// leaves every route answering 404, saying that prompts are not
	// managed on this gateway.
	Store Store

	// Audit records every write of these routes (POST, PUT or DELETE,
	// but not render and completions, which write nothing), as acting on
	// prompts, prompt_partials, labels or collections. Nil records
	// nothing.
	Audit *observe.Auditor

	// ErrorLog receives the store's failures. Nil means slog.Default().
	ErrorLog *slog.Logger

	// Now is the clock of the records written. Nil means time.Now.
	Now func() time.Time
}

// plane is the prompt routes of one Mount.
type plane struct {
	g  *gateway.Gateway
	o  Options
	rn *renderer
}

// now is the time of a write, in microseconds, as every store keeps it.
func (p *plane) now() time.Time {
	t := time.Now()
	if p.o.Now != nil {
		t = p.o.Now()
	}
	return t.UTC().Truncate(time.Microsecond)
}

// Mount registers the prompt routes on g (through g.Handle, so under its
// prefix, behind its trace, key and header stages):
//
//	/prompts, /prompts/{id}, /prompts/{id}/versions, /prompts/{id}/versions/{versionId}
//	/prompts/{id}/makeDefault, /prompts/{id}/render, /prompts/{id}/completions
//	/prompts/partials, /prompts/partials/{id}, /prompts/partials/{id}/versions,
//	/prompts/partials/{id}/makeDefault
//	/labels, /labels/{id}, /collections, /collections/{id}
//
// Every other path below them answers 404, so that the namespace is
// never passed through to a provider. Reads (and render) need the
// prompts.read scope, writes prompts.write; completions needs
// prompts.read and, as every data-plane request, completions.write. A
// workspace key acts on its own workspace; an organisation key on the
// one it names with workspace_id (in the query, or the body of a
// create), and on the records of no workspace without it. Another
// workspace's records answer 404, as if they did not exist. Mount panics
// if a route is already registered on g.
func Mount(g *gateway.Gateway, o Options) {
	p := &plane{g: g, o: o}
	if o.Store != nil {
		p.rn = newRenderer(o.Store)
	}
	route := func(resource string, h func(w http.ResponseWriter, r *http.Request, ws string) error, patterns ...string) {
		plain := p.serve(h)
		audited := o.Audit.Wrap(resource, plain)
		serve := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if isRun(r) {
				plain.ServeHTTP(w, r) // writes nothing; and a held-back answer could not stream
				return
			}
			audited.ServeHTTP(w, r)
		})
		for _, pat := range patterns {
			g.Handle(pat, serve)
		}
	}
	route("prompts", p.servePrompts, "/prompts", "/prompts/{id}", "/prompts/{id}/{sub}", "/prompts/{id}/{sub}/{versionId}")
	route("prompt_partials", p.servePartials, "/prompts/partials", "/prompts/partials/{id}", "/prompts/partials/{id}/{sub}")
	route("labels", p.serveLabels, "/labels", "/labels/{id}")
	route("collections", p.serveCollections, "/collections", "/collections/{id}")
	for _, pat := range []string{"/prompts/", "/labels/", "/collections/"} {
		g.Handle(pat, http.HandlerFunc(control.NoRoute))
	}
}

// serve checks the caller's scope (read for GET, write otherwise) and
// the workspace the request acts on, then runs h, answering its error.
func (p *plane) serve(h func(w http.ResponseWriter, r *http.Request, ws string) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := gateway.IdentityFrom(r.Context())
		if isRun(r) { // a POST that reads
			if !id.Can(gateway.ScopePromptsRead) {
				gateway.WriteError(w, r, control.Forbidden("", "this gateway API key lacks the prompts.read scope"))
				return
			}
		} else if _, ok := control.Scoped(w, r, gateway.ScopePromptsRead, gateway.ScopePromptsWrite); !ok {
			return
		}
		if p.o.Store == nil {
			gateway.WriteError(w, r, notFound("", "prompts are not managed on this gateway"))
			return
		}
		ws, err := control.QueryWorkspace(id, r)
		if err == nil {
			err = h(w, r, ws)
		}
		if err != nil {
			control.Fail(w, r, p.o.ErrorLog, "prompt store", err)
		}
	})
}

// isRun reports whether r renders or runs a prompt: a POST that reads
// the prompt and writes nothing.
func isRun(r *http.Request) bool {
	sub := r.PathValue("sub")
	return r.Method == http.MethodPost && r.PathValue("versionId") == "" && (sub == "render" || sub == "completions")
}

// op is a handler of one method of a route, for the workspace the
// request acts on and the record its path names (key, "" for none).
type op func(w http.ResponseWriter, r *http.Request, ws, key string) error

// routes are the handlers of a route by method.
type routes map[string]op

// serve serves r with the handler of its method, or answers the 405 of
// a method rs does not hold; nil rs is a path no route serves.
func (rs routes) serve(w http.ResponseWriter, r *http.Request, ws, key string) error {
	if rs == nil {
		control.NoRoute(w, r)
		return nil
	}
	m := make(httpapi.Methods, len(rs))
	for method, h := range rs {
		m[method] = func(w http.ResponseWriter, r *http.Request) error { return h(w, r, ws, key) }
	}
	return m.Serve(w, r)
}

// crud returns the routes of a collection of records (key empty: list
// and create) or of one record (read, update and delete).
func crud(key string, list, create, read, update, remove op) routes {
	if key == "" {
		return routes{http.MethodGet: list, http.MethodPost: create}
	}
	return routes{http.MethodGet: read, http.MethodPut: update, http.MethodDelete: remove}
}

// versioned returns the routes prompts and partials share: their
// collection, one of them, its versions and makeDefault; nil for another
// path.
func (p *plane) versioned(kind Kind, key, sub, version string, list, create, read, update op) routes {
	switch {
	case key == "" || sub == "":
		return crud(key, list, create, read, update, func(w http.ResponseWriter, r *http.Request, ws, key string) error {
			return p.remove(w, r, kind, ws, key)
		})
	case sub == "versions" && version == "":
		return routes{http.MethodGet: func(w http.ResponseWriter, r *http.Request, ws, key string) error {
			return p.listVersions(w, r, kind, ws, key)
		}}
	case sub == "makeDefault" && version == "":
		return routes{http.MethodPut: func(w http.ResponseWriter, r *http.Request, ws, key string) error {
			return p.makeDefault(w, r, kind, ws, key)
		}}
	}
	return nil
}

// createIn returns the workspace a create whose body names workspace
// named (nil when absent) acts on, having checked its name.
func createIn(r *http.Request, ws string, named, name *string) (string, error) {
	ws, err := bodyWorkspace(r, ws, named)
	if err != nil {
		return "", err
	}
	return ws, control.CheckName(name, true)
}

// bodyWorkspace returns the workspace a create acts on: the query's ws,
// unless the body names one (named, nil when absent).
func bodyWorkspace(r *http.Request, ws string, named *string) (string, error) {
	if named == nil {
		return ws, nil
	}
	if *named == "" {
		return "", control.Invalid("workspace_id", "workspace_id must not be empty")
	}
	if q := r.URL.Query().Get("workspace_id"); q != "" && q != *named {
		return "", control.Invalid("workspace_id", "the query and the body name different workspaces")
	}
	id, _ := gateway.IdentityFrom(r.Context())
	ws, err := control.ActingWorkspace(id, *named)
	if err == nil {
		control.OrgActedIn(r, id, ws)
	}
	return ws, err
}

// find returns the record of kind and workspace ws whose ID or slug is
// key, else a 404.
func (p *plane) find(ctx context.Context, kind Kind, ws, key string) (*Record, error) {
	rec, err := p.o.Store.Record(ctx, kind, ws, key)
	if errors.Is(err, gateway.ErrNotFound) {
		return nil, notFound("", "no "+string(kind)+" "+control.Quote(key))
	}
	return rec, err
}

// change runs the "read, change, compare-and-swap" loop of an update of
// the record key: edit makes the new record, and the new version if any,
// from a copy of the stored one. It returns what was written.
func (p *plane) change(ctx context.Context, kind Kind, ws, key string,
	edit func(old *Record) (*Record, *Version, error)) (*Record, *Version, error) {
	var (
		rec *Record
		v   *Version
	)
	err := httpapi.Swap(ctx, control.Swaps, func() (bool, error) {
		old, err := p.find(ctx, kind, ws, key)
		if err != nil {
			return false, err
		}
		if rec, v, err = edit(old.Clone()); err != nil {
			return false, err
		}
		rec.UpdatedAt = p.now()
		if !rec.UpdatedAt.After(old.UpdatedAt) {
			rec.UpdatedAt = old.UpdatedAt.Add(time.Microsecond)
		}
		switch err := p.o.Store.UpdateRecord(ctx, old, rec, v); {
		case err == nil:
			return true, nil
		case errors.Is(err, gateway.ErrNotFound):
			return false, notFound("", "no "+string(kind)+" "+control.Quote(key))
		case errors.Is(err, gateway.ErrConflict) && rec.Slug != old.Slug:
			return false, control.Conflict("name", "the workspace already has a "+string(kind)+" "+control.Quote(rec.Slug))
		case errors.Is(err, gateway.ErrConflict):
			return false, nil
		default:
			return false, err
		}
	})
	if errors.Is(err, httpapi.ErrKeptChanging) {
		return nil, nil, control.Conflict("", "the "+string(kind)+" kept changing during the update; try again")
	}
	return rec, v, err
}

// create stores rec (with v, its first version, for a versioned kind):
// a slug taken is a 409 naming slugParam.
func (p *plane) create(ctx context.Context, rec *Record, v *Version, slugParam string) error {
	err := p.o.Store.CreateRecord(ctx, rec, v)
	if errors.Is(err, gateway.ErrConflict) {
		return control.Conflict(slugParam, "the workspace already has a "+string(rec.Kind)+" "+control.Quote(rec.Slug))
	}
	return err
}

// empty is the answer of an update or delete: {}.
var empty = struct{}{}
