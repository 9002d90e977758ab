// Package jsonscan walks JSON documents that are already known to be
// valid (json.Valid, or Valid, its faster equal) without decoding them:
// the data plane reads a few members of request and answer bodies this
// way, allocation-free.
package jsonscan

import (
	"bytes"
	"strconv"
)

// SkipSpace returns the index of the first byte of b at or after i that
// is not JSON white space.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// SkipString returns the index after the string that starts at b[i].
// It looks for the closing quote with bytes.IndexByte, which is many
// times faster than a loop over the bytes on the long strings of
// prompts, and counts the backslashes before it to tell an escaped
// quote.
func SkipString(b []byte, i int) int {
	from := i + 1
	for from < len(b) {
		q := bytes.IndexByte(b[from:], '"')
		if q < 0 {
			break
		}
		q += from
		k := q
		for k > from && b[k-1] == '\\' {
			k--
		}
		if (q-k)%2 == 0 {
			return q + 1
		}
		from = q + 1
	}
	// No closing quote: where the loop over the bytes ends.
	return skipStringSlow(b, i)
}

// skipStringSlow is SkipString a byte at a time.
func skipStringSlow(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// SkipValue returns the index after the value that starts at b[i].
func SkipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return SkipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = SkipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}

// EachMember calls fn with the name (between its quotes, escapes
// kept) and the value of each member of the object b, in order, while fn
// returns true. It reports whether fn always did.
func EachMember(b []byte, fn func(name, v []byte) bool) bool {
	i := SkipSpace(b, 0) + 1 // past '{'
	for {
		i = SkipSpace(b, i)
		if b[i] == ',' {
			i = SkipSpace(b, i+1)
		}
		if b[i] == '}' {
			return true
		}
		end := SkipString(b, i)
		name := b[i+1 : end-1]
		i = SkipSpace(b, end) // at ':'
		i = SkipSpace(b, i+1) // at the value
		end = SkipValue(b, i)
		if !fn(name, b[i:end]) {
			return false
		}
		i = end
	}
}

// EachElem calls fn with each element of the array b, in order, while
// fn returns true. It reports whether fn always did.
func EachElem(b []byte, fn func(v []byte) bool) bool {
	i := 1 // past '['
	for {
		i = SkipSpace(b, i)
		if b[i] == ',' {
			i = SkipSpace(b, i+1)
		}
		if b[i] == ']' {
			return true
		}
		end := SkipValue(b, i)
		if !fn(b[i:end]) {
			return false
		}
		i = end
	}
}

// Int reads v as encoding/json reads an integer of the given bit
// size: digits with an optional minus sign, in range; a fraction or an
// exponent is not an integer.
func Int(v []byte, bits int) (int64, bool) {
	d := v
	neg := len(d) > 0 && d[0] == '-'
	if neg {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 19 {
		return 0, false
	}
	var u uint64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	limit := uint64(1) << (bits - 1)
	switch {
	case neg && u <= limit:
		return int64(-u), true // -limit wraps to the least value exactly
	case !neg && u < limit:
		return int64(u), true
	}
	return 0, false
}

// Float reads v as encoding/json reads a float64.
func Float(v []byte) (float64, bool) {
	if v[0] != '-' && (v[0] < '0' || v[0] > '9') {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	return f, err == nil
}
