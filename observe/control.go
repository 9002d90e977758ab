package observe

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"unicode/utf8"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// The control-plane plumbing of the observability routes: answers, errors
// and request bodies, the way the gateway's own control routes have them.

// codeInvalid is the error code of a malformed control-plane request: a
// body field, query parameter or path parameter.
const codeInvalid = "invalid_parameter"

// writeJSON answers w with status and the JSON encoding of v, ended by a
// newline, with its Content-Type and Content-Length.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		body, status = []byte(`{"error":{"message":"internal gateway error","type":"gateway_error","param":null,"code":"internal_error"}}`), http.StatusInternalServerError
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// policyInvalid returns the 400 for a malformed parameter.
func policyInvalid(param, msg string) *gateway.Error {
	return &gateway.Error{Status: http.StatusBadRequest, Type: gateway.TypeInvalidRequest, Code: codeInvalid, Param: param, Message: msg}
}

// policyBodyError turns a JSON decoding error of a body into a 400 naming
// the field.
func policyBodyError(err error) *gateway.Error {
	fe := httpapi.BodyError(err)
	return policyInvalid(fe.Param, fe.Message)
}

// apiError is the one translation of internal/httpapi's errors into the
// gateway's: a *httpapi.FieldError is the 400 naming its field; others
// are returned as they are.
func apiError(err error) error {
	var fe *httpapi.FieldError
	if errors.As(err, &fe) {
		return policyInvalid(fe.Param, fe.Message)
	}
	return err
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
	gateway.WriteError(w, r, err)
}

// allowOnly answers r with a 405 listing methods unless its method is one
// of them, and reports whether r may go on.
func allowOnly(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	if err := httpapi.Only(r, methods...); err != nil {
		writeAPIError(w, r, err)
		return false
	}
	return true
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	gateway.WriteError(w, r, &gateway.Error{Status: http.StatusMethodNotAllowed, Type: gateway.TypeInvalidRequest,
		Code: gateway.CodeMethodNotAllowed, Message: r.Method + " is not allowed on " + r.URL.Path + "; allowed: " + allow})
}

func notFound(w http.ResponseWriter, r *http.Request) {
	gateway.WriteError(w, r, &gateway.Error{Status: http.StatusNotFound, Type: gateway.TypeNotFound, Code: gateway.CodeNotFound,
		Message: "no route for " + r.Method + " " + r.URL.Path})
}

// missingScope is the 403 of a key that lacks scope s.
func missingScope(s gateway.Scope) *gateway.Error {
	return &gateway.Error{Status: http.StatusForbidden, Type: gateway.TypePermission, Code: gateway.CodePermissionDenied,
		Message: "this gateway API key lacks the " + string(s) + " scope"}
}

// scopedIdentity returns the caller of r when it holds the scope r needs:
// read for a GET, write for anything else. Otherwise it answers the 403
// naming the missing scope and reports false.
func scopedIdentity(w http.ResponseWriter, r *http.Request, read, write gateway.Scope) (gateway.Identity, bool) {
	id, _ := gateway.IdentityFrom(r.Context())
	need := write
	if r.Method == http.MethodGet {
		need = read
	}
	if !id.Can(need) {
		gateway.WriteError(w, r, missingScope(need))
		return id, false
	}
	return id, true
}

func otherWorkspace() *gateway.Error {
	return &gateway.Error{Status: http.StatusForbidden, Type: gateway.TypePermission, Code: gateway.CodePermissionDenied,
		Param: "workspace_id", Message: "only an organisation key may name another workspace"}
}

// quoteShort quotes s for an error message, cut to a sane length.
func quoteShort(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// notFoundAs turns ErrNotFound into a 404 saying msg.
func notFoundAs(err error, msg string) error {
	if errors.Is(err, gateway.ErrNotFound) {
		return &gateway.Error{Status: http.StatusNotFound, Type: gateway.TypeNotFound, Code: gateway.CodeNotFound, Message: msg}
	}
	return err
}

// pageParams reads page_size (1–100, default 20) and current_page (from 0).
func pageParams(q url.Values) (size, page int, err error) {
	p, err := httpapi.ParsePage(q)
	return p.Size, p.Number, apiError(err)
}

// fail answers err; one that is not an *gateway.Error is a failure of a
// store: the caller gets a bare 500, the error log the cause, under what.
func (rs *Routes) fail(w http.ResponseWriter, r *http.Request, what string, err error) {
	if ge := (*gateway.Error)(nil); !errors.As(err, &ge) {
		rs.errLog.ErrorContext(r.Context(), "gateway: "+what, "err", err)
	}
	gateway.WriteError(w, r, err)
}

// controlPlaneError answers err, logging it first when it is the store's
// own failure rather than a refusal of the request.
func (rs *Routes) controlPlaneError(w http.ResponseWriter, r *http.Request, what string, err error) {
	err = apiError(err)
	var ge *gateway.Error
	if !errors.As(err, &ge) && !errors.As(err, new(*http.MaxBytesError)) && !errors.As(err, new(*httpapi.MethodError)) {
		rs.errLog.ErrorContext(r.Context(), "gateway: "+what, "err", err)
	}
	writeAPIError(w, r, err)
}

// decodeBody decodes a control-plane body into v, refusing unknown
// fields, with a 400 naming the field.
func (rs *Routes) decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	data, err := rs.readPolicyBody(w, r)
	if err != nil {
		return err
	}
	return apiError(httpapi.DecodeStrict(data, v))
}

// readPolicyBody reads a control-plane body of at most Options.MaxBodyBytes.
func (rs *Routes) readPolicyBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, policyInvalid("", "a JSON body is required")
	}
	if r.Body == http.NoBody {
		return []byte{}, nil
	}
	if r.ContentLength > rs.maxBody {
		return nil, &http.MaxBytesError{Limit: rs.maxBody}
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, rs.maxBody))
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return nil, err
		}
		return nil, policyInvalid("", "the body could not be read")
	}
	return data, nil
}

// maxModelBytes bounds a model name kept in a record, as the gateway
// bounds the model of its own requests.
const maxModelBytes = 256

// clipModel cuts m to maxModelBytes, on a character boundary.
func clipModel(m string) string {
	if len(m) <= maxModelBytes {
		return m
	}
	i := maxModelBytes
	for i > 0 && !utf8.RuneStart(m[i]) {
		i--
	}
	return m[:i]
}
