package responses

import (
	"net/http"

	"github.com/modelgateway/gateway/internal/chat"
)

// Codes of the errors Parse and Request.Chat return.
const (
	// CodeUnsupported: the member names something a chat completion
	// cannot express, such as a built-in tool or a file input.
	CodeUnsupported = "unsupported_parameter"
	// CodeInvalid: the member is not what the Responses API takes.
	CodeInvalid = "invalid_json"
)

// Error is a request member that cannot be translated. The caller answers
// it with a 400 whose param is Param, the JSON path of the member (for
// example "input[2].content[0].type"), and whose code is Code.
type Error struct {
	Code    string
	Param   string
	Message string
}

// Error returns the message, prefixed by the member it names.
func (e *Error) Error() string {
	if e.Param == "" {
		return e.Message
	}
	return e.Param + ": " + e.Message
}

func unsupported(param, msg string) *Error {
	return &Error{Code: CodeUnsupported, Param: param, Message: msg}
}

func invalid(param, msg string) *Error {
	return &Error{Code: CodeInvalid, Param: param, Message: msg}
}

// ErrorBody returns the error body of a failed Responses request, which
// is OpenAI's error shape: {"error":{"message","type","param","code"}}.
// An empty code or param is null.
func ErrorBody(message, typ, code, param string) []byte {
	return chat.ErrorBody(message, typ, code, param)
}

// FailureCode maps a failure's HTTP status to the code a Response's error
// carries when it fails, which the Responses API draws from a short list:
// 429 is rate_limit_exceeded, another 4xx invalid_prompt, anything else
// server_error.
func FailureCode(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	case status >= 400 && status < 500:
		return "invalid_prompt"
	}
	return "server_error"
}
