package guardrail

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/modelgateway/gateway/internal/jsonscan"
)

// errNotJSON is the error of a body that is not a JSON object.
var errNotJSON = errors.New("guardrail: the body is not a JSON object")

// span is where a JSON string value sits in a body: b[start:end] is the
// string, quotes included.
type span struct{ start, end int }

// Texts are the texts of a request or answer body that the checks read,
// and where they sit in the body, so that rewritten texts can be written
// back. The body must not change while Texts is in use.
type Texts struct {
	// Parts are the texts, in the body's order: Input.Parts.
	Parts []string

	body  []byte
	spans []span
}

// RequestTexts reads the texts input checks read from a chat completions
// request body: the last user message's string content, or each of its
// text parts. An Anthropic Messages body is read the same way. For an
// OpenAI Responses body they are the input when it is a string, else
// the last user message's string content or each of its input_text
// parts. For a completions body they are the prompt (each prompt of an
// array). A body that is not a JSON object is an error; a body without
// such text has no parts.
func RequestTexts(body []byte) (*Texts, error) {
	spans, err := requestSpans(body)
	if err != nil {
		return nil, err
	}
	return newTexts(body, spans), nil
}

// ResponseTexts reads the texts output checks read from a chat
// completions or completions answer body: the content of every choice's
// message, or every choice's text, in order. For an Anthropic Messages
// answer they are its text blocks; for an OpenAI Responses answer, the
// output_text parts of its messages.
func ResponseTexts(body []byte) (*Texts, error) {
	spans, err := responseSpans(body)
	if err != nil {
		return nil, err
	}
	return newTexts(body, spans), nil
}

func newTexts(body []byte, spans []span) *Texts {
	t := &Texts{Parts: make([]string, len(spans)), body: body, spans: spans}
	for i, s := range spans {
		t.Parts[i] = stringValue(body[s.start:s.end])
	}
	return t
}

// Replace returns a copy of the body with the texts replaced by parts
// (Outcome.Parts), which must have as many elements as t.Parts. The rest
// of the body is kept byte for byte.
func (t *Texts) Replace(parts []string) ([]byte, error) {
	if len(parts) != len(t.spans) {
		return nil, errors.New("guardrail: the parts do not match the body's texts")
	}
	out := make([]byte, 0, len(t.body)+64)
	at := 0
	for i, s := range t.spans {
		out = append(out, t.body[at:s.start]...)
		out = appendString(out, parts[i], false)
		at = s.end
	}
	return append(out, t.body[at:]...), nil
}

// object returns body trimmed if it is a JSON object.
func object(body []byte) ([]byte, error) {
	if !jsonscan.Valid(body) {
		return nil, errNotJSON
	}
	b := bytes.TrimSpace(body)
	if len(b) == 0 || b[0] != '{' {
		return nil, errNotJSON
	}
	return b, nil
}

// offset returns where v, a sub-slice of b, starts in b.
func offset(b, v []byte) int { return cap(b) - cap(v) }

func member(obj []byte, name string) []byte {
	var found []byte
	jsonscan.EachMember(obj, func(n, v []byte) bool {
		if string(n) == name {
			found = v
			return false
		}
		return true
	})
	return found
}

func isString(v []byte) bool { return len(v) > 0 && v[0] == '"' }

// stringValue decodes the JSON string v, already known to be valid.
func stringValue(v []byte) string {
	if !isString(v) {
		return ""
	}
	if inner := v[1 : len(v)-1]; bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner)
	}
	var s string
	_ = json.Unmarshal(v, &s)
	return s
}

func requestSpans(body []byte) ([]span, error) {
	b, err := object(body)
	if err != nil {
		return nil, err
	}
	var spans []span
	add := func(v []byte) {
		o := offset(body, v)
		spans = append(spans, span{o, o + len(v)})
	}
	if msgs := member(b, "messages"); len(msgs) > 0 && msgs[0] == '[' {
		lastUserParts(msgs, "text", add)
		return spans, nil
	}
	if input := member(b, "input"); len(input) > 0 {
		lastUserParts(input, "input_text", add)
		return spans, nil
	}
	prompt := member(b, "prompt")
	switch {
	case isString(prompt):
		add(prompt)
	case len(prompt) > 0 && prompt[0] == '[':
		jsonscan.EachElem(prompt, func(p []byte) bool {
			if isString(p) {
				add(p)
			}
			return true
		})
	}
	return spans, nil
}

func responseSpans(body []byte) ([]span, error) {
	b, err := object(body)
	if err != nil {
		return nil, err
	}
	var spans []span
	add := func(v []byte) {
		o := offset(body, v)
		spans = append(spans, span{o, o + len(v)})
	}
	choices := member(b, "choices")
	if len(choices) == 0 || choices[0] != '[' {
		// An Anthropic Messages answer: its text blocks.
		textParts(member(b, "content"), "text", add)
		// An OpenAI Responses answer: the output_text of its messages.
		if output := member(b, "output"); len(output) > 0 && output[0] == '[' {
			jsonscan.EachElem(output, func(item []byte) bool {
				if len(item) > 0 && item[0] == '{' && stringValue(member(item, "type")) == "message" {
					textParts(member(item, "content"), "output_text", add)
				}
				return true
			})
		}
		return spans, nil
	}
	jsonscan.EachElem(choices, func(c []byte) bool {
		if len(c) == 0 || c[0] != '{' {
			return true
		}
		v := member(c, "text")
		if m := member(c, "message"); len(m) > 0 && m[0] == '{' {
			v = member(m, "content")
		}
		if isString(v) {
			add(v)
		}
		return true
	})
	return spans, nil
}

// lastUserParts calls add with the texts of input, the messages of a
// chat or Messages request or the input of a Responses request: input
// itself when it is a string, else the last user message's string
// content or each of its parts of type typ.
func lastUserParts(input []byte, typ string, add func([]byte)) {
	if isString(input) {
		add(input)
		return
	}
	if input[0] != '[' {
		return
	}
	var last []byte
	jsonscan.EachElem(input, func(m []byte) bool {
		if len(m) > 0 && m[0] == '{' && stringValue(member(m, "role")) == "user" {
			if t := member(m, "type"); t == nil || stringValue(t) == "message" {
				last = m
			}
		}
		return true
	})
	if last == nil {
		return
	}
	content := member(last, "content")
	if isString(content) {
		add(content)
		return
	}
	textParts(content, typ, add)
}

// textParts calls add with the text of each part of type typ of the
// JSON array parts.
func textParts(parts []byte, typ string, add func([]byte)) {
	if len(parts) == 0 || parts[0] != '[' {
		return
	}
	jsonscan.EachElem(parts, func(p []byte) bool {
		if len(p) > 0 && p[0] == '{' && stringValue(member(p, "type")) == typ {
			if t := member(p, "text"); isString(t) {
				add(t)
			}
		}
		return true
	})
}

// requestTypes maps an endpoint's method and path (without the gateway's
// prefix) to the name the allowedRequestTypes check uses.
var requestTypes = map[string]string{
	"POST /chat/completions":          "chatComplete",
	"POST /completions":               "complete",
	"POST /embeddings":                "embed",
	"POST /rerank":                    "rerank",
	"POST /moderations":               "moderate",
	"POST /images/generations":        "imageGenerate",
	"POST /audio/speech":              "createSpeech",
	"POST /audio/transcriptions":      "createTranscription",
	"POST /audio/translations":        "createTranslation",
	"GET /realtime":                   "realtime",
	"POST /files":                     "uploadFile",
	"GET /files":                      "listFiles",
	"GET /files/*":                    "retrieveFile",
	"DELETE /files/*":                 "deleteFile",
	"GET /files/*/content":            "retrieveFileContent",
	"POST /batches":                   "createBatch",
	"GET /batches":                    "listBatches",
	"GET /batches/*":                  "retrieveBatch",
	"POST /batches/*/cancel":          "cancelBatch",
	"GET /batches/*/output":           "getBatchOutput",
	"GET /fine_tuning/jobs":           "listFinetunes",
	"POST /fine_tuning/jobs":          "createFinetune",
	"GET /fine_tuning/jobs/*":         "retrieveFinetune",
	"POST /fine_tuning/jobs/*/cancel": "cancelFinetune",
	"POST /responses":                 "createModelResponse",
	"GET /responses/*":                "getModelResponse",
	"DELETE /responses/*":             "deleteModelResponse",
	"GET /responses/*/input_items":    "listResponseInputItems",
	"POST /messages":                  "messages",
}

// RequestType names the kind of a request from its method and its path
// below the gateway's prefix ("/chat/completions"), as the
// allowedRequestTypes check and the reference API name it: chatComplete,
// embed, createModelResponse, messages, … Any other request is "proxy".
func RequestType(method, path string) string {
	path = strings.TrimSuffix(path, "/")
	if t, ok := requestTypes[method+" "+path]; ok {
		return t
	}
	// An id in the second segment: /files/{id}, /batches/{id}/cancel, …
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i := 1; i < len(segs) && i <= 2; i++ {
		if segs[i] == "" {
			break
		}
		g := append([]string(nil), segs...)
		g[i] = "*"
		if t, ok := requestTypes[method+" /"+strings.Join(g, "/")]; ok {
			return t
		}
	}
	return "proxy"
}
