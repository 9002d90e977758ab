package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
)

// decodeBody decodes a JSON request body into v, turning decoding errors
// into 400s: a syntax error without Param, a member of the wrong type with
// Param naming the member.
func decodeBody(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return badRequest(CodeInvalidJSON, "", "the request body must be a JSON object")
	}
	err := json.Unmarshal(body, v)
	if err == nil {
		return nil
	}
	var fe *JSONFieldError
	if errors.As(err, &fe) {
		param := fe.Path
		if i := strings.IndexAny(param, ".["); i > 0 {
			param = param[:i]
		}
		return &Error{Status: http.StatusBadRequest, Type: TypeInvalidRequest, Code: CodeInvalidJSON, Param: param,
			Message: "invalid value for " + fe.Path + ": " + fe.Err.Error(), Err: err}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field == "" {
		return &Error{Status: http.StatusBadRequest, Type: TypeInvalidRequest, Code: CodeInvalidJSON,
			Message: "the request body must be a JSON object", Err: err}
	}
	return &Error{Status: http.StatusBadRequest, Type: TypeInvalidRequest, Code: CodeInvalidJSON,
		Message: "the request body is not valid JSON: " + strings.TrimPrefix(err.Error(), "json: "), Err: err}
}

// JSONFieldError reports a member of a JSON object whose value does not
// fit the typed field, e.g. a string where an integer belongs. Path names
// the member, with the names of enclosing members before it
// ("choices.logprobs").
type JSONFieldError struct {
	Path string
	Err  error
}

// Error returns the path and the decoding error.
func (e *JSONFieldError) Error() string {
	return "gateway: invalid JSON for " + e.Path + ": " + strings.TrimPrefix(e.Err.Error(), "json: ")
}

// Unwrap returns the decoding error.
func (e *JSONFieldError) Unwrap() error { return e.Err }

// jsonField is one json-tagged field of a struct.
type jsonField struct {
	index     int
	name      string
	omitEmpty bool
	omitZero  bool
}

// jsonFields lists the json-tagged fields of struct type t, in order.
func jsonFields(t reflect.Type) []jsonField {
	fields := make([]jsonField, 0, t.NumField())
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, ok := sf.Tag.Lookup("json")
		if !ok || tag == "-" || !sf.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		f := jsonField{index: i, name: name}
		for o := range strings.SplitSeq(opts, ",") {
			switch o {
			case "omitempty":
				f.omitEmpty = true
			case "omitzero":
				f.omitZero = true
			}
		}
		fields = append(fields, f)
	}
	return fields
}

// omitted reports whether encoding/json would leave v out.
func (f jsonField) omitted(v reflect.Value) bool {
	return (f.omitEmpty && isEmptyValue(v)) || (f.omitZero && isZero(v))
}

// blank reports whether v cannot be told from its zero value when encoded.
func (f jsonField) blank(v reflect.Value) bool {
	return isZero(v) || f.omitted(v)
}

func isZero(v reflect.Value) bool {
	if z, ok := v.Interface().(interface{ IsZero() bool }); ok {
		return z.IsZero()
	}
	return v.IsZero()
}

func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

var jsonNull = []byte("null")

// decodeObject decodes the JSON object data into the json-tagged fields of
// the struct dst points to, matching member names exactly, and returns the
// members no field represents: unknown ones, and those whose decoded field
// cannot be told from its zero value when encoded again (null where the
// field is omitted when empty, 0 where it is omitted, and so on). null for
// the whole object leaves dst unchanged.
//
// The members named in keep are kept in the result whenever their field is
// blank: MarshalJSON fills those fields with a default when they are blank,
// so their explicit value must be remembered.
func decodeObject(data []byte, dst any, keep ...string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, nil
	}
	rv := reflect.ValueOf(dst).Elem()
	for _, f := range jsonFields(rv.Type()) {
		raw, ok := m[f.name]
		if !ok {
			continue
		}
		fv := rv.Field(f.index)
		if err := json.Unmarshal(raw, fv.Addr().Interface()); err != nil {
			var fe *JSONFieldError
			if errors.As(err, &fe) {
				return nil, &JSONFieldError{Path: f.name + "." + fe.Path, Err: fe.Err}
			}
			return nil, &JSONFieldError{Path: f.name, Err: plainJSONError(err)}
		}
		if f.blank(fv) && (f.omitted(fv) || slices.Contains(keep, f.name) || !sameEncoding(fv, raw)) {
			continue // kept in m, hence in Extra
		}
		delete(m, f.name)
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

// plainJSONError drops the Go type names from a decoding error, which mean
// nothing to a caller writing JSON.
func plainJSONError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Type != nil {
		return fmt.Errorf("expected %s, got %s", jsonKind(te.Type), te.Value)
	}
	return err
}

// jsonKind describes the JSON a Go type decodes from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer in range"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

// sameEncoding reports whether v encodes to the same JSON as raw.
func sameEncoding(v reflect.Value, raw json.RawMessage) bool {
	enc, err := json.Marshal(v.Interface())
	if err != nil {
		return false
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return false
	}
	return bytes.Equal(enc, buf.Bytes())
}

// decodeInto decodes the JSON object data into *dst, a struct of
// json-tagged fields with an Extra map that receives the members the
// fields do not represent (see decodeObject): the UnmarshalJSON of every
// lossless type of this package. *dst is replaced as a whole, as when a
// fresh value is decoded.
func decodeInto[T any](data []byte, dst *T, keep ...string) error {
	var v T
	extra, err := decodeObject(data, &v, keep...)
	if err != nil {
		return err
	}
	reflect.ValueOf(&v).Elem().FieldByName("Extra").Set(reflect.ValueOf(extra))
	*dst = v
	return nil
}

// encodeObject encodes the json-tagged fields of the struct v, then the
// members of its Extra map field that no field wrote, sorted by name: the
// MarshalJSON of every lossless type of this package. A field whose value
// is blank yields to an Extra member of the same name, so values
// decodeObject kept there come back as they were.
func encodeObject(v any) ([]byte, error) {
	rv := reflect.ValueOf(v)
	extra, _ := rv.FieldByName("Extra").Interface().(map[string]json.RawMessage)
	fields := jsonFields(rv.Type())
	var buf bytes.Buffer
	buf.WriteByte('{')
	first := true
	member := func(name string, val []byte) {
		if !first {
			buf.WriteByte(',')
		}
		first = false
		k, _ := json.Marshal(name)
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(val)
	}
	known := make(map[string]bool, len(fields))
	for _, f := range fields {
		known[f.name] = true
		fv := rv.Field(f.index)
		if raw, ok := extra[f.name]; ok && f.blank(fv) {
			if raw == nil {
				raw = jsonNull
			}
			member(f.name, raw)
			continue
		}
		if f.omitted(fv) {
			continue
		}
		b, err := json.Marshal(fv.Interface())
		if err != nil {
			return nil, err
		}
		member(f.name, b)
	}
	names := make([]string, 0, len(extra))
	for k := range extra {
		if !known[k] {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		raw := extra[k]
		if raw == nil {
			raw = jsonNull
		}
		member(k, raw)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
