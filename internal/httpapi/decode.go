package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

// ErrTrailing is the cause of the *FieldError for a body holding more
// than one JSON value.
var ErrTrailing = errors.New("httpapi: more than one JSON value")

// DecodeStrict decodes data, one JSON value, into v, refusing fields v
// does not have. A bad body is a *FieldError naming the field at fault:
// an unknown field, or one of the wrong JSON type; "" for invalid JSON
// or a body holding more than one value (whose cause is ErrTrailing).
func DecodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return BodyError(err)
	}
	if dec.More() {
		return &FieldError{Message: "the body must be a single JSON object", Err: ErrTrailing}
	}
	return nil
}

// BodyError turns an error of encoding/json decoding a body into a
// *FieldError naming the field at fault.
func BodyError(err error) *FieldError {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			return Invalid("", "the body must be a JSON object")
		}
		return Invalid(field, field+" must be a JSON "+te.Type.Kind().String())
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		f, _ = strconv.Unquote(f)
		return Invalid(f, "unknown field "+quoteShort(f))
	}
	return Invalid("", "the body is not valid JSON")
}

// quoteShort quotes s for a message, cut to 64 bytes.
func quoteShort(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strconv.Quote(s)
}
