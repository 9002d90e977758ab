package wire

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// maxDepth bounds the nesting a Decoder follows; deeper texts fail.
const maxDepth = 512

// plain marks the bytes a string holds as they are: ASCII, not a quote, a
// backslash or a control character.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// Bytes repeated in the eight of a word, for plain8.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special8 returns the high bits of the bytes of x, read from a string,
// that are not plain (see plain): below 0x20, at or above 0x80, a quote
// or a backslash. The lowest is exact; those above it may not be, as a
// byte's test borrows from the next.
func special8(x uint64) uint64 {
	return (x | (x-ones*0x20)&^x | zero8(x^ones*'"') | zero8(x^ones*'\\')) & highs
}

// zero8 has, with highs, the high bit of the lowest zero byte of v set,
// and none below it.
func zero8(v uint64) uint64 { return (v - ones) &^ v }

// A Decoder reads one JSON text. Its methods read the next value; each
// returns a zero value and marks the Decoder failed when the value is not
// of the kind asked for or is not valid JSON, and does nothing once it
// has failed. Failed reports whether that happened; a caller that sees
// it decodes the text with encoding/json instead.
//
// The zero value reads an empty text; Reset gives it one. A Decoder is
// not safe for concurrent use.
type Decoder struct {
	b      []byte
	i      int
	failed bool
	// MaxDepth, when set, is the deepest nesting of objects and arrays
	// the Decoder reads; deeper texts fail. Zero is 512.
	MaxDepth int
	first    bool // an object or array was opened and nothing read of it yet
	depth    int
}

// Reset makes d read b from its start.
func (d *Decoder) Reset(b []byte) { *d = Decoder{b: b, MaxDepth: d.MaxDepth} }

// Fail marks d failed, for a value the caller does not decode itself.
func (d *Decoder) Fail() { d.failed = true }

// Failed reports whether d has failed.
func (d *Decoder) Failed() bool { return d.failed }

// End reports whether d has read the whole text without failing: only
// white space is left.
func (d *Decoder) End() bool {
	d.ws()
	return !d.failed && d.i == len(d.b)
}

func (d *Decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// space is ws for where an indented text has its indentation (before a
// member's name or an element, after a comma or an opening bracket, and
// before a closing one): it skips a word's leading spaces at a time.
func (d *Decoder) space() {
	if d.i < len(d.b) && d.b[d.i] <= ' ' {
		d.indentation()
	}
}

// indentation is space past its first byte of white space. It is not
// inlined, so that space is, and a compact text pays for no call.
//
//go:noinline
func (d *Decoder) indentation() {
	b, i := d.b, d.i
	for i < len(b) {
		if i+8 <= len(b) {
			// The bytes that are spaces are zero: the trailing zero
			// bytes are the spaces the word starts with.
			if n := bits.TrailingZeros64(binary.LittleEndian.Uint64(b[i:])^ones*' ') >> 3; n > 0 {
				i += n
				continue
			}
		}
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			d.i = i
			return
		}
	}
	d.i = i
}

// Peek returns the first byte of the next value, or 0 at the end or
// after a failure.
func (d *Decoder) Peek() byte {
	if d.failed {
		return 0
	}
	d.ws()
	if d.i == len(d.b) {
		return 0
	}
	return d.b[d.i]
}

// Null reads a null if one is next and reports whether it did.
func (d *Decoder) Null() bool {
	if d.Peek() != 'n' {
		return false
	}
	if !bytes.HasPrefix(d.b[d.i:], []byte("null")) {
		d.failed = true
		return false
	}
	d.i += 4
	return true
}

// Object reads the opening brace of an object.
func (d *Decoder) Object() bool { return d.open('{') }

// open reads the opening brace or bracket c of an object or an array,
// one level deeper, within the depth allowed.
func (d *Decoder) open(c byte) bool {
	if d.Peek() != c {
		d.failed = true
		return false
	}
	d.i++
	d.depth++
	if d.depth > maxDepth || d.MaxDepth > 0 && d.depth > d.MaxDepth {
		d.failed = true
		return false
	}
	d.first = true
	return true
}

// Key reads the next member's name and the colon after it, or the
// object's closing brace, when it reports false. A name holding an escape
// sequence fails: encoding/json would match it against field names once
// unescaped.
func (d *Decoder) Key() ([]byte, bool) { return d.key(false) }

// key is Key; when skipped is true, it reads too the names Key refuses,
// for a value that is skipped and whose names are never matched.
func (d *Decoder) key(skipped bool) ([]byte, bool) {
	if d.failed {
		return nil, false
	}
	d.space()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		d.depth--
		d.first = false
		return nil, false
	}
	if d.first {
		d.first = false
	} else {
		// Not the first member: a comma comes first.
		if d.i >= len(d.b) || d.b[d.i] != ',' {
			d.failed = true
			return nil, false
		}
		d.i++
		d.space()
	}
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		d.failed = true
		return nil, false
	}
	start := d.i + 1
	end, esc := d.str()
	if d.failed || esc && !skipped {
		d.failed = true
		return nil, false
	}
	key := d.b[start : end-1]
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != ':' {
		d.failed = true
		return nil, false
	}
	d.i++
	return key, true
}

// Array reads the opening bracket of an array.
func (d *Decoder) Array() bool { return d.open('[') }

// Elem reports whether another element of the array follows, reading
// the comma before it, or reads the array's closing bracket.
func (d *Decoder) Elem() bool {
	if d.failed {
		return false
	}
	d.space()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
		d.depth--
		d.first = false
		return false
	}
	if d.first {
		d.first = false
		return true
	}
	if d.i >= len(d.b) || d.b[d.i] != ',' {
		d.failed = true
		return false
	}
	d.i++
	d.space()
	return true
}

// str reads the string starting at d.i, checking it is valid JSON, and
// returns the offset past its closing quote and whether it holds an
// escape sequence or bytes that are not ASCII.
func (d *Decoder) str() (end int, unusual bool) {
	b := d.b
	i := d.i + 1
	for i < len(b) {
		if i+8 <= len(b) {
			m := special8(binary.LittleEndian.Uint64(b[i:]))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3 // to the first byte that is not plain
		} else if plain[b[i]] {
			i++
			continue
		}
		c := b[i]
		switch {
		case c == '"':
			d.i = i + 1
			return i + 1, unusual
		case c == '\\':
			unusual = true
			if i+1 >= len(b) {
				d.failed = true
				return 0, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					d.failed = true
					return 0, false
				}
				for _, h := range b[i+2 : i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						d.failed = true
						return 0, false
					}
				}
				i += 6
			default:
				d.failed = true
				return 0, false
			}
		case c < 0x20:
			d.failed = true
			return 0, false
		case c >= utf8.RuneSelf:
			unusual = true
			i++
		default:
			i++
		}
	}
	d.failed = true
	return 0, false
}

// String reads a string.
func (d *Decoder) String() string {
	if d.Peek() != '"' {
		d.failed = true
		return ""
	}
	start := d.i
	end, unusual := d.str()
	if d.failed {
		return ""
	}
	s := d.b[start+1 : end-1]
	if unusual && (bytes.IndexByte(s, '\\') >= 0 || !utf8.Valid(s)) {
		return unquote(s)
	}
	return common(s)
}

// common returns s as a string, without allocating for the values the
// agents' protocols repeat in every request (roles, block and item
// types).
func common(s []byte) string {
	switch string(s) { // compiled to comparisons: no allocation
	case "user":
		return "user"
	case "assistant":
		return "assistant"
	case "system":
		return "system"
	case "developer":
		return "developer"
	case "text":
		return "text"
	case "tool_use":
		return "tool_use"
	case "tool_result":
		return "tool_result"
	case "thinking":
		return "thinking"
	case "image":
		return "image"
	case "base64":
		return "base64"
	case "ephemeral":
		return "ephemeral"
	case "message":
		return "message"
	case "input_text":
		return "input_text"
	case "output_text":
		return "output_text"
	case "function":
		return "function"
	case "function_call":
		return "function_call"
	case "function_call_output":
		return "function_call_output"
	case "reasoning":
		return "reasoning"
	case "summary_text":
		return "summary_text"
	case "completed":
		return "completed"
	case "auto":
		return "auto"
	case "object":
		return "object"
	case "string":
		return "string"
	}
	return string(s)
}

// Raw reads a value of any kind, checking it is valid JSON, and returns
// its bytes.
func (d *Decoder) Raw() []byte {
	d.ws()
	start := d.i
	d.skip()
	if d.failed {
		return nil
	}
	return d.b[start:d.i]
}

// Skip reads a value of any kind, checking it is valid JSON.
func (d *Decoder) Skip() { d.Raw() }

func (d *Decoder) skip() {
	switch d.Peek() {
	case '{':
		d.Object()
		for {
			if _, ok := d.key(true); !ok {
				return
			}
			d.skip()
		}
	case '[':
		d.Array()
		for d.Elem() {
			d.skip()
		}
	case '"':
		d.str()
	case 't':
		d.literal("true")
	case 'f':
		d.literal("false")
	case 'n':
		d.literal("null")
	default:
		d.number()
	}
}

func (d *Decoder) literal(s string) {
	if !bytes.HasPrefix(d.b[d.i:], []byte(s)) {
		d.failed = true
		return
	}
	d.i += len(s)
}

// number reads a number and returns its text.
func (d *Decoder) number() []byte {
	if d.failed {
		return nil
	}
	b, start := d.b, d.i
	i := start
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		d.failed = true
		return nil
	}
	if i < len(b) && b[i] == '.' {
		if i = digits(b, i+1); i < 0 {
			d.failed = true
			return nil
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i = digits(b, i); i < 0 {
			d.failed = true
			return nil
		}
	}
	d.i = i
	return b[start:i]
}

// digits returns the end of the run of digits at b[i:], or -1 when b[i]
// is not a digit.
func digits(b []byte, i int) int {
	if i >= len(b) || b[i] < '0' || b[i] > '9' {
		return -1
	}
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// Int reads a number that is an integer within int's range, as
// encoding/json decodes into an int.
func (d *Decoder) Int() int {
	if p := d.Peek(); p != '-' && (p < '0' || p > '9') {
		d.failed = true
		return 0
	}
	n, err := strconv.ParseInt(string(d.number()), 10, strconv.IntSize)
	if err != nil {
		d.failed = true
	}
	return int(n)
}

// Float reads a number, as encoding/json decodes into a float64.
func (d *Decoder) Float() float64 {
	if p := d.Peek(); p != '-' && (p < '0' || p > '9') {
		d.failed = true
		return 0
	}
	f, err := strconv.ParseFloat(string(d.number()), 64)
	if err != nil {
		d.failed = true
	}
	return f
}

// Bool reads true or false.
func (d *Decoder) Bool() bool {
	switch d.Peek() {
	case 't':
		d.literal("true")
		return true
	case 'f':
		d.literal("false")
		return false
	}
	d.failed = true
	return false
}

// Unknown reads the value of a member the caller does not decode, named
// key, which encoding/json ignores unless it matches one of fields, the
// names the caller does decode, without regard to case. A name that could
// so match fails d.
func (d *Decoder) Unknown(key []byte, fields []string) {
	for _, c := range key {
		if c >= utf8.RuneSelf {
			d.failed = true // Unicode case folding: leave it to encoding/json
			return
		}
	}
	for _, f := range fields {
		if len(f) == len(key) && bytes.EqualFold(key, []byte(f)) {
			d.failed = true
			return
		}
	}
	d.Skip()
}

// Seen marks the field numbered n as read, in *set, failing d when it
// was read before: encoding/json merges a duplicate member into the value
// already decoded, which the callers do not copy.
func (d *Decoder) Seen(set *uint64, n int) {
	if *set&(1<<n) != 0 {
		d.failed = true
	}
	*set |= 1 << n
}

// Mark returns the offset in the text of the next value, past the white
// space before it, for From.
func (d *Decoder) Mark() int {
	d.ws()
	return d.i
}

// From returns the text from the offset Mark returned to the end of what
// d has read since.
func (d *Decoder) From(mark int) []byte { return d.b[mark:d.i] }
