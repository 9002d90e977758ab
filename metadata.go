package gateway

import "encoding/json"

// parseMetadata validates x-gateway-metadata: a JSON object of string
// values, at most 64 keys and 8 KiB.
func parseMetadata(v string) (map[string]string, error) {
	if v == "" {
		return nil, nil
	}
	if len(v) > maxMetadataBytes {
		return nil, invalidHeader(HeaderMetadata, "must be at most 8 KiB")
	}
	if md, ok := parsePlainMetadata(v); ok {
		if len(md) > maxMetadataKeys {
			return nil, invalidHeader(HeaderMetadata, "must have at most 64 keys")
		}
		if _, ok := md[""]; ok {
			return nil, invalidHeader(HeaderMetadata, "must be a JSON object of string values")
		}
		return md, nil
	}
	var raw map[string]*string
	if err := json.Unmarshal([]byte(v), &raw); err != nil || raw == nil {
		return nil, invalidHeader(HeaderMetadata, "must be a JSON object of string values")
	}
	if len(raw) > maxMetadataKeys {
		return nil, invalidHeader(HeaderMetadata, "must have at most 64 keys")
	}
	md := make(map[string]string, len(raw))
	for k, s := range raw {
		if k == "" || s == nil {
			return nil, invalidHeader(HeaderMetadata, "must be a JSON object of string values")
		}
		md[k] = *s
	}
	return md, nil
}

// parsePlainMetadata parses the common form of x-gateway-metadata, an
// object whose members are strings of printable ASCII without escapes,
// without encoding/json: the keys and values are substrings of v, so the
// map is the only allocation. ok is false for any other input, which
// encoding/json then decides; FuzzParsePlainMetadata holds the two to the
// same answer.
func parsePlainMetadata(v string) (md map[string]string, ok bool) {
	i := 0
	space := func() {
		for i < len(v) && (v[i] == ' ' || v[i] == '\t' || v[i] == '\n' || v[i] == '\r') {
			i++
		}
	}
	str := func() (string, bool) {
		if i >= len(v) || v[i] != '"' {
			return "", false
		}
		for j := i + 1; j < len(v); j++ {
			switch c := v[j]; {
			case c == '"':
				s := v[i+1 : j]
				i = j + 1
				return s, true
			case c < 0x20 || c > 0x7e || c == '\\':
				return "", false
			}
		}
		return "", false
	}
	space()
	if i >= len(v) || v[i] != '{' {
		return nil, false
	}
	i++
	md = make(map[string]string, 4)
	space()
	if i < len(v) && v[i] == '}' {
		i++
		space()
		return md, i == len(v)
	}
	for {
		space()
		k, ok := str()
		if !ok {
			return nil, false
		}
		space()
		if i >= len(v) || v[i] != ':' {
			return nil, false
		}
		i++
		space()
		s, ok := str()
		if !ok {
			return nil, false
		}
		md[k] = s
		space()
		if i >= len(v) {
			return nil, false
		}
		switch v[i] {
		case ',':
			i++
		case '}':
			i++
			space()
			return md, i == len(v)
		default:
			return nil, false
		}
	}
}
