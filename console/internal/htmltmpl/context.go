// Parts of this file are adapted from the Go standard library's
// html/template (transition.go, context.go, attr.go), Copyright 2011 The Go
// Authors, used under its BSD-style licence
// (the LICENSE file beside this one).

package htmltmpl

import (
	"bytes"
	"errors"
	"html"
	"strings"
)

// context is where in an HTML document a piece of a template's output
// lands: the state an HTML parser is in when it reaches it. It tracks the
// same facts as html/template's, for the states this package supports;
// the states it does not support (script, style, event handler and style
// attributes, srcset) collapse to stateRaw, where no action may appear.
type context struct {
	state   state
	delim   delim
	urlPart urlPart
	attr    attr
	element element
}

// state is a high-level HTML parser state.
type state uint8

const (
	stateText           state = iota // character data outside tags and special elements
	stateTag                         // before an attribute or the end of a tag
	stateAttrName                    // inside an attribute name
	stateAfterName                   // after an attribute name, before any =
	stateBeforeValue                 // after =, before the value
	stateHTMLCmt                     // inside <!-- a comment -->
	stateRCDATA                      // inside <title> or <textarea>
	stateAttr                        // inside an attribute value that is text
	stateURL                         // inside an attribute value that is a URL
	stateMetaContent                 // inside a <meta> content attribute
	stateMetaContentURL              // after url= in a <meta> content attribute
	stateRaw                         // script or style, in an element or an attribute
)

// delim is how an attribute value ends.
type delim uint8

const (
	delimNone delim = iota
	delimDoubleQuote
	delimSingleQuote
	delimSpaceOrTagEnd
)

// urlPart is the part of a URL an attribute value has reached.
type urlPart uint8

const (
	urlPartNone        urlPart = iota // nothing of the URL yet
	urlPartPreQuery                   // in the scheme, authority or path
	urlPartQueryOrFrag                // after ? or #
	urlPartUnknown                    // branches disagree
)

// element is the kind of element a tag or its content belongs to.
type element uint8

const (
	elementNone element = iota
	elementScript
	elementStyle
	elementTextarea
	elementTitle
	elementMeta
)

// attr is the kind of attribute a value belongs to.
type attr uint8

const (
	attrNone attr = iota
	attrScript
	attrStyle
	attrURL
	attrSrcset
	attrMetaContent
)

// errBadHTML marks text that html/template refuses as malformed.
var errBadHTML = errors.New("malformed HTML")

// mangle returns the name of template name's variant that starts in c.
func (c context) mangle(name string) string {
	if c == (context{}) {
		return name
	}
	return name + "$" + string([]byte{'0' + byte(c.state), '0' + byte(c.delim), '0' + byte(c.urlPart), '0' + byte(c.attr), '0' + byte(c.element)})
}

// nudge returns the context after the empty transitions an action takes:
// an action right after = starts an unquoted value, one in a tag starts an
// attribute name.
func nudge(c context) context {
	switch c.state {
	case stateTag:
		c.state = stateAttrName
	case stateBeforeValue:
		c.state, c.delim, c.attr = attrStartStates[c.attr], delimSpaceOrTagEnd, attrNone
	case stateAfterName:
		c.state, c.attr = stateAttrName, attrNone
	}
	return c
}

// join returns the context after a branch whose arms end in a and b, and
// false if they cannot be reconciled.
func join(a, b context) (context, bool) {
	if a == b {
		return a, true
	}
	c := a
	c.urlPart = b.urlPart
	if c == b {
		c.urlPart = urlPartUnknown
		return c, true
	}
	if c, d := nudge(a), nudge(b); c != a || d != b {
		if e, ok := join(c, d); ok {
			return e, true
		}
	}
	return context{}, false
}

// transition consumes some of s in context c and returns the context
// after it and how many bytes it consumed.
func transition(c context, s []byte) (context, int, error) {
	switch c.state {
	case stateText:
		c, n := tText(c, s)
		return c, n, nil
	case stateTag:
		return tTag(c, s)
	case stateAttrName:
		i, err := eatAttrName(s, 0)
		if err != nil {
			return c, 0, err
		} else if i != len(s) {
			c.state = stateAfterName
		}
		return c, i, nil
	case stateAfterName:
		i := eatWhiteSpace(s, 0)
		if i == len(s) {
			return c, len(s), nil
		} else if s[i] != '=' {
			// A tag end or a valueless attribute.
			c.state = stateTag
			return c, i, nil
		}
		c.state = stateBeforeValue
		return c, i + 1, nil
	case stateBeforeValue:
		i := eatWhiteSpace(s, 0)
		if i == len(s) {
			return c, len(s), nil
		}
		d := delimSpaceOrTagEnd
		switch s[i] {
		case '\'':
			d, i = delimSingleQuote, i+1
		case '"':
			d, i = delimDoubleQuote, i+1
		}
		c.state, c.delim = attrStartStates[c.attr], d
		return c, i, nil
	case stateHTMLCmt:
		if i := bytes.Index(s, commentEnd); i != -1 {
			return context{}, i + 3, nil
		}
		return c, len(s), nil
	case stateRCDATA:
		c, n := tSpecialTagEnd(c, s)
		return c, n, nil
	case stateURL:
		if bytes.ContainsAny(s, "#?") {
			c.urlPart = urlPartQueryOrFrag
		} else if len(s) != eatWhiteSpace(s, 0) && c.urlPart == urlPartNone {
			c.urlPart = urlPartPreQuery
		}
		return c, len(s), nil
	case stateMetaContent:
		for i := range len(s) {
			if i+3 <= len(s)-1 && bytes.EqualFold(s[i:i+3], []byte("url")) {
				if j := eatWhiteSpace(s, i+3); j < len(s) && s[j] == '=' {
					c.state = stateMetaContentURL
					return c, j + 1, nil
				}
			}
		}
		return c, len(s), nil
	case stateMetaContentURL:
		if i := bytes.IndexByte(s, ';'); i >= 0 {
			c.state = stateMetaContent
			return c, i + 1, nil
		}
		return c, len(s), nil
	case stateRaw:
		if c.delim == delimNone && eatWhiteSpace(s, 0) != len(s) {
			// Finding where a script or a style ends means lexing
			// JavaScript or CSS, which this package does not do.
			return c, 0, errors.New("text inside <script> or <style> is not supported")
		}
		return c, len(s), nil
	}
	// stateAttr: the value runs to its delimiter, found by the caller.
	return c, len(s), nil
}

// contextAfterText consumes some of s in context c, minding attribute
// delimiters and special end tags, and returns the context after it and
// how many bytes it consumed.
func contextAfterText(c context, s []byte) (context, int, error) {
	if c.delim == delimNone {
		c1, i := tSpecialTagEnd(c, s)
		if i == 0 {
			// A special end tag (</title>) with everything before it
			// consumed.
			return c1, 0, nil
		}
		return transition(c, s[:i])
	}
	// Inside an attribute value.
	i := bytes.IndexAny(s, delimEnds[c.delim])
	if i == -1 {
		i = len(s)
	}
	if c.delim == delimSpaceOrTagEnd {
		// Parsers differ on these in unquoted values; html/template
		// refuses them.
		if j := bytes.IndexAny(s[:i], "\"'<=`"); j >= 0 {
			return c, 0, errBadHTML
		}
	}
	if i == len(s) {
		// The value goes on: decode it, so that the URL rules see
		// what a browser will.
		for u := []byte(html.UnescapeString(string(s))); len(u) != 0; {
			c1, i1, err := transition(c, u)
			if err != nil {
				return c, 0, err
			}
			c, u = c1, u[i1:]
		}
		return c, len(s), nil
	}
	if c.delim != delimSpaceOrTagEnd {
		i++ // the closing quote
	}
	// Leaving an attribute keeps only the element.
	return context{state: stateTag, element: c.element}, i, nil
}

// delimEnds are the bytes that end an attribute value of each delimiter.
var delimEnds = [...]string{
	delimDoubleQuote:   `"`,
	delimSingleQuote:   "'",
	delimSpaceOrTagEnd: " \t\n\f\r>",
}

var (
	commentStart = []byte("<!--")
	commentEnd   = []byte("-->")
)

// tText is the transition function of stateText.
func tText(c context, s []byte) (context, int) {
	k := 0
	for {
		i := k + bytes.IndexByte(s[k:], '<')
		if i < k || i+1 == len(s) {
			return c, len(s)
		} else if i+4 <= len(s) && bytes.Equal(commentStart, s[i:i+4]) {
			return context{state: stateHTMLCmt}, i + 4
		}
		i++
		end := false
		if s[i] == '/' {
			if i+1 == len(s) {
				return c, len(s)
			}
			end, i = true, i+1
		}
		j, e := eatTagName(s, i)
		if j != i {
			if end {
				e = elementNone
			}
			return context{state: stateTag, element: e}, j
		}
		k = j
	}
}

// elementContentType is the state of each element's content.
var elementContentType = [...]state{
	elementNone:     stateText,
	elementScript:   stateRaw,
	elementStyle:    stateRaw,
	elementTextarea: stateRCDATA,
	elementTitle:    stateRCDATA,
	elementMeta:     stateText,
}

// attrStartStates is the state at the start of each kind of attribute's
// value.
var attrStartStates = [...]state{
	attrNone:        stateAttr,
	attrScript:      stateRaw,
	attrStyle:       stateRaw,
	attrURL:         stateURL,
	attrSrcset:      stateRaw,
	attrMetaContent: stateMetaContent,
}

// tTag is the transition function of stateTag.
func tTag(c context, s []byte) (context, int, error) {
	i := eatWhiteSpace(s, 0)
	if i == len(s) {
		return c, len(s), nil
	}
	if s[i] == '>' {
		// <meta> has no end tag.
		if c.element == elementMeta {
			return context{state: stateText}, i + 1, nil
		}
		return context{state: elementContentType[c.element], element: c.element}, i + 1, nil
	}
	j, err := eatAttrName(s, i)
	if err != nil {
		return c, 0, err
	}
	if i == j {
		return c, 0, errBadHTML
	}
	a := attrNone
	name := strings.ToLower(string(s[i:j]))
	if c.element == elementMeta && name == "content" {
		a = attrMetaContent
	} else {
		switch attrType(name) {
		case contentURL:
			a = attrURL
		case contentCSS:
			a = attrStyle
		case contentJS:
			a = attrScript
		case contentSrcset:
			a = attrSrcset
		}
	}
	st := stateAfterName
	if j == len(s) {
		st = stateAttrName
	}
	return context{state: st, element: c.element, attr: a}, j, nil
}

// specialTagEndMarkers are the names whose end tag ends each special
// element's content.
var specialTagEndMarkers = [...][]byte{
	elementScript:   []byte("script"),
	elementStyle:    []byte("style"),
	elementTextarea: []byte("textarea"),
	elementTitle:    []byte("title"),
	elementMeta:     []byte(""),
}

var (
	specialTagEndPrefix = []byte("</")
	tagEndSeparators    = []byte("> \t\n\f/")
)

// tSpecialTagEnd finds the end tag of a special element: it returns the
// text context and the end tag's index, or c and len(s).
func tSpecialTagEnd(c context, s []byte) (context, int) {
	if c.element != elementNone {
		if i := indexTagEnd(s, specialTagEndMarkers[c.element]); i != -1 {
			return context{}, i
		}
	}
	return c, len(s)
}

// indexTagEnd returns the index of the end tag of tag in s, case
// insensitively, or -1.
func indexTagEnd(s []byte, tag []byte) int {
	res := 0
	plen := len(specialTagEndPrefix)
	for len(s) > 0 {
		i := bytes.Index(s, specialTagEndPrefix)
		if i == -1 {
			return i
		}
		s = s[i+plen:]
		if len(tag) <= len(s) && bytes.EqualFold(tag, s[:len(tag)]) {
			s = s[len(tag):]
			if len(s) > 0 && bytes.IndexByte(tagEndSeparators, s[0]) != -1 {
				return res + i
			}
			res += len(tag)
		}
		res += i + plen
	}
	return -1
}

// eatAttrName returns the end of the attribute name that starts at i, or
// an error for a quote or < in it.
func eatAttrName(s []byte, i int) (int, error) {
	for j := i; j < len(s); j++ {
		switch s[j] {
		case ' ', '\t', '\n', '\f', '\r', '=', '>':
			return j, nil
		case '\'', '"', '<':
			return -1, errBadHTML
		}
	}
	return len(s), nil
}

// elementNames are the elements that matter to the context.
var elementNames = map[string]element{
	"script":   elementScript,
	"style":    elementStyle,
	"textarea": elementTextarea,
	"title":    elementTitle,
	"meta":     elementMeta,
}

func asciiAlpha(c byte) bool    { return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' }
func asciiAlphaNum(c byte) bool { return asciiAlpha(c) || '0' <= c && c <= '9' }

// eatTagName returns the end of the tag name that starts at i, and its
// element.
func eatTagName(s []byte, i int) (int, element) {
	if i == len(s) || !asciiAlpha(s[i]) {
		return i, elementNone
	}
	j := i + 1
	for j < len(s) {
		x := s[j]
		if asciiAlphaNum(x) {
			j++
			continue
		}
		// "x-y" and "x:y", not "x-", "-y" or "x--y".
		if (x == ':' || x == '-') && j+1 < len(s) && asciiAlphaNum(s[j+1]) {
			j += 2
			continue
		}
		break
	}
	return j, elementNames[strings.ToLower(string(s[i:j]))]
}

// eatWhiteSpace returns the index of the first byte at or after i that is
// not HTML white space.
func eatWhiteSpace(s []byte, i int) int {
	for j := i; j < len(s); j++ {
		switch s[j] {
		case ' ', '\t', '\n', '\f', '\r':
		default:
			return j
		}
	}
	return len(s)
}

// content is what an attribute's value holds.
type content uint8

const (
	contentPlain content = iota
	contentURL
	contentCSS
	contentJS
	contentSrcset
)

// attrTypes are the attributes whose value is not plain text. An attribute
// html/template calls unsafe is escaped as plain text there, so it is
// plain here too.
var attrTypes = map[string]content{
	"action":     contentURL,
	"archive":    contentURL,
	"background": contentURL,
	"cite":       contentURL,
	"classid":    contentURL,
	"codebase":   contentURL,
	"data":       contentURL,
	"formaction": contentURL,
	"href":       contentURL,
	"icon":       contentURL,
	"longdesc":   contentURL,
	"manifest":   contentURL,
	"poster":     contentURL,
	"profile":    contentURL,
	"src":        contentURL,
	"srcset":     contentSrcset,
	"style":      contentCSS,
	"usemap":     contentURL,
	"xmlns":      contentURL,
}

// plainNames are attributes that would otherwise match the heuristics of
// attrType below.
var plainNames = map[string]bool{
	"accept": true, "accept-charset": true, "alt": true, "async": true, "autocomplete": true, "autofocus": true,
	"autoplay": true, "border": true, "checked": true, "challenge": true, "charset": true, "class": true,
	"cols": true, "colspan": true, "content": true, "contenteditable": true, "contextmenu": true,
	"controls": true, "coords": true, "crossorigin": true, "datetime": true, "default": true, "defer": true,
	"dir": true, "dirname": true, "disabled": true, "draggable": true, "dropzone": true, "enctype": true,
	"for": true, "form": true, "formenctype": true, "formmethod": true, "formnovalidate": true,
	"formtarget": true, "headers": true, "height": true, "hidden": true, "high": true, "hreflang": true,
	"http-equiv": true, "id": true, "ismap": true, "keytype": true, "kind": true, "label": true, "lang": true,
	"language": true, "list": true, "loop": true, "low": true, "max": true, "maxlength": true, "media": true,
	"mediagroup": true, "method": true, "min": true, "multiple": true, "name": true, "novalidate": true,
	"open": true, "optimum": true, "pattern": true, "placeholder": true, "preload": true, "pubdate": true,
	"radiogroup": true, "readonly": true, "rel": true, "required": true, "reversed": true, "rows": true,
	"rowspan": true, "sandbox": true, "spellcheck": true, "scope": true, "scoped": true, "seamless": true,
	"selected": true, "shape": true, "size": true, "sizes": true, "span": true, "srclang": true,
	"start": true, "step": true, "tabindex": true, "target": true, "title": true, "type": true,
	"value": true, "width": true, "wrap": true,
	// srcdoc holds HTML; html/template escapes a value there as text.
	"srcdoc": true,
}

// attrType returns what the value of the lower-case attribute name holds,
// by html/template's rules: known names first, then on* is script and a
// name holding src, uri or url is a URL.
func attrType(name string) content {
	if strings.HasPrefix(name, "data-") {
		name = name[5:]
	} else if prefix, short, ok := strings.Cut(name, ":"); ok {
		if prefix == "xmlns" {
			return contentURL
		}
		name = short // svg:href and xlink:href are href
	}
	if t, ok := attrTypes[name]; ok {
		return t
	}
	if plainNames[name] {
		return contentPlain
	}
	if strings.HasPrefix(name, "on") {
		return contentJS
	}
	if strings.Contains(name, "src") || strings.Contains(name, "uri") || strings.Contains(name, "url") {
		return contentURL
	}
	return contentPlain
}
