package messages

import (
	"strconv"

	"github.com/modelgateway/gateway/internal/wire"
)

// appendString appends s as a JSON string: see wire.AppendText.
func appendString(b []byte, s string) []byte { return wire.AppendText(b, s) }

// appendInt appends "name":v.
func appendInt(b []byte, name string, v int) []byte {
	b = append(b, '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return strconv.AppendInt(b, int64(v), 10)
}

// scan walks a JSON text once, checking that it nests no deeper than
// maxDepth, and returns the names of its top-level object's members in
// order. It does not validate the text: the decoder that follows does.
func scan(body []byte, maxDepth int) (members []string, deep bool) {
	depth := 0
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '{', '[':
			depth++
			if depth > maxDepth {
				return nil, true
			}
		case '}', ']':
			depth--
		case '"':
			j := i + 1
			for j < len(body) && body[j] != '"' {
				if body[j] == '\\' {
					j++
				}
				j++
			}
			if depth == 1 && j < len(body) {
				k := j + 1
				for k < len(body) && (body[k] == ' ' || body[k] == '\t' || body[k] == '\n' || body[k] == '\r') {
					k++
				}
				if k < len(body) && body[k] == ':' {
					members = append(members, string(body[i+1:j]))
				}
			}
			i = j
		}
	}
	return members, false
}
