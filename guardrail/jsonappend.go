package guardrail

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// appendString appends s to b as a JSON string, exactly as encoding/json
// writes it: with html, as json.Marshal does (<, > and & escaped), else
// as an Encoder with SetEscapeHTML(false) does. Text that needs no
// escape, most of a prompt, is copied at once; the rest is left to
// encoding/json.
func appendString(b []byte, s string, html bool) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf || html && (c == '<' || c == '>' || c == '&') {
			return appendEscaped(b, s, html)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendEscaped is appendString for a string that needs encoding/json.
func appendEscaped(b []byte, s string, html bool) []byte {
	if html {
		q, _ := json.Marshal(s)
		return append(b, q...)
	}
	e := escaper{b: b}
	enc := json.NewEncoder(&e)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return e.b[:len(e.b)-1] // Encode's newline
}

// escaper is an io.Writer appending to b.
type escaper struct{ b []byte }

func (e *escaper) Write(p []byte) (int, error) {
	e.b = append(e.b, p...)
	return len(p), nil
}

// appendCheckResult appends r as CheckResult.MarshalJSON encodes it.
func appendCheckResult(b []byte, r *CheckResult) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, r.ID, true)
	b = append(b, `,"verdict":`...)
	b = strconv.AppendBool(b, r.Verdict)
	b = append(b, `,"explanation":`...)
	b = appendString(b, r.Explanation, true)
	if r.Error != "" {
		b = append(b, `,"error":`...)
		b = appendString(b, r.Error, true)
	}
	b = append(b, `,"execution_time":`...)
	b = strconv.AppendInt(b, r.Duration.Milliseconds(), 10)
	b = append(b, `,"transformed":`...)
	b = strconv.AppendBool(b, r.Transformed)
	return append(b, '}')
}

// appendResult appends r as Result.MarshalJSON encodes it.
func appendResult(b []byte, r *Result) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, r.ID, true)
	b = append(b, `,"verdict":`...)
	b = strconv.AppendBool(b, r.Verdict)
	b = append(b, `,"deny":`...)
	b = strconv.AppendBool(b, r.Deny)
	b = append(b, `,"checks":`...)
	if r.Checks == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range r.Checks {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCheckResult(b, &r.Checks[i])
		}
		b = append(b, ']')
	}
	b = append(b, `,"execution_time":`...)
	b = strconv.AppendInt(b, r.Duration.Milliseconds(), 10)
	return append(b, '}')
}
