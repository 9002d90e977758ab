package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"strings"
)

func jsonErrorText(data []byte, err error) string {
	switch e := err.(type) {
	case *json.UnmarshalTypeError:
		if e.Field == "" {
			return "must be an object"
		}
		field := e.Field // dotted, without the indexes of targets
		if p, ok := errorPath(data, e.Offset, ""); ok {
			field = p
		}
		return field + ": must be " + jsonTypeName(e.Type.String())
	default:
		msg := strings.TrimPrefix(err.Error(), "json: ")
		if name, ok := strings.CutPrefix(msg, "unknown field "); ok {
			if n, err := strconv.Unquote(name); err == nil {
				if p, ok := errorPath(data, -1, n); ok && p != "" {
					return p + ": unknown field " + quoteShort(n)
				}
			}
		}
		return msg
	}
}

// errorPath returns the JSON path, as configError writes it, of what a
// decode of data into Config stumbled on: the value that ends at offset
// (for a composite value, its opening bracket), or the object holding the
// first key named unknown that Config's schema does not let it have. It
// reports false when it finds neither.
func errorPath(data []byte, offset int64, unknown string) (string, bool) {
	f := pathFinder{dec: json.NewDecoder(bytes.NewReader(data)), offset: offset, unknown: unknown}
	p, found := f.value(reflect.TypeFor[Config](), "")
	return p, found && !f.ended
}

type pathFinder struct {
	dec     *json.Decoder
	offset  int64
	unknown string
	ended   bool // the input ended, or is not JSON, before a find
}

// value reads one value expected of type t (nil: anything goes) at path;
// it reports true, with the path, once it reaches what it looks for, or
// when the input ends.
func (f *pathFinder) value(t reflect.Type, path string) (string, bool) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := f.dec.Token()
	if err != nil {
		f.ended = true
		return "", true
	}
	if f.dec.InputOffset() == f.offset {
		return path, true
	}
	switch tok {
	case json.Delim('{'):
		for f.dec.More() {
			kt, err := f.dec.Token()
			if err != nil {
				f.ended = true
				return "", true
			}
			k, _ := kt.(string)
			var vt reflect.Type
			switch {
			case t == nil:
			case t.Kind() == reflect.Struct:
				var ok bool
				if vt, ok = structField(t, k); !ok && k == f.unknown {
					return path, true
				}
			case t.Kind() == reflect.Map:
				vt = t.Elem()
			}
			if p, done := f.value(vt, join(path, k)); done {
				return p, true
			}
		}
		f.dec.Token()
	case json.Delim('['):
		var et reflect.Type
		if t != nil && t.Kind() == reflect.Slice {
			et = t.Elem()
		}
		for i := 0; f.dec.More(); i++ {
			if p, done := f.value(et, index(path, i)); done {
				return p, true
			}
		}
		f.dec.Token()
	}
	return "", false
}

// structField returns the type of the field of struct t that encoding/json
// decodes key into.
func structField(t reflect.Type, key string) (reflect.Type, bool) {
	for _, sf := range reflect.VisibleFields(t) {
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if sf.Anonymous || !sf.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if strings.EqualFold(name, key) {
			return sf.Type, true
		}
	}
	return nil, false
}

func jsonTypeName(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case strings.HasPrefix(goType, "map["), strings.HasPrefix(goType, "gateway."), strings.HasPrefix(goType, "*gateway."):
		return "an object"
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "a boolean"
	case strings.HasPrefix(goType, "int"):
		return "an integer"
	case strings.HasPrefix(goType, "float"), strings.HasPrefix(goType, "*float"):
		return "a number"
	}
	return goType
}

func configError(path, msg string) *Error {
	if path != "" {
		msg = path + ": " + msg
	}
	return &Error{Status: http.StatusBadRequest, Type: TypeInvalidRequest, Code: CodeInvalidConfig, Message: "invalid config: " + msg}
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }
