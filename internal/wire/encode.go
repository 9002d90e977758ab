package wire

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/modelgateway/gateway/internal/chat"
)

const hex = "0123456789abcdef"

// htmlSafe marks the bytes json.Marshal writes in a string as they are;
// textSafe those AppendText does.
var htmlSafe, textSafe = func() (html, text [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		text[c] = c != '"' && c != '\\'
		html[c] = text[c] && c != '<' && c != '>' && c != '&'
	}
	return html, text
}()

// load8 returns the eight bytes of s from i, the first the lowest.
func load8(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// AppendString appends s as json.Marshal writes a string: HTML's <, > and
// & escaped, invalid UTF-8 as U+FFFD, U+2028 and U+2029 escaped.
func AppendString(b []byte, s string) []byte { return appendString(b, s, true, true) }

// AppendText appends s as a JSON string as the translators write their
// own events: as AppendString does, but with <, > and & as they are and
// backspace and form feed as \u0008 and \u000c.
func AppendText(b []byte, s string) []byte { return appendString(b, s, false, false) }

// AppendUnescaped appends s as a json.Encoder with SetEscapeHTML(false)
// writes a string (slog's JSON handler marshals values so): as
// AppendString does, with <, > and & as they are.
func AppendUnescaped(b []byte, s string) []byte { return appendString(b, s, false, true) }

// appendString appends s as a JSON string: with <, > and & escaped when
// html, and backspace and form feed as \b and \f when short (as
// encoding/json writes them) rather than as \u0008 and \u000c.
func appendString(b []byte, s string, html, short bool) []byte {
	safe := &textSafe
	if html {
		safe = &htmlSafe
	}
	// Eight bytes are tested at once for any that is not written as it
	// is: those special8 finds, and in html mode <, > and &, which are
	// quotes otherwise (testing for them twice costs less than a branch).
	lt, gt, amp := uint64(ones*'"'), uint64(ones*'"'), uint64(ones*'"')
	if html {
		lt, gt, amp = ones*'<', ones*'>', ones*'&'
	}
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			x := load8(s, i)
			m := (special8(x) | zero8(x^lt) | zero8(x^gt) | zero8(x^amp)) & highs
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3 // to the first byte not written as it is
		} else if safe[s[i]] {
			i++
			continue
		}
		c := s[i]
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b', '\f':
				switch {
				case !short:
					b = append(b, '\\', 'u', '0', '0', '0', hex[c])
				case c == '\b':
					b = append(b, '\\', 'b')
				default:
					b = append(b, '\\', 'f')
				}
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendStringMap appends m as json.Marshal writes a map[string]string:
// an object with its keys in order, each key and value as AppendString
// writes it; null when m is nil.
func AppendStringMap(b []byte, m map[string]string) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	var small [8]string // most maps are a request's few metadata keys
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(AppendString(b, k), ':')
		b = AppendString(b, m[k])
	}
	return append(b, '}')
}

// AppendRaw appends a valid JSON text as json.Marshal writes a
// json.RawMessage: white space outside strings removed, <, > and & and
// U+2028 and U+2029 escaped. An empty raw is null.
func AppendRaw(b, raw []byte) []byte {
	if len(raw) == 0 {
		return append(b, "null"...)
	}
	return appendCompact(b, raw, true)
}

// AppendCompact appends a valid JSON text as json.Compact does: white
// space outside strings removed.
func AppendCompact(b, raw []byte) []byte { return appendCompact(b, raw, false) }

// compactPlain marks the bytes of a string appendCompact copies as they
// are whether it escapes or not.
var compactPlain = func() (t [256]bool) {
	for c := range t {
		switch c {
		case '\\', '"', '<', '>', '&', 0xE2:
		default:
			t[c] = true
		}
	}
	return t
}()

func appendCompact(b, raw []byte, escape bool) []byte {
	start := 0
	inString := false
	for i := 0; i < len(raw); i++ {
		if i+8 <= len(raw) {
			// Eight bytes at once, up to the first that is not copied as
			// it is: in a string, as compactPlain says; outside, white
			// space or a quote.
			x := binary.LittleEndian.Uint64(raw[i:])
			var m uint64
			if inString {
				m = zero8(x^ones*'"') | zero8(x^ones*'\\') | zero8(x^ones*'<') | zero8(x^ones*'>') |
					zero8(x^ones*'&') | zero8(x^ones*0xE2)
			} else {
				m = (x-ones*0x21)&^x | zero8(x^ones*'"')
			}
			if m &= highs; m == 0 {
				i += 7
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
		}
		c := raw[i]
		switch {
		case inString && compactPlain[c]:
		case inString:
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			case '<', '>', '&':
				if !escape {
					continue
				}
				b = append(b, raw[start:i]...)
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
				start = i + 1
			case 0xE2:
				if escape && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8 {
					b = append(b, raw[start:i]...)
					b = append(b, '\\', 'u', '2', '0', '2', hex[raw[i+2]&0xf])
					i += 2
					start = i + 1
				}
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			b = append(b, raw[start:i]...)
			for i+1 < len(raw) && (raw[i+1] == ' ' || raw[i+1] == '\t' || raw[i+1] == '\n' || raw[i+1] == '\r') {
				i++ // the rest of the run of white space
			}
			start = i + 1
		}
	}
	return append(b, raw[start:]...)
}

// AppendFloat appends f as json.Marshal writes a float64.
func AppendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// AppendBool appends true or false.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

// Member appends the name of an object's member and its colon, after a
// comma unless the member is the object's first, which b's last byte
// tells: an opening brace.
func Member(b []byte, name string) []byte {
	if len(b) > 0 && b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

// AppendMessage appends a chat message as json.Marshal writes chat.Message
// embedded in a struct with reasoning_content and reasoning members
// (omitted when empty) after its own.
func AppendMessage(b []byte, m *chat.Message, reasoningContent, reasoning string) []byte {
	b = append(b, `{"role":`...)
	b = AppendString(b, m.Role)
	b = append(b, `,"content":`...)
	b = AppendContent(b, &m.Content)
	if m.Name != "" {
		b = append(b, `,"name":`...)
		b = AppendString(b, m.Name)
	}
	if len(m.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i := range m.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendToolCall(b, &m.ToolCalls[i])
		}
		b = append(b, ']')
	}
	if m.ToolCallID != "" {
		b = append(b, `,"tool_call_id":`...)
		b = AppendString(b, m.ToolCallID)
	}
	if reasoningContent != "" {
		b = append(b, `,"reasoning_content":`...)
		b = AppendString(b, reasoningContent)
	}
	if reasoning != "" {
		b = append(b, `,"reasoning":`...)
		b = AppendString(b, reasoning)
	}
	return append(b, '}')
}

// AppendContent appends a message's content as chat.Content's MarshalJSON
// does: the string, the parts or null.
func AppendContent(b []byte, c *chat.Content) []byte {
	switch {
	case c.Text != nil:
		return AppendString(b, *c.Text)
	case c.Parts != nil:
		b = append(b, '[')
		for i := range c.Parts {
			p := &c.Parts[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":`...)
			b = AppendString(b, p.Type)
			if p.Text != "" {
				b = append(b, `,"text":`...)
				b = AppendString(b, p.Text)
			}
			if p.ImageURL != nil {
				b = append(b, `,"image_url":{"url":`...)
				b = AppendString(b, p.ImageURL.URL)
				if p.ImageURL.Detail != "" {
					b = append(b, `,"detail":`...)
					b = AppendString(b, p.ImageURL.Detail)
				}
				b = append(b, '}')
			}
			b = append(b, '}')
		}
		return append(b, ']')
	}
	return append(b, "null"...)
}

func appendToolCall(b []byte, tc *chat.ToolCall) []byte {
	b = append(b, '{')
	if tc.Index != nil {
		b = Member(b, "index")
		b = strconv.AppendInt(b, int64(*tc.Index), 10)
	}
	if tc.ID != "" {
		b = Member(b, "id")
		b = AppendString(b, tc.ID)
	}
	if tc.Type != "" {
		b = Member(b, "type")
		b = AppendString(b, tc.Type)
	}
	b = Member(b, "function")
	b = append(b, '{')
	if tc.Function.Name != "" {
		b = append(b, `"name":`...)
		b = AppendString(b, tc.Function.Name)
		b = append(b, ',')
	}
	b = append(b, `"arguments":`...)
	b = AppendString(b, tc.Function.Arguments)
	return append(b, '}', '}')
}

// AppendTools appends tools as json.Marshal writes []chat.Tool.
func AppendTools(b []byte, tools []chat.Tool) []byte {
	b = append(b, '[')
	for i := range tools {
		t := &tools[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":`...)
		b = AppendString(b, t.Type)
		b = append(b, `,"function":{"name":`...)
		b = AppendString(b, t.Function.Name)
		if t.Function.Description != "" {
			b = append(b, `,"description":`...)
			b = AppendString(b, t.Function.Description)
		}
		if len(t.Function.Parameters) > 0 {
			b = append(b, `,"parameters":`...)
			b = AppendRaw(b, t.Function.Parameters)
		}
		if t.Function.Strict != nil {
			b = append(b, `,"strict":`...)
			b = AppendBool(b, *t.Function.Strict)
		}
		b = append(b, '}', '}')
	}
	return append(b, ']')
}

// AppendStreamOptions appends stream options as json.Marshal writes
// chat.StreamOptions.
func AppendStreamOptions(b []byte, o *chat.StreamOptions) []byte {
	if o.IncludeUsage {
		return append(b, `{"include_usage":true}`...)
	}
	return append(b, '{', '}')
}

// Message is a chat message with the member that carries the model's
// earlier reasoning in the dialects that take it back.
type Message struct {
	chat.Message
	ReasoningContent string `json:"reasoning_content,omitempty"`
	Reasoning        string `json:"reasoning,omitempty"`
}

// AppendMessages appends messages as json.Marshal writes them: null when
// there are none.
func AppendMessages(b []byte, msgs []Message) []byte {
	if msgs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendMessage(b, &msgs[i].Message, msgs[i].ReasoningContent, msgs[i].Reasoning)
	}
	return append(b, ']')
}

// The members below are written as json.Marshal writes a field with the
// omitempty option: not at all when empty or nil, else after a comma.

// StringMember appends ,"name":s unless s is empty.
func StringMember(b []byte, name, s string) []byte {
	if s == "" {
		return b
	}
	return AppendString(Member(b, name), s)
}

// IntMember appends ,"name":*v unless v is nil.
func IntMember(b []byte, name string, v *int) []byte {
	if v == nil {
		return b
	}
	return strconv.AppendInt(Member(b, name), int64(*v), 10)
}

// FloatMember appends ,"name":*v unless v is nil.
func FloatMember(b []byte, name string, v *float64) []byte {
	if v == nil {
		return b
	}
	return AppendFloat(Member(b, name), *v)
}

// BoolMember appends ,"name":*v unless v is nil.
func BoolMember(b []byte, name string, v *bool) []byte {
	if v == nil {
		return b
	}
	return AppendBool(Member(b, name), *v)
}

// RawMember appends ,"name":raw unless raw is empty.
func RawMember(b []byte, name string, raw []byte) []byte {
	if len(raw) == 0 {
		return b
	}
	return AppendRaw(Member(b, name), raw)
}

// StringsMember appends ,"name":[…] unless ss is empty.
func StringsMember(b []byte, name string, ss []string) []byte {
	if len(ss) == 0 {
		return b
	}
	b = append(Member(b, name), '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, s)
	}
	return append(b, ']')
}

// ToolsMember appends ,"name":[…] unless tools is empty.
func ToolsMember(b []byte, name string, tools []chat.Tool) []byte {
	if len(tools) == 0 {
		return b
	}
	return AppendTools(Member(b, name), tools)
}

// StreamMember appends ,"stream":true when stream is, and the stream
// options unless they are nil.
func StreamMember(b []byte, stream bool, o *chat.StreamOptions) []byte {
	if stream {
		b = append(b, `,"stream":true`...)
	}
	if o != nil {
		b = AppendStreamOptions(Member(b, "stream_options"), o)
	}
	return b
}
