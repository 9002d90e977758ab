package control

import (
	"context"
	"net/http"
)

// Note is what a handler adds to its request's audit record: the
// workspace it acted in and what it changed that its route does not say.
// observe.Auditor reads it once the handler has run.
type Note struct {
	Workspace string
	Detail    string
}

type noteKey struct{}

// WithNote returns ctx carrying a new, empty Note for the audited request
// it belongs to, and the Note.
func WithNote(ctx context.Context) (context.Context, *Note) {
	n := new(Note)
	return context.WithValue(ctx, noteKey{}, n), n
}

// ActedIn records that the audited write r acted in workspace ws. It does
// nothing for a request with no Note, or for an empty ws.
func ActedIn(r *http.Request, ws string) {
	if n, ok := r.Context().Value(noteKey{}).(*Note); ok && ws != "" {
		n.Workspace = ws
	}
}

// Detail records what the audited write r changed that its route does
// not say. It does nothing for a request with no Note.
func Detail(r *http.Request, detail string) {
	if n, ok := r.Context().Value(noteKey{}).(*Note); ok {
		n.Detail = detail
	}
}
