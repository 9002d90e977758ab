package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Error types, as written in the "type" field of an error body.
const (
	TypeInvalidRequest = "invalid_request_error"
	TypePermission     = "permission_error"
	TypeNotFound       = "not_found_error"
	TypeTimeout        = "timeout_error"
	TypeGateway        = "gateway_error"
)

// Error codes the gateway itself produces, as written in the "code" field of
// an error body.
const (
	CodeMissingAPIKey       = "missing_api_key"
	CodeInvalidAPIKey       = "invalid_api_key"
	CodeInvalidHeader       = "invalid_header"
	CodeMissingProvider     = "missing_provider"
	CodeAmbiguousProvider   = "ambiguous_provider"
	CodeUnknownProvider     = "unknown_provider"
	CodeUnknownVirtualKey   = "unknown_virtual_key"
	CodeModelNotAllowed     = "model_not_allowed"
	CodeUnknownConfig       = "unknown_config"
	CodeInvalidConfig       = "invalid_config"
	CodeInvalidCustomHost   = "invalid_custom_host"
	CodePayloadTooLarge     = "payload_too_large"
	CodeRateLimitExceeded   = "rate_limit_exceeded"
	CodeUpstreamUnreachable = "upstream_unreachable"
	CodeTimeout             = "timeout"
	CodeInternal            = "internal_error"
	CodeNotFound            = "not_found"
	CodeMethodNotAllowed    = "method_not_allowed"
	CodePermissionDenied    = "permission_denied"
	CodeConflict            = "conflict"

	// CodeUnsupportedParameter: a request translated for a provider
	// (see Translator) uses a parameter that provider cannot honour.
	CodeUnsupportedParameter = "unsupported_parameter"

	// CodeRouteNotAllowed: the 403 of a request through a virtual key
	// whose AllowedRoutes do not list its route.
	CodeRouteNotAllowed = "route_not_allowed"

	// CodeSecretRequired: the 400 of an update that changes where a
	// stored secret goes (a virtual key's base_url, say) without sending
	// the secret again.
	CodeSecretRequired = "secret_required"

	// CodeAllTargetsUnavailable: the 503 of a request whose every target
	// has an open circuit breaker (see BreakerConfig). No provider was
	// called.
	CodeAllTargetsUnavailable = "all_targets_unavailable"
)

// Error is an error the gateway answers with. Its fields are the four keys
// of an OpenAI-shaped error body plus the HTTP status; an empty Param or Code
// is written as null.
//
// Messages never carry secrets, credentials or internal addresses: the
// wrapped Err, which may, is kept for logs and errors.Is and never written.
type Error struct {
	Status  int    // HTTP status; 0 means 500
	Type    string // e.g. TypeInvalidRequest
	Code    string // e.g. CodeInvalidHeader; "" is null
	Param   string // the offending header, field or query parameter; "" is null
	Message string

	// RetryAfter, when positive, is sent as a Retry-After header in whole
	// seconds, rounded up.
	RetryAfter time.Duration

	// Err is the underlying cause, if any. It is never shown to the caller.
	Err error
}

// Error returns "gateway: " and the message, followed by the parameter
// it names when the message does not already say it.
func (e *Error) Error() string {
	if e.Param != "" && !strings.Contains(e.Message, e.Param) {
		return "gateway: " + e.Message + " (" + e.Param + ")"
	}
	return "gateway: " + e.Message
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// badRequest returns a 400 invalid_request_error.
func badRequest(code, param, msg string) *Error {
	return &Error{Status: http.StatusBadRequest, Type: TypeInvalidRequest, Code: code, Param: param, Message: msg}
}

// invalidHeader returns the 400 for a header whose value is malformed.
func invalidHeader(name, msg string) *Error {
	return badRequest(CodeInvalidHeader, name, name+": "+msg)
}

// errTimeout is the cause of a context cancelled because a request timeout
// from x-gateway-request-timeout or a config elapsed.
type errTimeout struct{ d time.Duration }

func (e errTimeout) Error() string {
	return "Request exceeded the timeout sent in the request: " + strconv.FormatInt(e.d.Milliseconds(), 10) + "ms"
}

// ErrUpstreamUnreachable reports that no provider answered: every attempt
// failed in transport (connection refused, reset, DNS) before a response.
var ErrUpstreamUnreachable = errors.New("gateway: upstream unreachable")

// errorFor is the one mapping from errors to what the caller is told.
func errorFor(err error) *Error {
	var ge *Error
	if errors.As(err, &ge) {
		if ge.Status == 0 {
			c := *ge
			c.Status = http.StatusInternalServerError
			return &c
		}
		return ge
	}
	var te errTimeout
	if errors.As(err, &te) {
		return &Error{Status: http.StatusRequestTimeout, Type: TypeTimeout, Code: CodeTimeout, Message: te.Error(), Err: err}
	}
	var be *blockedAddrError
	if errors.As(err, &be) {
		return &Error{Status: http.StatusBadRequest, Type: TypeInvalidRequest, Code: CodeInvalidCustomHost,
			Param: HeaderCustomHost, Message: "custom host resolves to an address that is not allowed", Err: err}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &Error{Status: http.StatusRequestEntityTooLarge, Type: TypeInvalidRequest, Code: CodePayloadTooLarge,
			Message: "request body exceeds " + strconv.FormatInt(mbe.Limit, 10) + " bytes", Err: err}
	}
	if errors.Is(err, ErrConflict) {
		return &Error{Status: http.StatusConflict, Type: TypeInvalidRequest, Code: CodeConflict, Message: "the record conflicts with a stored one", Err: err}
	}
	if errors.Is(err, ErrUpstreamUnreachable) {
		return &Error{Status: http.StatusBadGateway, Type: TypeGateway, Code: CodeUpstreamUnreachable,
			Message: "the provider could not be reached", Err: err}
	}
	if errors.Is(err, context.Canceled) {
		// The caller went away; nobody reads this answer, it only shows in logs.
		return &Error{Status: statusClientClosed, Type: TypeGateway, Code: "client_closed", Message: "client closed the request", Err: err}
	}
	return &Error{Status: http.StatusInternalServerError, Type: TypeGateway, Code: CodeInternal, Message: "internal gateway error", Err: err}
}

// statusClientClosed is recorded in logs when the caller went away before an
// answer; it is never sent.
const statusClientClosed = 499

// errorBody is the wire form: all four keys always present.
type errorBody struct {
	Error errorFields `json:"error"`
}

type errorFields struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// MarshalJSON encodes e as an OpenAI-shaped error body.
func (e *Error) MarshalJSON() ([]byte, error) {
	return json.Marshal(errorBody{errorFields{Message: e.Message, Type: e.Type, Param: nullable(e.Param), Code: nullable(e.Code)}})
}

// WriteError answers w with the OpenAI-shaped body and status that err maps
// to (Anthropic-shaped on the gateway's POST /messages routes). Errors that are not an *Error become a 500 whose message says nothing
// about the cause. It records the error code for the request log when the
// request went through the gateway's trace stage.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	e := errorFor(err)
	if st := stateFrom(r.Context()); st != nil {
		st.log.ErrorCode = e.Code
		if st.log.ErrorCode == "" {
			st.log.ErrorCode = e.Type
		}
	}
	if e.Status == statusClientClosed {
		return
	}
	h := w.Header()
	h.Del("Content-Encoding")
	if e.RetryAfter > 0 {
		secs := int64((e.RetryAfter + time.Second - 1) / time.Second)
		h.Set("Retry-After", strconv.FormatInt(secs, 10))
	}
	if anthropicShaped(r, stateFrom(r.Context())) {
		writeAnthropicError(w, e)
		return
	}
	writeJSON(w, e.Status, e)
}
