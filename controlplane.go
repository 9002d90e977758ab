package gateway

import (
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelgateway/gateway/internal/httpapi"
)

// controlPlaneError answers err, logging it first when it is the store's
// own failure rather than a refusal of the request.
func (g *Gateway) controlPlaneError(w http.ResponseWriter, r *http.Request, what string, err error) {
	err = apiError(err)
	var ge *Error
	if !errors.As(err, &ge) && !errors.As(err, new(*http.MaxBytesError)) && !errors.As(err, new(*httpapi.MethodError)) {
		g.errLog.ErrorContext(r.Context(), "gateway: "+what, "err", err)
	}
	writeAPIError(w, r, err)
}

// writeAPIError answers err, translated by apiError: a
// *httpapi.MethodError is the 405 with its Allow header.
func writeAPIError(w http.ResponseWriter, r *http.Request, err error) {
	err = apiError(err)
	var me *httpapi.MethodError
	if errors.As(err, &me) {
		methodNotAllowed(w, r, me.Allow)
		return
	}
	WriteError(w, r, err)
}

// apiError is the one translation of internal/httpapi's errors into the
// gateway's: a *httpapi.FieldError is the 400 invalid_parameter naming its
// field; others, a *httpapi.MethodError among them (which
// controlPlaneError answers with a 405 and its Allow header), are
// returned as they are.
func apiError(err error) error {
	var fe *httpapi.FieldError
	if errors.As(err, &fe) {
		return policyInvalid(fe.Param, fe.Message)
	}
	return err
}

// workspaceParam returns the workspace_id of the query: "" when absent.
func workspaceParam(q url.Values) (string, error) {
	ws, err := httpapi.WorkspaceParam(q)
	return ws, apiError(err)
}

// actingWorkspace returns the workspace a control-plane request acts on:
// named is the workspace_id the request gives ("" for none). An
// organisation key acts on named (no workspace when empty); a workspace
// key on its own, and naming another is a 403.
func actingWorkspace(id Identity, named string) (string, error) {
	if id.Type == KeyOrganisation {
		return named, nil
	}
	if id.WorkspaceID == "" {
		return "", &Error{Status: http.StatusForbidden, Type: TypePermission, Code: CodePermissionDenied,
			Message: "a key of no workspace may not manage virtual keys or configs"}
	}
	if named != "" && named != id.WorkspaceID {
		return "", otherWorkspace()
	}
	return id.WorkspaceID, nil
}

// queryWorkspace is actingWorkspace for the workspace_id of the query.
func queryWorkspace(id Identity, r *http.Request) (string, error) {
	named, err := workspaceParam(r.URL.Query())
	if err != nil {
		return "", err
	}
	return actingWorkspace(id, named)
}

// pageParams reads page_size (1–100, default 20) and current_page (from 0).
func pageParams(q url.Values) (size, page int, err error) {
	p, err := httpapi.ParsePage(q)
	return p.Size, p.Number, apiError(err)
}

// pageOf returns the page of all that page_size and current_page select.
func pageOf[T any](all []T, size, page int) []T {
	return httpapi.Of(all, httpapi.Page{Size: size, Number: page})
}

// slugOf derives a slug from a name: lower case, every run of other
// characters than a-z and 0-9 made one '-', no '-' at either end, at most
// maxSlugLen bytes.
func slugOf(name string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(name) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(c)
			if b.Len() >= maxSlugLen {
				break
			}
			continue
		}
		dash = true
	}
	return b.String()
}

// validSlug reports whether s is a slug: 1 to maxSlugLen characters of
// a-z, 0-9 and '-', not starting or ending with '-'.
func validSlug(s string) bool {
	if s == "" || len(s) > maxSlugLen || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// newSlug returns the slug of a created record: given (checked) or
// derived from name.
func newSlug(given *string, name string) (string, error) {
	if given != nil {
		if !validSlug(*given) {
			return "", policyInvalid("slug", "slug must be 1 to 64 characters of a-z, 0-9 and '-', not starting or ending with '-'")
		}
		return *given, nil
	}
	s := slugOf(name)
	if s == "" {
		return "", policyInvalid("name", "name must hold a letter or digit to derive a slug from; or give slug")
	}
	return s, nil
}

// checkName checks a name (required when req).
func checkName(name *string, req bool) error {
	switch {
	case name == nil && req:
		return policyInvalid("name", "name is required")
	case name == nil:
		return nil
	case strings.TrimSpace(*name) == "":
		return policyInvalid("name", "name must not be empty")
	}
	return checkLabel("name", *name)
}

// maskSecret returns what reads show in place of a secret: its first 2
// and last 2 characters with '*' between, or only '*' when it is shorter
// than 8 characters, so that a short secret is not revealed whole.
func maskSecret(s string) string {
	if s == "" {
		return ""
	}
	rs := []rune(s)
	if len(rs) < 8 {
		return strings.Repeat("*", len(rs))
	}
	return string(rs[:2]) + strings.Repeat("*", len(rs)-4) + string(rs[len(rs)-2:])
}

// listPage is one page of a control-plane list (see httpapi.Filter).
func listPage[T, W any](all []T, keep func(*T) bool, wire func(*T) W, size, page int) (data []W, total int) {
	return httpapi.Filter(all, keep, wire, httpapi.Page{Size: size, Number: page})
}

// decodeStrict decodes a control-plane body into v, refusing unknown
// fields, with a 400 naming the field.
func (g *Gateway) decodeStrict(w http.ResponseWriter, r *http.Request, v any, optional bool) error {
	data, err := g.readPolicyBody(w, r)
	if err != nil {
		return err
	}
	if optional && len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	return apiError(httpapi.DecodeStrict(data, v))
}
