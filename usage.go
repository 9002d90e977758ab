package gateway

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/modelgateway/gateway/internal/jsonscan"
)

// usageScanner finds the token counts of a JSON document, or of the data
// of a text/event-stream, reading bytes as they pass in constant memory. It
// understands just enough JSON to track nesting, strings and the keys of
// the objects on the way to a usage object (usage, or Vertex AI's
// usageMetadata): the top-level one, and the top-level object's member
// objects; and usageMetadata in the objects of a top-level array. In a
// usage object it also reads the cached prompt tokens of its
// prompt_tokens_details (input_tokens_details) object, and on the way it
// keeps the first model the answer names (model, or Gemini's
// modelVersion, where a usage object could be). The content of strings
// that are neither keys nor the model is skipped a run at a time, and so
// is every container nested deeper than what it reads (readDepth), such
// as the choices of a completion.
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
	depth        int
	objects      uint64 // bit d: the container at depth d+1 is an object
	inString     bool
	escape       bool
	isKey        bool // the current string is an object key
	expectKey    bool // the next string in the current object is a key
	key          [32]byte
	keyLen       int // len(key) + 1 means too long
	pending      uint8
	usageDepth   int // depth of the usage object's members; 0 outside it
	detailsDepth int // depth of the members of the usage's prompt_tokens_details; 0 outside it
	inNum        bool
	numKey       uint8 // the usage key of the number being read
	num          [32]byte
	numLen       int

	// The answer's model: the first string value of a model key.
	inModel   bool // reading it
	model     [64]byte
	modelLen  int  // bytes of model read
	modelDone bool // model[:modelLen] is the answer's model

	found  bool
	max    [usageKeys]float64 // the largest value seen of each usage key
	bytes  int64              // bytes scanned
	events int64              // SSE events with data
}

// Keys the scanner waits for the value of: usage, the details object in
// it, the model, and the token counts in a usage object (from
// usageKeyTotal on).
const (
	usageKeyNone uint8 = iota
	usageKeyUsage
	usageKeyDetails
	usageKeyModel
	usageKeyTotal
	usageKeyPrompt
	usageKeyCompletion
	usageKeyInput
	usageKeyOutput
	usageKeyCacheCreation
	usageKeyCacheRead
	usageKeyCached   // of the prompt tokens, read from the provider's prompt cache
	usageKeyThoughts // Gemini's thinking tokens, not in candidatesTokenCount
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
	case "cachedContentTokenCount":
		return usageKeyCached
	case "thoughtsTokenCount":
		return usageKeyThoughts
	case "prompt_tokens_details", "input_tokens_details":
		return usageKeyDetails
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

// counts returns the token counts of the usage seen, in OpenAI's terms,
// and whether any was seen: prompt tokens count the cached ones (Anthropic
// reports them apart from input_tokens), completion tokens the thinking
// ones (Gemini reports them apart from candidatesTokenCount). Each count is
// the largest value seen, since streams report running totals.
func (s *usageScanner) counts() (prompt, completion, total, cached int64, ok bool) {
	s.endNumber()
	if !s.found {
		return 0, 0, 0, 0, false
	}
	m := &s.max
	p := max(m[usageKeyPrompt], m[usageKeyInput]+m[usageKeyCacheCreation]+m[usageKeyCacheRead])
	c := max(m[usageKeyCompletion]+m[usageKeyThoughts], m[usageKeyOutput])
	t := max(m[usageKeyTotal], p+c)
	k := min(max(m[usageKeyCached], m[usageKeyCacheRead]), p)
	return tokenCount(p), tokenCount(c), tokenCount(t), tokenCount(k), true
}

// tokenCount converts a count the scanner read (finite, not negative) to
// an integer, saturating.
func tokenCount(v float64) int64 {
	if v >= 1<<62 {
		return 1 << 62
	}
	return int64(v)
}

// answerModel returns the model the answer named, or "".
func (s *usageScanner) answerModel() string {
	if !s.modelDone || !utf8.Valid(s.model[:s.modelLen]) {
		return ""
	}
	return string(s.model[:s.modelLen])
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
		s.json(p)
		return
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
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
			// The rest of the line, up to the byte that ends it.
			n := lineEnd(p[i:])
			s.json(p[i : i+n])
			i += n - 1
		case s.field >= 0:
			if c != "data:"[s.field] {
				s.field = -1
			} else if s.field++; s.field == len("data:") {
				s.inData, s.space, s.hasData = true, true, true
			}
		default:
			i += lineEnd(p[i:]) - 1 // a line of another field
		}
	}
}

// lineEnd returns the index of the first '\n' or '\r' in b, or len(b).
func lineEnd(b []byte) int {
	n := bytes.IndexByte(b, '\n')
	if n < 0 {
		n = len(b)
	}
	if r := bytes.IndexByte(b[:n], '\r'); r >= 0 {
		n = r
	}
	return n
}

// json feeds p to the JSON scanner. The content of a string that is
// neither a key nor the model is skipped to its closing quote at once,
// and so is the content of a container deeper than readDepth.
func (s *usageScanner) json(p []byte) {
	for i := 0; i < len(p); i++ {
		if s.depth > 2 { // readDepth is 2 or more
			if d := s.readDepth(); s.depth > d {
				if i += s.skip(p[i:], d); i >= len(p) {
					return
				}
			}
		}
		switch {
		case s.inString && s.escape:
		case s.inString && (s.isKey || s.inModel):
			// A run of the key or the model, up to its closing quote or
			// an escape, which jsonByte reads.
			n := 0
			for n < len(p)-i && p[i+n] != '"' && p[i+n] != '\\' {
				n++
			}
			s.keep(p[i : i+n])
			if i += n; i == len(p) {
				return
			}
		case s.inString:
			n := stringEnd(p[i:])
			if n == len(p)-i {
				s.escape = trailingBackslashes(p[i:])%2 == 1
				return
			}
			i += n // at the closing quote
		case s.inNum:
			for ; i < len(p) && numberByte[p[i]]; i++ {
				if s.numLen < len(s.num) {
					s.num[s.numLen] = p[i]
				}
				s.numLen++
			}
			if i == len(p) {
				return
			}
		case literalByte[p[i]] && s.pending < usageKeyTotal:
			// A number or literal no count is read from: jsonByte would
			// only forget what it was waiting for, at each byte.
			s.pending = usageKeyNone
			for i+1 < len(p) && literalByte[p[i+1]] {
				i++
			}
			continue
		}
		s.jsonByte(p[i])
	}
}

// keep adds run, bytes of a string without its closing quote or an escape,
// to the key or the model being read, as jsonByte would a byte at a time.
func (s *usageScanner) keep(run []byte) {
	switch {
	case s.inModel && s.modelLen+len(run) <= len(s.model):
		s.modelLen += copy(s.model[s.modelLen:], run)
	case s.inModel:
		s.inModel = false
	case s.isKey && s.keyLen+len(run) <= len(s.key):
		s.keyLen += copy(s.key[s.keyLen:], run)
	case s.isKey:
		s.keyLen = len(s.key) + 1
	}
}

// numberByte marks the bytes of a JSON number; literalByte those of a
// number or literal (true, false, null), and any other byte that is
// neither JSON's structure nor white space.
var numberByte, literalByte [256]bool

func init() {
	for _, c := range []byte("0123456789.eE+-") {
		numberByte[c] = true
	}
	for c := range literalByte {
		literalByte[c] = !bytes.ContainsRune([]byte("{}[]:,\" \t\n\r"), rune(c))
	}
}

// readDepth is the deepest nesting the scanner reads: the members of the
// prompt_tokens_details object it is in, or of the usage object it is in,
// else those of the top-level object's (or array's) members, where a
// usage object or the model may be. Nothing deeper is read.
func (s *usageScanner) readDepth() int {
	switch {
	case s.detailsDepth != 0:
		return s.detailsDepth
	case s.usageDepth != 0:
		return s.usageDepth
	}
	return 2
}

// skip passes over p within a container deeper than depth, tracking only
// strings and nesting, and returns the index in p of the bracket that
// closes the outermost container it is in (so that depth is reached
// again), or len(p).
func (s *usageScanner) skip(p []byte, depth int) int {
	for i := 0; i < len(p); i++ {
		if s.inString {
			if s.escape {
				s.escape = false
				continue
			}
			n := stringEnd(p[i:])
			if n == len(p)-i {
				s.escape = trailingBackslashes(p[i:])%2 == 1
				return len(p)
			}
			i += n
			s.inString = false
			continue
		}
		for i < len(p) && !jsonStructural[p[i]] {
			i++
		}
		if i == len(p) {
			return i
		}
		switch p[i] {
		case '"':
			s.inString = true
		case '{', '[':
			s.depth++
		default:
			if s.depth == depth+1 {
				return i
			}
			s.depth--
		}
	}
	return len(p)
}

// jsonStructural marks the bytes skip stops at.
var jsonStructural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

// stringEnd returns the index in b of the quote that ends the string b is
// inside of, not after an escape, or len(b). b does not start within an
// escape.
func stringEnd(b []byte) int {
	from := 0
	for {
		q := bytes.IndexByte(b[from:], '"')
		if q < 0 {
			return len(b)
		}
		q += from
		if trailingBackslashes(b[:q])%2 == 0 {
			return q
		}
		from = q + 1
	}
}

// trailingBackslashes counts the backslashes b ends with.
func trailingBackslashes(b []byte) int {
	n := 0
	for n < len(b) && b[len(b)-1-n] == '\\' {
		n++
	}
	return n
}

// endEvent resets the JSON scanner between events, keeping what was found
// and counted.
func (s *usageScanner) endEvent() {
	s.endNumber()
	events := s.events
	if s.hasData {
		events++
	}
	*s = usageScanner{sse: true, found: s.found, max: s.max, bytes: s.bytes, events: events,
		model: s.model, modelLen: s.modelLen, modelDone: s.modelDone}
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
	if v, ok := jsonscan.Int(s.num[:s.numLen], 64); ok {
		// Digits alone, read without strconv: float64 rounds them as
		// ParseFloat would.
		if v >= 0 {
			s.max[s.numKey] = max(s.max[s.numKey], float64(v))
			s.found = true
		}
	} else if v, err := strconv.ParseFloat(string(s.num[:s.numLen]), 64); err == nil && v >= 0 && !math.IsInf(v, 0) {
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
			s.inModel = false         // nor is an escaped model name kept
		case c == '"':
			s.inString = false
			if s.inModel {
				s.inModel = false
				s.modelDone = s.modelLen > 0 && s.modelLen <= len(s.model)
			}
		case s.inModel && s.modelLen < len(s.model):
			s.model[s.modelLen] = c
			s.modelLen++
		case s.inModel:
			s.inModel = false
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
		if s.pending == usageKeyModel && !s.modelDone {
			s.inModel, s.modelLen = true, 0
		}
		s.pending = usageKeyNone
	case ':':
		s.pending = usageKeyNone
		if !s.isKey || s.keyLen > len(s.key) {
			break
		}
		k := s.key[:s.keyLen]
		switch {
		case s.usageDepth != 0:
			switch {
			case s.depth == s.usageDepth:
				s.pending = usageCountKey(k)
			case s.depth == s.detailsDepth && string(k) == "cached_tokens":
				s.pending = usageKeyCached
			}
		case string(k) == "usage" && (s.depth == 1 || s.depth == 2 && s.objects&1 != 0):
			s.pending = usageKeyUsage
		case string(k) == "usageMetadata" && (s.depth == 1 || s.depth == 2):
			// At depth 2 the container at depth 1 is an object or, in
			// Vertex AI's streamGenerateContent, an array of answers.
			s.pending = usageKeyUsage
		case s.modelDone:
		case string(k) == "model" && (s.depth == 1 || s.depth == 2 && s.objects&1 != 0),
			string(k) == "modelVersion" && (s.depth == 1 || s.depth == 2):
			// Anthropic's message_start and the Responses API's events
			// name it one object down.
			s.pending = usageKeyModel
		}
		s.isKey = false
	case '{', '[':
		if c == '{' && s.pending == usageKeyUsage {
			s.usageDepth = s.depth + 1
		}
		if c == '{' && s.pending == usageKeyDetails {
			s.detailsDepth = s.depth + 1
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
		if s.depth == s.detailsDepth {
			s.detailsDepth = 0
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
		if s.pending >= usageKeyTotal && (c >= '0' && c <= '9' || c == '-') {
			s.inNum, s.numKey = true, s.pending
			s.num[0] = c
			s.numLen = 1
		}
		s.pending = usageKeyNone
	}
}
