package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/modelgateway/gateway/internal/bounds"
	"net/http"
	"net/url"
	"time"

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

// pageParams reads page_size (1–100, default 20) and current_page (from 0).
func pageParams(q url.Values) (size, page int, err error) {
	p, err := httpapi.ParsePage(q)
	return p.Size, p.Number, apiError(err)
}

// pageOf returns the page of all that page_size and current_page select.
func pageOf[T any](all []T, size, page int) []T {
	return httpapi.Of(all, httpapi.Page{Size: size, Number: page})
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

func (g *Gateway) clock() time.Time {
	if g.now != nil {
		return g.now()
	}
	return time.Now()
}

func otherWorkspace() *Error {
	return &Error{Status: http.StatusForbidden, Type: TypePermission, Code: CodePermissionDenied, Param: "workspace_id",
		Message: "only an organisation key may name another workspace"}
}

// limitsJSON checks rate_limits (an array) or usage_limits (an object):
// nil for absent or null.
func limitsJSON(name string, raw json.RawMessage, open byte) (json.RawMessage, error) {
	rl, err := bounds.Limits(name, raw, open)
	return rl, apiError(err)
}

// actsIn reports whether a policy of workspace ws is within the reach of
// the key id: any workspace's for an organisation key, its own for a
// workspace key, never the operator's (ws empty).
func (id Identity) actsIn(ws string) bool {
	return ws != "" && (id.Type == KeyOrganisation || ws == id.WorkspaceID)
}

// policyListWorkspace returns the workspace whose policies a list shows:
// the workspace_id of the query, or the key's own; "" for every workspace
// (an organisation key naming none; a workspace key of no workspace, which
// the caller's filter leaves with nothing). A workspace key naming another
// workspace is a 403.
func policyListWorkspace(id Identity, q url.Values) (string, error) {
	ws, err := workspaceParam(q)
	if err != nil {
		return "", err
	}
	if id.Type == KeyOrganisation {
		return ws, nil
	}
	if ws != "" && ws != id.WorkspaceID {
		return "", &Error{Status: http.StatusForbidden, Type: TypePermission, Code: CodePermissionDenied, Param: "workspace_id",
			Message: "a key may list policies only in its own workspace"}
	}
	return id.WorkspaceID, nil
}

// policyCreateWorkspace returns the workspace of a policy created by id
// with workspace_id named in the body: named, required of an organisation
// key (400 naming workspace_id), or the key's own (403 for another one).
func policyCreateWorkspace(id Identity, named string) (string, error) {
	switch {
	case id.Type == KeyOrganisation && named == "":
		return "", policyInvalid("workspace_id", "workspace_id is required: an organisation key names the workspace of the policy")
	case id.Type == KeyOrganisation:
		if err := checkLabel("workspace_id", named); err != nil {
			return "", err
		}
		return named, nil
	case id.WorkspaceID == "":
		// Its policy would have no workspace: the operator's kind, which
		// applies to every workspace.
		return "", &Error{Status: http.StatusForbidden, Type: TypePermission, Code: CodePermissionDenied,
			Message: "a key without a workspace cannot create policies"}
	case named != "" && named != id.WorkspaceID:
		return "", &Error{Status: http.StatusForbidden, Type: TypePermission, Code: CodePermissionDenied, Param: "workspace_id",
			Message: "a key may create policies only in its own workspace"}
	}
	return id.WorkspaceID, nil
}

// eachWorkspace calls f with the id of every workspace Options.Workspaces
// registers (none without it).
func (g *Gateway) eachWorkspace(ctx context.Context, f func(ws string) error) error {
	if g.opts.Workspaces == nil {
		return nil
	}
	wss, err := g.opts.Workspaces.Workspaces(ctx)
	if err != nil {
		return err
	}
	for _, w := range wss {
		if err := f(w.ID); err != nil {
			return err
		}
	}
	return nil
}

// policyEnum reads query parameter name, which must be one of values when
// present.
func policyEnum(q url.Values, name, def string, values ...string) (string, error) {
	v, err := httpapi.Enum(q, name, def, values...)
	return v, apiError(err)
}

// readPolicyBody reads a control-plane body of at most MaxBodyBytes.
func (g *Gateway) readPolicyBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, policyInvalid("", "a JSON body is required")
	}
	data, err := readBody(w, r, g.opts.MaxBodyBytes)
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return nil, err
		}
		return nil, policyInvalid("", "the body could not be read")
	}
	return data, nil
}

// policyBodyError turns a JSON decoding error of a create body into a 400
// naming the field.
func policyBodyError(err error) *Error {
	fe := httpapi.BodyError(err)
	return policyInvalid(fe.Param, fe.Message)
}

// policyNow returns the time in the fixed-width RFC 3339 form stored in
// created_at and last_updated_at, so that the strings sort by time.
func policyNow() string {
	return time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// listPage is one page of a control-plane list (see httpapi.Filter).
func listPage[T, W any](all []T, keep func(*T) bool, wire func(*T) W, size, page int) (data []W, total int) {
	return httpapi.Filter(all, keep, wire, httpapi.Page{Size: size, Number: page})
}
