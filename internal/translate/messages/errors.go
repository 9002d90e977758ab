package messages

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// ErrorType returns the Anthropic error type of an error answered with
// status, given its OpenAI-shaped type and code. The status decides,
// except where the code says more:
//
//	400, 405, 409, 411, 412, 415, 422, 446, other 4xx  invalid_request_error
//	401                                                authentication_error
//	402, and code budget_exhausted or insufficient_quota  billing_error
//	403                                                permission_error
//	404                                                not_found_error
//	408, 504                                           timeout_error
//	413                                                request_too_large
//	429                                                rate_limit_error
//	503, 529                                           overloaded_error
//	500, 502, other 5xx                                api_error
//
// The gateway's own 412 is a spent budget (budget_exhausted), hence
// billing_error; a guardrail's 446 refuses the request's content, an
// invalid request as Anthropic means it. A status of 0 falls back to the
// type: an OpenAI type that is also Anthropic's is kept, anything else is
// api_error.
func ErrorType(status int, typ, code string) string {
	switch code {
	case "budget_exhausted", "insufficient_quota":
		return "billing_error"
	}
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return "timeout_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusServiceUnavailable, 529:
		return "overloaded_error"
	}
	switch {
	case status >= 400 && status < 500:
		return "invalid_request_error"
	case status >= 500:
		return "api_error"
	}
	switch typ {
	case "invalid_request_error", "authentication_error", "permission_error", "not_found_error",
		"rate_limit_error", "overloaded_error", "billing_error", "timeout_error":
		return typ
	}
	return "api_error"
}

// ErrorBody returns the Anthropic-shaped body of an error answered with
// status: {"type":"error","error":{"type":…,"message":…}}. typ and code
// are the OpenAI-shaped error's, mapped by ErrorType; param, when not
// empty and not already in message, is prefixed to it, since Anthropic's
// errors have no member for it.
func ErrorBody(status int, typ, code, param, message string) []byte {
	if param != "" && !strings.Contains(message, param) {
		message = param + ": " + message
	}
	if message == "" {
		message = strings.TrimSpace(strconv.Itoa(status) + " " + http.StatusText(status))
	}
	b := make([]byte, 0, 64+len(message))
	b = append(b, `{"type":"error","error":{"type":`...)
	b = appendString(b, ErrorType(status, typ, code))
	b = append(b, `,"message":`...)
	b = appendString(b, message)
	return append(b, '}', '}')
}

// ErrorFromChat returns the Anthropic-shaped body of a chat target's
// error answer (status and its OpenAI-shaped body). A body that is not
// OpenAI-shaped is answered with the status's own text, never echoed.
func ErrorFromChat(status int, body []byte) []byte {
	var e struct {
		Error *struct {
			Message stringOnly `json:"message"`
			Type    stringOnly `json:"type"`
			Code    stringOnly `json:"code"`
			Param   stringOnly `json:"param"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error == nil {
		return ErrorBody(status, "", "", "", "")
	}
	return ErrorBody(status, string(e.Error.Type), string(e.Error.Code), string(e.Error.Param), string(e.Error.Message))
}
