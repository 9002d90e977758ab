package gatewaytest

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// pickTool returns the index in names of the tool an answer calls, or -1.
// mode is "auto", "none", "required" or "tool" (forced names the tool). In
// "auto" mode the answer calls the first tool whose name ask contains as a
// whole word; "required" falls back to the first tool.
func pickTool(names []string, ask, mode, forced string) int {
	switch mode {
	case "none":
		return -1
	case "tool", "function":
		for i, n := range names {
			if n == forced {
				return i
			}
		}
		return -1
	}
	for i, n := range names {
		if containsWord(ask, n) {
			return i
		}
	}
	if mode == "required" && len(names) > 0 {
		return 0
	}
	return -1
}

func wordRune(r rune) bool { return r == '_' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// containsWord reports whether text contains word with no letter, digit,
// '_' or '-' right before or after it.
func containsWord(text, word string) bool {
	if word == "" {
		return false
	}
	for off := 0; ; {
		i := strings.Index(text[off:], word)
		if i < 0 {
			return false
		}
		i += off
		before, _ := utf8.DecodeLastRuneInString(text[:i])
		after, _ := utf8.DecodeRuneInString(text[i+len(word):])
		if (i == 0 || !wordRune(before)) && (i+len(word) == len(text) || !wordRune(after)) {
			return true
		}
		off = i + 1
	}
}

// toolArguments returns the JSON object the server calls a tool with: each
// property the JSON schema lists as required, in order, with a value of its
// declared type: the first enum value if there is an enum, else the property
// name for a string, 1 for a number or integer, true for a boolean, [] for
// an array, {} for an object and null otherwise.
func toolArguments(schema json.RawMessage) string {
	var sc struct {
		Properties map[string]struct {
			Type json.RawMessage   `json:"type"`
			Enum []json.RawMessage `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	json.Unmarshal(schema, &sc) // a schema that does not decode has no required properties
	var b strings.Builder
	b.WriteByte('{')
	seen := map[string]bool{}
	for _, name := range sc.Required {
		if seen[name] {
			continue
		}
		seen[name] = true
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.Write(mustMarshal(name))
		b.WriteByte(':')
		prop := sc.Properties[name]
		if len(prop.Enum) > 0 && json.Valid(prop.Enum[0]) {
			b.Write(prop.Enum[0])
			continue
		}
		var typ string
		if json.Unmarshal(prop.Type, &typ) != nil {
			var types []string
			json.Unmarshal(prop.Type, &types)
			for _, t := range types {
				if t != "null" {
					typ = t
					break
				}
			}
		}
		switch typ {
		case "string":
			b.Write(mustMarshal(name))
		case "number", "integer":
			b.WriteByte('1')
		case "boolean":
			b.WriteString("true")
		case "array":
			b.WriteString("[]")
		case "object":
			b.WriteString("{}")
		default:
			b.WriteString(nullJSON)
		}
	}
	b.WriteByte('}')
	return b.String()
}

// argumentChunks cuts tool arguments after every comma; the streamed
// argument deltas are these chunks.
func argumentChunks(args string) []string {
	var out []string
	for args != "" {
		i := strings.IndexByte(args, ',')
		if i < 0 {
			out = append(out, args)
			break
		}
		out = append(out, args[:i+1])
		args = args[i+1:]
	}
	return out
}
