package control

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/bounds"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// CodeInvalid is the error code of a malformed control-plane request: a
// body field, query parameter or path parameter.
const CodeInvalid = "invalid_parameter"

// Invalid returns the 400 invalid_parameter naming param.
func Invalid(param, msg string) *gateway.Error {
	return &gateway.Error{Status: http.StatusBadRequest, Type: gateway.TypeInvalidRequest, Code: CodeInvalid, Param: param, Message: msg}
}

// NotFound returns the 404 not_found saying msg.
func NotFound(msg string) *gateway.Error {
	return &gateway.Error{Status: http.StatusNotFound, Type: gateway.TypeNotFound, Code: gateway.CodeNotFound, Message: msg}
}

// Forbidden returns the 403 permission_denied naming param ("" for none).
func Forbidden(param, msg string) *gateway.Error {
	return &gateway.Error{Status: http.StatusForbidden, Type: gateway.TypePermission, Code: gateway.CodePermissionDenied,
		Param: param, Message: msg}
}

// Conflict returns the 409 conflict naming param ("" for none).
func Conflict(param, msg string) *gateway.Error {
	return &gateway.Error{Status: http.StatusConflict, Type: gateway.TypeInvalidRequest, Code: gateway.CodeConflict,
		Param: param, Message: msg}
}

// OtherWorkspace is the 403 of a workspace key naming another workspace.
func OtherWorkspace() *gateway.Error {
	return Forbidden("workspace_id", "only an organisation key may name another workspace")
}

// Translate is the one translation of internal/httpapi's errors into the
// gateway's: a *httpapi.FieldError is the 400 invalid_parameter naming
// its field; others, a *httpapi.MethodError among them (which WriteError
// answers with a 405 and its Allow header), are returned as they are.
func Translate(err error) error {
	var fe *httpapi.FieldError
	if errors.As(err, &fe) {
		return Invalid(fe.Param, fe.Message)
	}
	return err
}

// WriteError answers err, translated by Translate: a *httpapi.MethodError
// is the 405 with its Allow header.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	err = Translate(err)
	var me *httpapi.MethodError
	if errors.As(err, &me) {
		w.Header().Set("Allow", me.Allow)
		gateway.WriteError(w, r, &gateway.Error{Status: http.StatusMethodNotAllowed, Type: gateway.TypeInvalidRequest,
			Code: gateway.CodeMethodNotAllowed, Message: me.Error()})
		return
	}
	gateway.WriteError(w, r, err)
}

// Fail answers err, logging it to log first (slog.Default() when nil)
// when it is the store's own failure rather than a refusal of the
// request; what names the store in the log line.
func Fail(w http.ResponseWriter, r *http.Request, log *slog.Logger, what string, err error) {
	err = Translate(err)
	var ge *gateway.Error
	if !errors.As(err, &ge) && !errors.As(err, new(*http.MaxBytesError)) && !errors.As(err, new(*httpapi.MethodError)) {
		if log == nil {
			log = slog.Default()
		}
		log.ErrorContext(r.Context(), "gateway: "+what, "err", err)
	}
	WriteError(w, r, err)
}

// NoRoute answers the 404 of a path no route serves: what a product
// mounts below its namespace so that the namespace is never passed
// through to a provider.
func NoRoute(w http.ResponseWriter, r *http.Request) {
	gateway.WriteError(w, r, NotFound("no route for "+r.Method+" "+r.URL.Path))
}

// Quote quotes s for an error message, cut to 64 bytes.
func Quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// Label checks a name (or another short label) a tenant writes (see
// bounds.Label), as a 400 naming param.
func Label(param, s string) error { return Translate(bounds.Label(param, s)) }

// Metadata checks metadata a tenant stores (see bounds.Metadata), as a
// 400 naming param.
func Metadata(param string, md map[string]string) error {
	return Translate(bounds.Metadata(param, md))
}

// Description checks a description a tenant writes (see
// bounds.Description), as a 400 naming param.
func Description(param, s string) error { return Translate(bounds.Description(param, s)) }

// SecretRequired returns the 400 secret_required naming param: an
// update that moves a stored secret to another host without sending it
// again.
func SecretRequired(param, msg string) *gateway.Error {
	e := Invalid(param, msg)
	e.Code = gateway.CodeSecretRequired
	return e
}

// CheckHost checks a base URL or custom host a tenant writes as the data
// plane checks it when it is used (g.CheckHost), naming param in the
// 400.
func CheckHost(g *gateway.Gateway, rawURL, param string) error {
	err := g.CheckHost(rawURL)
	var ge *gateway.Error
	if errors.As(err, &ge) {
		e := *ge
		e.Param = param
		return &e
	}
	return err
}

// AuditURL is raw, a base URL or custom host, as an audit record shows it:
// without user info, query or fragment, which may carry a secret.
func AuditURL(raw string) string {
	if raw == "" {
		return "(none)"
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}
