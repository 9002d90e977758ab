package prompt

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/mustache"
)

// Bounds of what a tenant writes.
const (
	maxNameLen     = 255
	maxTemplateLen = 256 << 10
	maxDescLen     = 4 << 10
	maxModelLen    = 256
	maxFieldJSON   = 256 << 10 // parameters, tools, functions, tool_choice, metadata
)

// checkText checks text a tenant writes: at most max bytes of UTF-8,
// without control characters other than newlines and tabs when max is
// over maxNameLen.
func checkText(param, s string, max int) error {
	if len(s) > max {
		return control.Invalid(param, param+" must be at most "+itoa(max)+" bytes")
	}
	if !utf8.ValidString(s) {
		return control.Invalid(param, param+" must be valid UTF-8")
	}
	for _, c := range s {
		if unicode.IsControl(c) && (max <= maxNameLen || c != '\n' && c != '\t' && c != '\r') {
			return control.Invalid(param, param+" must not hold control characters")
		}
	}
	return nil
}

// checkTemplate checks a template a tenant writes: at most
// maxTemplateLen bytes, and well formed (partials are looked up when it
// is rendered).
func checkTemplate(s string) error {
	if len(s) > maxTemplateLen {
		return control.Invalid("string", "string must be at most "+itoa(maxTemplateLen)+" bytes")
	}
	if !utf8.ValidString(s) {
		return control.Invalid("string", "string must be valid UTF-8")
	}
	if _, err := mustache.Parse(s, nil); err != nil {
		return control.Invalid("string", "string is not a well-formed Mustache template: "+err.Error())
	}
	return nil
}

// checkJSON checks a JSON member a tenant writes: null (made absent) or
// a value of the kind want holds ('{' object, '[' array; "{[" either,
// "{\"" an object or a string), at most maxFieldJSON bytes.
func checkJSON(param string, raw *json.RawMessage, want string) error {
	t := bytes.TrimSpace(*raw)
	if len(t) == 0 || string(t) == "null" {
		*raw = nil
		return nil
	}
	if len(t) > maxFieldJSON {
		return control.Invalid(param, param+" must be at most "+itoa(maxFieldJSON)+" bytes of JSON")
	}
	if !strings.ContainsRune(want, rune(t[0])) {
		kinds := map[string]string{"{": "an object", "[": "an array", "{[": "an object or an array", "{\"": "an object or a string"}
		return control.Invalid(param, param+" must be "+kinds[want])
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, t); err != nil {
		return control.Invalid(param, param+" is not valid JSON")
	}
	*raw = compact.Bytes()
	return nil
}

func itoa(n int) string { return strconv.Itoa(n) }
