// Parts of this file are adapted from the Go standard library's
// html/template (html.go, url.go, content.go), Copyright 2011 The Go
// Authors, used under its BSD-style licence
// (the LICENSE file beside this one).

package htmltmpl

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// escaper is how an action's value is written in its context.
type escaper uint8

const (
	escNone      escaper = iota // a declaration: nothing is written
	escHTML                     // text, RCDATA and quoted attribute values
	escURLStart                 // a quoted URL attribute's first action
	escURLPath                  // a quoted URL attribute before ? or #
	escURLQuery                 // a quoted URL attribute after ? or #
	escMetaURL                  // after url= in a quoted <meta> content attribute
	escMetaPlain                // elsewhere in a quoted <meta> content attribute
)

// filterFailsafe replaces a URL whose scheme is not allowed, as
// html/template's does.
const filterFailsafe = "#ZgotmplZ"

// appendEscaped appends s to dst as escaper e writes it.
func appendEscaped(dst []byte, e escaper, s string) []byte {
	switch e {
	case escURLStart:
		if !isSafeURL(s) {
			s = filterFailsafe
		}
		return appendURL(dst, s, true)
	case escURLPath:
		return appendURL(dst, s, true)
	case escURLQuery:
		return appendURL(dst, s, false)
	case escMetaURL:
		if !isSafeURL(s) {
			s = filterFailsafe
		}
	}
	return appendHTML(dst, s)
}

// htmlReplacements are the bytes html/template escapes in text and in
// quoted attribute values.
var htmlReplacements = [...]string{
	0:    "\uFFFD",
	'"':  "&#34;",
	'&':  "&amp;",
	'\'': "&#39;",
	'+':  "&#43;",
	'<':  "&lt;",
	'>':  "&gt;",
}

// appendHTML appends s to dst HTML-escaped.
func appendHTML(dst []byte, s string) []byte {
	written := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if int(c) < len(htmlReplacements) && htmlReplacements[c] != "" {
			dst = append(dst, s[written:i]...)
			dst = append(dst, htmlReplacements[c]...)
			written = i + 1
		}
	}
	return append(dst, s[written:]...)
}

// isSafeURL reports whether s is relative or has the scheme http, https
// or mailto.
func isSafeURL(s string) bool {
	if protocol, _, ok := strings.Cut(s, ":"); ok && !strings.Contains(protocol, "/") {
		if !strings.EqualFold(protocol, "http") && !strings.EqualFold(protocol, "https") && !strings.EqualFold(protocol, "mailto") {
			return false
		}
	}
	return true
}

// appendURL appends s to dst percent-encoded, keeping RFC 3986's reserved
// characters and valid escapes when norm is set (a path), encoding them
// otherwise (a query value), and then HTML-escaped for the attribute.
func appendURL(dst []byte, s string, norm bool) []byte {
	const hex = "0123456789abcdef"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '!', '#', '$', '&', '*', '+', ',', '/', ':', ';', '=', '?', '@', '[', ']':
			if norm {
				dst = appendHTML(dst, s[i:i+1])
				continue
			}
		case '-', '.', '_', '~':
			dst = append(dst, c)
			continue
		case '%':
			if norm && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
				dst = append(dst, c)
				continue
			}
		default:
			if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
				dst = append(dst, c)
				continue
			}
		}
		dst = append(dst, '%', hex[c>>4], hex[c&15])
	}
	return dst
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// stringify returns the text html/template writes for the value of an
// action: nothing for nil or a missing value, a string as it is, and
// otherwise fmt.Sprint's text of the value with its pointers followed to
// the first Stringer or error.
func stringify(v reflect.Value) string {
	for v.Kind() == reflect.Interface {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	if !v.IsValid() {
		return ""
	}
	// The common kinds of unnamed type have no methods: no Stringer to
	// honour.
	switch v.Type() {
	case stringType:
		return v.String()
	case intType, int64Type:
		return strconv.FormatInt(v.Int(), 10)
	case boolType:
		return strconv.FormatBool(v.Bool())
	}
	a := v.Interface()
	if v.Kind() == reflect.Pointer {
		// A pointer to a string is its string.
		d := v
		for d.Kind() == reflect.Pointer && !d.IsNil() {
			d = d.Elem()
		}
		if s, ok := d.Interface().(string); ok {
			return s
		}
	}
	for {
		switch a.(type) {
		case fmt.Stringer, error:
			return fmt.Sprint(a)
		}
		p := reflect.ValueOf(a)
		if p.Kind() != reflect.Pointer || p.IsNil() {
			return fmt.Sprint(a)
		}
		a = p.Elem().Interface()
	}
}

var (
	stringType = reflect.TypeFor[string]()
	intType    = reflect.TypeFor[int]()
	int64Type  = reflect.TypeFor[int64]()
	boolType   = reflect.TypeFor[bool]()
)
