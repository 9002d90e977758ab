package control

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// Scoped returns the caller of r when it holds the scope r needs in a
// control-plane area: read for a GET, write for anything else. Otherwise
// it answers the 403 naming the missing scope and reports false.
func Scoped(w http.ResponseWriter, r *http.Request, read, write gateway.Scope) (gateway.Identity, bool) {
	id, _ := gateway.IdentityFrom(r.Context())
	need := write
	if r.Method == http.MethodGet {
		need = read
	}
	if !id.Can(need) {
		gateway.WriteError(w, r, MissingScope(need))
		return id, false
	}
	return id, true
}

// MissingScope is the 403 of a key that lacks scope s.
func MissingScope(s gateway.Scope) *gateway.Error {
	return Forbidden("", "this gateway API key lacks the "+string(s)+" scope")
}

// Allow answers r with the 405 listing methods, with its Allow header,
// unless r's method is one of them, and reports whether r may go on.
func Allow(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	if err := httpapi.Only(r, methods...); err != nil {
		WriteError(w, r, err)
		return false
	}
	return true
}

// ActsIn reports whether a record of workspace ws is within the reach of
// the key id: any workspace's for an organisation key, its own for a
// workspace key, never the operator's (ws empty).
func ActsIn(id gateway.Identity, ws string) bool {
	return ws != "" && (id.Type == gateway.KeyOrganisation || ws == id.WorkspaceID)
}

// KeyType returns k's type, KeyWorkspace for the zero value.
func KeyType(k *gateway.APIKey) gateway.KeyType {
	if k.Type == "" {
		return gateway.KeyWorkspace
	}
	return k.Type
}

// KeyScopes returns what key k may do: its Scopes, or its Role's preset
// when it names none, as the Authenticate stage grants them. The slice
// is shared and must not be modified.
func KeyScopes(k *gateway.APIKey) []gateway.Scope {
	if len(k.Scopes) > 0 {
		return k.Scopes
	}
	return gateway.RoleScopes(k.Role)
}

// Sees reports whether the caller id may see and change key k: an
// organisation key every key, a workspace key the workspace keys of its
// own workspace.
func Sees(id gateway.Identity, k *gateway.APIKey) bool {
	if id.Type == gateway.KeyOrganisation {
		return true
	}
	return id.WorkspaceID != "" && KeyType(k) == gateway.KeyWorkspace && k.WorkspaceID == id.WorkspaceID
}

// MayActOn checks that the caller id may create, update, rotate or
// delete key k, which it sees (docs/architecture.md, Trust: keys are
// ordered by scope): k's scopes must be a subset of the caller's, and an
// organisation key is acted on only by an organisation key. Otherwise it
// is the 403 naming what k holds that the caller lacks.
func MayActOn(id gateway.Identity, k *gateway.APIKey) *gateway.Error {
	refuse := func(why string) *gateway.Error {
		return Forbidden("", "this key may not change API key "+Quote(k.ID)+": it "+why+
			" (a key acts only on keys whose scopes are a subset of its own)")
	}
	if KeyType(k) == gateway.KeyOrganisation && id.Type != gateway.KeyOrganisation {
		return refuse("is an organisation key")
	}
	for _, s := range KeyScopes(k) {
		if !id.Can(s) {
			return refuse("holds the " + string(s) + " scope, which this key lacks")
		}
	}
	return nil
}

// ActingWorkspace returns the workspace a control-plane request acts on:
// named is the workspace_id the request gives ("" for none). An
// organisation key acts on named (no workspace when empty); a workspace
// key on its own, and naming another is a 403.
func ActingWorkspace(id gateway.Identity, named string) (string, error) {
	if id.Type == gateway.KeyOrganisation {
		return named, nil
	}
	if id.WorkspaceID == "" {
		return "", Forbidden("", "a key of no workspace may not manage virtual keys or configs")
	}
	if named != "" && named != id.WorkspaceID {
		return "", OtherWorkspace()
	}
	return id.WorkspaceID, nil
}

// WorkspaceParam returns the workspace_id of the query: "" when absent,
// a 400 when given more than once or empty.
func WorkspaceParam(q url.Values) (string, error) {
	ws, err := httpapi.WorkspaceParam(q)
	return ws, Translate(err)
}

// QueryWorkspace is ActingWorkspace for the workspace_id of r's query.
func QueryWorkspace(id gateway.Identity, r *http.Request) (string, error) {
	named, err := WorkspaceParam(r.URL.Query())
	if err != nil {
		return "", err
	}
	return ActingWorkspace(id, named)
}

// OrgActedIn notes, for the audit record of an organisation key's write,
// the workspace ws it acts in (a workspace key's is its own).
func OrgActedIn(r *http.Request, id gateway.Identity, ws string) {
	if id.Type == gateway.KeyOrganisation {
		ActedIn(r, ws)
	}
}

// Page reads page_size (1–100, default 20) and current_page (from 0).
func Page(q url.Values) (httpapi.Page, error) {
	p, err := httpapi.ParsePage(q)
	return p, Translate(err)
}

// Enum reads query parameter name, which must be one of values when
// present; def when absent.
func Enum(q url.Values, name, def string, values ...string) (string, error) {
	v, err := httpapi.Enum(q, name, def, values...)
	return v, Translate(err)
}

// ReadBody reads a control-plane body, which the gateway's Handle caps
// at Options.MaxBodyBytes: a body over it is the *http.MaxBytesError
// answered 413.
func ReadBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, Invalid("", "a JSON body is required")
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return nil, err
		}
		return nil, Invalid("", "the body could not be read")
	}
	return data, nil
}

// Decode decodes a control-plane body into v, refusing unknown fields,
// with a 400 naming the field. An optional body may be empty.
func Decode(r *http.Request, v any, optional bool) error {
	data, err := ReadBody(r)
	if err != nil {
		return err
	}
	if optional && len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	return Translate(httpapi.DecodeStrict(data, v))
}

// Clock returns now, or time.Now when now is nil: the clock of a
// product's Options.
func Clock(now func() time.Time) time.Time {
	if now != nil {
		return now()
	}
	return time.Now()
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// ValidUUID reports whether s is a UUID in the canonical form, in either
// case.
func ValidUUID(s string) bool { return uuidRE.MatchString(s) }

// NewUUID returns a random (version 4) UUID.
func NewUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// MaxSlugLen bounds a slug.
const MaxSlugLen = 64

// SlugOf derives a slug from a name: lower case, every run of other
// characters than a-z and 0-9 made one '-', no '-' at either end, at most
// MaxSlugLen bytes.
func SlugOf(name string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(name) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(c)
			if b.Len() >= MaxSlugLen {
				break
			}
			continue
		}
		dash = true
	}
	return b.String()
}

// ValidSlug reports whether s is a slug: 1 to MaxSlugLen characters of
// a-z, 0-9 and '-', not starting or ending with '-'.
func ValidSlug(s string) bool {
	if s == "" || len(s) > MaxSlugLen || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// NewSlug returns the slug of a created record: given (checked) or
// derived from name.
func NewSlug(given *string, name string) (string, error) {
	if given != nil {
		if !ValidSlug(*given) {
			return "", Invalid("slug", "slug must be 1 to 64 characters of a-z, 0-9 and '-', not starting or ending with '-'")
		}
		return *given, nil
	}
	s := SlugOf(name)
	if s == "" {
		return "", Invalid("name", "name must hold a letter or digit to derive a slug from; or give slug")
	}
	return s, nil
}

// CheckName checks a name of a body (nil when absent; required when
// req): not blank, and a label.
func CheckName(name *string, req bool) error {
	switch {
	case name == nil && req:
		return Invalid("name", "name is required")
	case name == nil:
		return nil
	case strings.TrimSpace(*name) == "":
		return Invalid("name", "name must not be empty")
	}
	return Label("name", *name)
}

// MaskSecret returns what reads show in place of a secret: its first 2
// and last 2 characters with '*' between, or only '*' when it is shorter
// than 8 characters, so that a short secret is not revealed whole.
func MaskSecret(s string) string {
	if s == "" {
		return ""
	}
	rs := []rune(s)
	if len(rs) < 8 {
		return strings.Repeat("*", len(rs))
	}
	return string(rs[:2]) + strings.Repeat("*", len(rs)-4) + string(rs[len(rs)-2:])
}

// Swaps bounds the compare-and-swap attempts of one update.
const Swaps = 16

// SwapStored runs the "read, change, compare-and-swap" loop of a store
// whose update returns ErrConflict when the record changed since it was
// read: attempt reads and changes the record, returning an error that
// ends the loop as err, and updates it, returning the store's answer as
// updated. On an updated of ErrConflict it is called again (at most
// Swaps times, then a 409 saying that what kept changing); ErrNotFound
// is answered with notFound.
func SwapStored(r *http.Request, what string, notFound *gateway.Error, attempt func() (updated, err error)) error {
	err := httpapi.Swap(r.Context(), Swaps, func() (bool, error) {
		err, stop := attempt()
		if stop != nil {
			return false, stop
		}
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, gateway.ErrNotFound):
			return false, notFound
		case errors.Is(err, gateway.ErrConflict):
			return false, nil
		}
		return false, err
	})
	if errors.Is(err, httpapi.ErrKeptChanging) {
		return Conflict("", what+" kept changing during the update; try again")
	}
	return err
}
