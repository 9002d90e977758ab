package prompt

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// codeInvalid is the error code of a malformed request: a body field,
// query parameter or path parameter.
const codeInvalid = "invalid_parameter"

// maxBody bounds the body of a write, and of a render or completions
// request.
const maxBody = 4 << 20

func invalid(param, msg string) *gateway.Error {
	return &gateway.Error{Status: http.StatusBadRequest, Type: gateway.TypeInvalidRequest, Code: codeInvalid, Param: param, Message: msg}
}

func notFound(param, msg string) *gateway.Error {
	return &gateway.Error{Status: http.StatusNotFound, Type: gateway.TypeNotFound, Code: gateway.CodeNotFound, Param: param, Message: msg}
}

func forbidden(param, msg string) *gateway.Error {
	return &gateway.Error{Status: http.StatusForbidden, Type: gateway.TypePermission, Code: gateway.CodePermissionDenied, Param: param, Message: msg}
}

func conflict(param, msg string) *gateway.Error {
	return &gateway.Error{Status: http.StatusConflict, Type: gateway.TypeInvalidRequest, Code: gateway.CodeConflict, Param: param, Message: msg}
}

// quote quotes s for a message, cut to 64 bytes.
func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strconv.Quote(s)
}

// writeJSON answers w with status and the JSON encoding of v.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v) // wire types of valid JSON only
	if err != nil {
		body, status = []byte(`{"error":{"message":"internal gateway error","type":"gateway_error","param":null,"code":"internal_error"}}`), http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// fail answers err: a *httpapi.FieldError is the 400 naming its field, a
// *httpapi.MethodError the 405 with its Allow header, an error that is
// not the gateway's own a 500, logged to log.
func fail(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	var fe *httpapi.FieldError
	if errors.As(err, &fe) {
		err = invalid(fe.Param, fe.Message)
	}
	var me *httpapi.MethodError
	if errors.As(err, &me) {
		w.Header().Set("Allow", me.Allow)
		err = &gateway.Error{Status: http.StatusMethodNotAllowed, Type: gateway.TypeInvalidRequest,
			Code: gateway.CodeMethodNotAllowed, Message: me.Error()}
	}
	var ge *gateway.Error
	if !errors.As(err, &ge) && !errors.As(err, new(*http.MaxBytesError)) {
		if log == nil {
			log = slog.Default()
		}
		log.ErrorContext(r.Context(), "gateway: prompt store", "err", err)
	}
	gateway.WriteError(w, r, err)
}

// readBody reads the body of r, at most maxBody bytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, invalid("", "a JSON body is required")
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return nil, err
		}
		return nil, invalid("", "the body could not be read")
	}
	return data, nil
}

// decode decodes the body of r into v, refusing unknown fields, with a
// 400 naming the field at fault. An optional body may be empty.
func decode(w http.ResponseWriter, r *http.Request, v any, optional bool) error {
	data, err := readBody(w, r)
	if err != nil {
		return err
	}
	if optional && len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	return httpapi.DecodeStrict(data, v)
}
