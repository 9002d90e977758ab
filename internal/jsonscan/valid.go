package jsonscan

// maxDepth is how deeply arrays and objects may nest, as encoding/json
// allows.
const maxDepth = 10000

// Valid reports whether b is one valid JSON value with optional white
// space around it, exactly as json.Valid does (the bytes of strings are
// not checked as UTF-8, and nesting deeper than 10000 is refused), but
// several times faster: strings, most of a rendered prompt, are scanned
// in a tight loop rather than a byte at a time through a state machine.
func Valid(b []byte) bool {
	i, ok := value(b, SkipSpace(b, 0), 0)
	return ok && SkipSpace(b, i) == len(b)
}

// plain holds the bytes a string holds as they are: all but '"', '\\'
// and the control characters.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// value returns the index after the value at b[i], and whether it is
// valid.
func value(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return str(b, i)
	case c == '{' || c == '[':
		return composite(b, i, depth)
	case c == '-' || c >= '0' && c <= '9':
		return number(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	}
	return i, false
}

// composite checks the object or array at b[i].
func composite(b []byte, i, depth int) (int, bool) {
	if depth++; depth > maxDepth {
		return i, false
	}
	end := byte(']')
	if b[i] == '{' {
		end = '}'
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == end {
		return i + 1, true
	}
	for {
		var ok bool
		if end == '}' {
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			if i, ok = str(b, i); !ok {
				return i, false
			}
			if i = SkipSpace(b, i); i >= len(b) || b[i] != ':' {
				return i, false
			}
			i = SkipSpace(b, i+1)
		}
		if i, ok = value(b, i, depth); !ok {
			return i, false
		}
		if i = SkipSpace(b, i); i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = SkipSpace(b, i+1)
		case end:
			return i + 1, true
		default:
			return i, false
		}
	}
}

// str checks the string at b[i].
func str(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i >= len(b) {
			break
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		}
		// A backslash: one of the escapes JSON has.
		if i++; i >= len(b) {
			return i, false
		}
		switch b[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			if i+4 >= len(b) {
				return i, false
			}
			for _, h := range b[i+1 : i+5] {
				if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
					return i, false
				}
			}
			i += 4
		default:
			return i, false
		}
	}
	return i, false
}

// number checks the number at b[i].
func number(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	digits := func() bool {
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > start
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return i, false
		}
	}
	return i, true
}

// literal checks that lit is at b[i].
func literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}
