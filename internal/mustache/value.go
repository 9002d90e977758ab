package mustache

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"unicode/utf8"
)

// lookup resolves a name split at its dots against the context stack: the
// first key in the innermost context that has it, the others in that value
// only. No keys is the implicit iterator, the innermost context.
func (r *renderer) lookup(keys []string) (any, bool) {
	if keys == nil {
		return r.stack[len(r.stack)-1], true
	}
	var v any
	found := false
	for i := len(r.stack) - 1; i >= 0 && !found; i-- {
		v, found = member(r.stack[i], keys[0])
	}
	for _, k := range keys[1:] {
		if !found {
			break
		}
		v, found = member(v, k)
	}
	return v, found
}

// member returns the value of key in v when v is a map with string keys
// that has it.
func member(v any, key string) (any, bool) {
	switch m := v.(type) {
	case map[string]any:
		x, ok := m[key]
		return x, ok
	case map[string]string:
		x, ok := m[key]
		return x, ok
	case nil, string, float64, bool, []any, json.Number:
		return nil, false
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Map || rv.Type().Key().Kind() != reflect.String {
		return nil, false
	}
	x := rv.MapIndex(reflect.ValueOf(key).Convert(rv.Type().Key()))
	if !x.IsValid() {
		return nil, false
	}
	return x.Interface(), true
}

// list is a value a section iterates over.
type list struct {
	a  []any
	rv reflect.Value // when a is nil
}

func (l list) len() int {
	if l.a != nil {
		return len(l.a)
	}
	return l.rv.Len()
}

func (l list) at(i int) any {
	if l.a != nil {
		return l.a[i]
	}
	return l.rv.Index(i).Interface()
}

// asList returns v as a list when it is a slice or an array.
func asList(v any) (list, bool) {
	switch x := v.(type) {
	case []any:
		return list{a: x}, true
	case nil, string, float64, bool, map[string]any, json.Number:
		return list{}, false
	}
	rv := reflect.ValueOf(v)
	if k := rv.Kind(); k == reflect.Slice || k == reflect.Array {
		return list{rv: rv}, true
	}
	return list{}, false
}

// truthy says whether a section renders for v: not for nil, false, "",
// zero or an empty list, as in JavaScript.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case float64:
		return x != 0 && !math.IsNaN(x)
	case json.Number:
		f, err := x.Float64()
		return err != nil || f != 0
	case []any:
		return len(x) > 0
	case map[string]any:
		return x != nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array, reflect.String:
		return rv.Len() > 0
	case reflect.Pointer, reflect.Interface, reflect.Map:
		return !rv.IsNil()
	case reflect.Bool:
		return rv.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return !rv.IsZero()
	}
	return true
}

// value writes v to the output, escaped by mode. Numbers, booleans and nil
// have nothing to escape.
func (r *renderer) value(v any, mode Escape) {
	switch x := v.(type) {
	case string:
		r.out = appendEscaped(r.out, x, mode)
	case json.Number:
		r.out = appendEscaped(r.out, string(x), mode)
	case nil, bool, float64, float32, int, int64, int32, uint, uint64:
		r.out = appendText(r.out, v)
	default:
		r.out = appendEscaped(r.out, string(appendText(nil, v)), mode)
	}
}

// appendText appends the text of a value that is not a string: numbers as
// JSON writes them, nil as nothing, objects and arrays as their JSON.
func appendText(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return b
	case bool:
		return strconv.AppendBool(b, x)
	case float64:
		return appendFloat(b, x, 64)
	case float32:
		return appendFloat(b, float64(x), 32)
	case json.Number:
		return append(b, x...)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case int32:
		return strconv.AppendInt(b, int64(x), 10)
	case uint:
		return strconv.AppendUint(b, uint64(x), 10)
	case uint64:
		return strconv.AppendUint(b, x, 10)
	case string:
		return append(b, x...)
	}
	return appendJSONValue(b, v)
}

// appendJSONValue appends v's JSON encoding, with <, > and & as they are
// (a prompt is not HTML), or nothing if v has none.
func appendJSONValue(b []byte, v any) []byte {
	buf := bytes.NewBuffer(b)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return b
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// appendFloat formats f as encoding/json does: the shortest decimal form,
// with an exponent only for very large or very small magnitudes.
func appendFloat(b []byte, f float64, bits int) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return strconv.AppendFloat(b, f, 'g', -1, bits)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21)) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// Clean up e-09 to e-9.
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendEscaped appends s escaped by mode.
func appendEscaped(b []byte, s string, mode Escape) []byte {
	switch mode {
	case EscapeHTML:
		return appendHTML(b, s)
	case EscapeJSON:
		return appendJSON(b, s)
	}
	return append(b, s...)
}

func appendHTML(b []byte, s string) []byte {
	last := 0
	for i := 0; i < len(s); i++ {
		var esc string
		switch s[i] {
		case '&':
			esc = "&amp;"
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '"':
			esc = "&quot;"
		case '\'':
			esc = "&#39;"
		default:
			continue
		}
		b = append(b, s[last:i]...)
		b = append(b, esc...)
		last = i + 1
	}
	return append(b, s[last:]...)
}

// appendJSON appends s escaped as the content of a JSON string: quotes,
// backslashes and control characters are escaped, and invalid UTF-8
// becomes U+FFFD, so the result is always valid between two quotes.
func appendJSON(b []byte, s string) []byte {
	last := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			b = append(b, s[last:i]...)
			b = append(b, `\ufffd`...)
			i++
			last = i
			continue
		}
		b = append(b, s[last:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		last = i
	}
	return append(b, s[last:]...)
}
