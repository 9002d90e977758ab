package wire

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// unquote decodes the content of a valid JSON string as encoding/json
// does: invalid UTF-8 and unpaired surrogates become U+FFFD.
func unquote(s []byte) string {
	// A Builder gives its bytes as the string without copying them.
	var b strings.Builder
	b.Grow(len(s) + 2*utf8.UTFMax)
	valid := utf8.Valid(s)
	for r := 0; r < len(s); {
		if valid && s[r] != '\\' {
			// Copy up to the next escape sequence at once.
			j := backslash(s[r:])
			b.Write(s[r : r+j])
			r += j
			continue
		}
		switch c := s[r]; {
		case c == '\\':
			r++
			switch s[r] {
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				rr := getu4(s[r-1:])
				r += 5
				if utf16.IsSurrogate(rr) {
					if dec := utf16.DecodeRune(rr, getu4(s[r:])); dec != unicode.ReplacementChar {
						r += 6
						b.WriteRune(dec)
						continue
					}
					rr = unicode.ReplacementChar
				}
				b.WriteRune(rr)
				continue
			default: // '"', '\\', '/'
				b.WriteByte(s[r])
			}
			r++
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			r += size
			b.WriteRune(rr)
		}
	}
	return b.String()
}

// backslash returns the index of the first backslash in s, or len(s):
// eight bytes at a time, as the runs between escape sequences are often
// too short for bytes.IndexByte to pay for itself.
func backslash(s []byte) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if m := zero8(binary.LittleEndian.Uint64(s[i:])^ones*'\\') & highs; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for i < len(s) && s[i] != '\\' {
		i++
	}
	return i
}

// getu4 decodes \uXXXX at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// Unquote returns the content of a valid JSON string, quotes included, as
// encoding/json decodes it.
func Unquote(raw []byte) string {
	s := raw[1 : len(raw)-1]
	if bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
		return string(s)
	}
	return unquote(s)
}
