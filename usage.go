package gateway

import (
	"math"
	"strconv"
)

// usageScanner finds the token counts of a JSON document, or of the data
// of a text/event-stream, reading bytes as they pass in constant memory. It
// understands just enough JSON to track nesting, strings and the keys of
// the objects on the way to a usage object (usage, or Vertex AI's
// usageMetadata): the top-level one, and the top-level object's member
// objects; and usageMetadata in the objects of a top-level array.
type usageScanner struct {
	sse bool

	// SSE framing.
	field   int  // bytes of "data:" matched at the start of the line; -1 skips the line
	inData  bool // feeding the rest of a data line to the JSON scanner
	space   bool // the data value just began: one space may be skipped
	cr      bool // the previous byte was '\r'
	dirty   bool // the line is not empty
	hasData bool // the event has a data line

	// JSON.
	depth      int
	objects    uint64 // bit d: the container at depth d+1 is an object
	inString   bool
	escape     bool
	isKey      bool // the current string is an object key
	expectKey  bool // the next string in the current object is a key
	key        [32]byte
	keyLen     int // len(key) + 1 means too long
	pending    uint8
	usageDepth int // depth of the usage object's members; 0 outside it
	inNum      bool
	numKey     uint8 // the usage key of the number being read
	num        [32]byte
	numLen     int

	found  bool
	max    [usageKeys]float64 // the largest value seen of each usage key
	bytes  int64              // bytes scanned
	events int64              // SSE events with data
}

// Keys the scanner waits for the value of: usage, and the token counts in
// a usage object.
const (
	usageKeyNone uint8 = iota
	usageKeyUsage
	usageKeyTotal
	usageKeyPrompt
	usageKeyCompletion
	usageKeyInput
	usageKeyOutput
	usageKeyCacheCreation
	usageKeyCacheRead
	usageKeys
)

// usageCountKey returns the usage key of a token count in a usage object,
// or usageKeyNone: the snake_case names of OpenAI and Anthropic, the
// camelCase ones of Bedrock Converse and of Vertex AI's usageMetadata.
func usageCountKey(k []byte) uint8 {
	switch string(k) {
	case "total_tokens", "totalTokens", "totalTokenCount":
		return usageKeyTotal
	case "prompt_tokens", "promptTokenCount":
		return usageKeyPrompt
	case "completion_tokens", "candidatesTokenCount":
		return usageKeyCompletion
	case "input_tokens", "inputTokens":
		return usageKeyInput
	case "output_tokens", "outputTokens":
		return usageKeyOutput
	case "cache_creation_input_tokens":
		return usageKeyCacheCreation
	case "cache_read_input_tokens":
		return usageKeyCacheRead
	}
	return usageKeyNone
}

// total returns the tokens the usage seen adds up to, and whether any was
// seen.
func (s *usageScanner) total() (float64, bool) {
	s.endNumber()
	if !s.found {
		return 0, false
	}
	m := &s.max
	return max(m[usageKeyTotal], m[usageKeyPrompt]+m[usageKeyCompletion],
		m[usageKeyInput]+m[usageKeyCacheCreation]+m[usageKeyCacheRead]+m[usageKeyOutput]), true
}

// estimate returns the tokens an answer that reported no usage is charged
// for what was scanned of it: one per event of a stream, else one per 4
// bytes.
func (s *usageScanner) estimate() float64 {
	if s.sse {
		if s.hasData {
			return float64(s.events + 1) // an event cut before its blank line
		}
		return float64(s.events)
	}
	return math.Ceil(float64(s.bytes) / 4)
}

func (s *usageScanner) write(p []byte) {
	s.bytes += int64(len(p))
	if !s.sse {
		for _, c := range p {
			s.jsonByte(c)
		}
		return
	}
	for _, c := range p {
		if c == '\n' && s.cr {
			s.cr = false
			continue
		}
		s.cr = c == '\r'
		if c == '\n' || c == '\r' {
			if !s.dirty {
				s.endEvent()
			} else if s.inData {
				s.jsonByte('\n')
			}
			s.field, s.inData, s.space, s.dirty = 0, false, false, false
			continue
		}
		s.dirty = true
		switch {
		case s.inData:
			if s.space {
				s.space = false
				if c == ' ' {
					continue
				}
			}
			s.jsonByte(c)
		case s.field >= 0:
			if c != "data:"[s.field] {
				s.field = -1
			} else if s.field++; s.field == len("data:") {
				s.inData, s.space, s.hasData = true, true, true
			}
		}
	}
}

// endEvent resets the JSON scanner between events, keeping what was found
// and counted.
func (s *usageScanner) endEvent() {
	s.endNumber()
	events := s.events
	if s.hasData {
		events++
	}
	*s = usageScanner{sse: true, found: s.found, max: s.max, bytes: s.bytes, events: events}
}

func (s *usageScanner) inObject() bool {
	return s.depth > 0 && s.depth <= 64 && s.objects&(1<<(s.depth-1)) != 0
}

func (s *usageScanner) endNumber() {
	if !s.inNum {
		return
	}
	s.inNum = false
	if s.numLen > len(s.num) {
		return
	}
	if v, err := strconv.ParseFloat(string(s.num[:s.numLen]), 64); err == nil && v >= 0 && !math.IsInf(v, 0) {
		s.max[s.numKey] = max(s.max[s.numKey], v)
		s.found = true
	}
}

func (s *usageScanner) jsonByte(c byte) {
	if s.inString {
		switch {
		case s.escape:
			s.escape = false
		case c == '\\':
			s.escape = true
			s.keyLen = len(s.key) + 1 // an escaped key is none we look for
		case c == '"':
			s.inString = false
		case s.isKey && s.keyLen < len(s.key):
			s.key[s.keyLen] = c
			s.keyLen++
		case s.isKey:
			s.keyLen = len(s.key) + 1
		}
		return
	}
	if s.inNum {
		if c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' {
			if s.numLen < len(s.num) {
				s.num[s.numLen] = c
			}
			s.numLen++
			return
		}
		s.endNumber()
	}
	switch c {
	case ' ', '\t', '\n', '\r':
	case '"':
		s.inString = true
		s.isKey = s.expectKey && s.inObject()
		s.expectKey = false
		s.keyLen = 0
		s.pending = usageKeyNone
	case ':':
		s.pending = usageKeyNone
		if !s.isKey || s.keyLen > len(s.key) {
			break
		}
		k := s.key[:s.keyLen]
		switch {
		case s.usageDepth != 0:
			if s.depth == s.usageDepth {
				s.pending = usageCountKey(k)
			}
		case string(k) == "usage" && (s.depth == 1 || s.depth == 2 && s.objects&1 != 0):
			s.pending = usageKeyUsage
		case string(k) == "usageMetadata" && (s.depth == 1 || s.depth == 2):
			// At depth 2 the container at depth 1 is an object or, in
			// Vertex AI's streamGenerateContent, an array of answers.
			s.pending = usageKeyUsage
		}
		s.isKey = false
	case '{', '[':
		if c == '{' && s.pending == usageKeyUsage {
			s.usageDepth = s.depth + 1
		}
		s.depth++
		if s.depth <= 64 {
			if c == '{' {
				s.objects |= 1 << (s.depth - 1)
			} else {
				s.objects &^= 1 << (s.depth - 1)
			}
		}
		s.expectKey = c == '{'
		s.pending = usageKeyNone
	case '}', ']':
		if s.depth == s.usageDepth {
			s.usageDepth = 0
		}
		if s.depth > 0 {
			s.depth--
		}
		s.expectKey = false
		s.pending = usageKeyNone
	case ',':
		s.expectKey = s.inObject()
		s.pending = usageKeyNone
	default:
		if s.pending > usageKeyUsage && (c >= '0' && c <= '9' || c == '-') {
			s.inNum, s.numKey = true, s.pending
			s.num[0] = c
			s.numLen = 1
		}
		s.pending = usageKeyNone
	}
}
