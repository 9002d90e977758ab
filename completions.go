package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error codes of the typed endpoints, as written in the "code" field of an
// error body.
const (
	CodeInvalidJSON      = "invalid_json"               // the body or a field is not the JSON the endpoint takes
	CodeInvalidValue     = "invalid_value"              // a field or query parameter is out of its bounds
	CodeMissingParameter = "missing_required_parameter" // a required field is absent
)

// Bounds of a completion request, from the spec's Limits section.
const (
	maxCompletionN        = 128
	maxCompletionBestOf   = 20
	maxCompletionLogprobs = 5
	maxStopSequences      = 4
	maxLogitBias          = 100
)

// CompletionRequest is the body of POST /completions. Optional fields are
// pointers (or zero values) so that what the caller left out stays out: a
// decoded request encodes back to the same document, unknown fields and
// nulls included. The zero value is not valid: Model is required.
//
// A CompletionRequest is a plain value; it is not safe for concurrent
// modification.
type CompletionRequest struct {
	Model            string         `json:"model,omitempty"`             // required: the model id
	Prompt           Prompt         `json:"prompt,omitzero"`             // string, strings, tokens or token arrays
	BestOf           *int           `json:"best_of,omitempty"`           // 0–20, > N when both set, never with Stream
	Echo             *bool          `json:"echo,omitempty"`              // also return the prompt
	FrequencyPenalty *float64       `json:"frequency_penalty,omitempty"` // −2 to 2
	LogitBias        LogitBias      `json:"logit_bias,omitempty"`        // token id → bias, −100 to 100
	Logprobs         *int           `json:"logprobs,omitempty"`          // 0–5
	MaxTokens        *int           `json:"max_tokens,omitempty"`        // at least 0
	N                *int           `json:"n,omitempty"`                 // 1–128
	PresencePenalty  *float64       `json:"presence_penalty,omitempty"`  // −2 to 2
	Seed             *int64         `json:"seed,omitempty"`              // best-effort determinism
	Stop             Stop           `json:"stop,omitzero"`               // at most 4 sequences
	Stream           *bool          `json:"stream,omitempty"`            // answer with server-sent events
	StreamOptions    *StreamOptions `json:"stream_options,omitempty"`    // only with Stream true
	Suffix           *string        `json:"suffix,omitempty"`            // text after an inserted completion
	Temperature      *float64       `json:"temperature,omitempty"`       // 0 to 2
	TopP             *float64       `json:"top_p,omitempty"`             // 0 to 1
	User             string         `json:"user,omitempty"`              // end-user identifier

	// Extra holds the members the fields above do not represent: members
	// this package does not know (a provider's own parameters), and
	// members whose value a field cannot tell from its zero value, such as
	// an explicit null. MarshalJSON writes them back; a field that is set
	// wins over an Extra member of the same name.
	Extra map[string]json.RawMessage `json:"-"`
}

type completionRequestFields CompletionRequest

// UnmarshalJSON decodes a completion request, keeping unknown members in
// Extra. Member names match exactly (encoding/json would also accept
// "Model" for "model"; such a member is kept in Extra instead). A member
// of the wrong type is a *JSONFieldError naming it.
func (r *CompletionRequest) UnmarshalJSON(data []byte) error {
	var f completionRequestFields
	extra, err := decodeObject(data, &f)
	if err != nil {
		return err
	}
	f.Extra = extra
	*r = CompletionRequest(f)
	return nil
}

// MarshalJSON encodes r with its Extra members.
func (r CompletionRequest) MarshalJSON() ([]byte, error) {
	return encodeObject(completionRequestFields(r), r.Extra)
}

// Streaming reports whether r asks for a streamed response.
func (r *CompletionRequest) Streaming() bool { return r.Stream != nil && *r.Stream }

// Validate checks r against every bound of the completion endpoint: model
// present; n 1–128; best_of 0–20, greater than n when both are set, and
// never with stream; logprobs 0–5; at most 4 stop sequences; max_tokens at
// least 0; temperature 0–2; top_p 0–1; frequency and presence penalties
// −2 to 2; logit_bias keys token ids and values −100 to 100; stream_options
// only with stream true; the prompt in one of its four forms. The first
// violation is returned as a 400 invalid_request_error *Error whose Param
// names the field; fields are checked model, prompt, n, best_of, then the
// others in alphabetical order.
func (r *CompletionRequest) Validate() error {
	if r.Model == "" {
		return &Error{Status: http.StatusBadRequest, Type: TypeInvalidRequest, Code: CodeMissingParameter,
			Param: "model", Message: "you must provide a model parameter"}
	}
	if err := r.Prompt.validate(); err != nil {
		return err
	}
	// n before best_of, so that best_of is not blamed for an n out of
	// bounds.
	if r.N != nil {
		if err := intRange("n", *r.N, 1, maxCompletionN); err != nil {
			return err
		}
	}
	if r.BestOf != nil {
		if err := intRange("best_of", *r.BestOf, 0, maxCompletionBestOf); err != nil {
			return err
		}
		if r.N != nil && *r.BestOf <= *r.N {
			return invalidValue("best_of", fmt.Sprintf("best_of must be greater than n (best_of %d, n %d)", *r.BestOf, *r.N))
		}
		if r.Streaming() {
			return invalidValue("best_of", "best_of cannot be used with stream: results of best_of cannot be streamed")
		}
	}
	if err := floatRange("frequency_penalty", r.FrequencyPenalty, -2, 2); err != nil {
		return err
	}
	if err := validateLogitBias(r.LogitBias); err != nil {
		return err
	}
	if r.Logprobs != nil {
		if err := intRange("logprobs", *r.Logprobs, 0, maxCompletionLogprobs); err != nil {
			return err
		}
	}
	if r.MaxTokens != nil && *r.MaxTokens < 0 {
		return invalidValue("max_tokens", fmt.Sprintf("max_tokens must be at least 0, got %d", *r.MaxTokens))
	}
	if err := floatRange("presence_penalty", r.PresencePenalty, -2, 2); err != nil {
		return err
	}
	if err := r.Stop.validate(); err != nil {
		return err
	}
	if r.StreamOptions != nil && !r.Streaming() {
		return invalidValue("stream_options", "stream_options can only be set when stream is true")
	}
	if err := floatRange("temperature", r.Temperature, 0, 2); err != nil {
		return err
	}
	return floatRange("top_p", r.TopP, 0, 1)
}

func invalidValue(param, msg string) *Error {
	return badRequest(CodeInvalidValue, param, msg)
}

func intRange(param string, v, lo, hi int) error {
	if v < lo || v > hi {
		return invalidValue(param, fmt.Sprintf("%s must be between %d and %d, got %d", param, lo, hi, v))
	}
	return nil
}

func floatRange(param string, v *float64, lo, hi float64) error {
	if v == nil || (*v >= lo && *v <= hi) {
		return nil
	}
	return invalidValue(param, fmt.Sprintf("%s must be between %g and %g, got %g", param, lo, hi, *v))
}

// LogitBias maps token ids, written as decimal strings, to a bias from
// -100 to 100 added to their logits before sampling.
type LogitBias map[string]float64

// UnmarshalJSON decodes the map, refusing null values, which no bias means.
func (b *LogitBias) UnmarshalJSON(data []byte) error {
	var m map[string]*float64
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	if m == nil {
		*b = nil
		return nil
	}
	out := make(LogitBias, len(m))
	for k, v := range m {
		if v == nil {
			return fmt.Errorf("the bias of token %q is null", k)
		}
		out[k] = *v
	}
	*b = out
	return nil
}

func validateLogitBias(m LogitBias) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys) // report the same key every time
	for _, k := range keys {
		if id, err := strconv.ParseUint(k, 10, 63); err != nil || strconv.FormatUint(id, 10) != k {
			return invalidValue("logit_bias", fmt.Sprintf("logit_bias keys must be token ids (non-negative integers), got %q", k))
		}
		if v := m[k]; !(v >= -maxLogitBias && v <= maxLogitBias) || v != math.Trunc(v) {
			return invalidValue("logit_bias", fmt.Sprintf("logit_bias values must be integers from -100 to 100, got %g for token %s", v, k))
		}
	}
	return nil
}

// Prompt is the prompt of a completion request, in one of its four JSON
// forms: a string (Text), an array of strings (Texts), an array of token ids
// (Tokens) or an array of token arrays (TokenLists). At most one form is
// set. The zero value is no prompt: the member is left out and the model
// starts as from a new document.
type Prompt struct {
	Text       *string
	Texts      []string
	Tokens     []int
	TokenLists [][]int
}

// TextPrompt returns a Prompt holding the single string s.
func TextPrompt(s string) Prompt { return Prompt{Text: &s} }

// IsZero reports whether p holds no prompt.
func (p Prompt) IsZero() bool {
	return p.Text == nil && p.Texts == nil && p.Tokens == nil && p.TokenLists == nil
}

func (p Prompt) forms() int {
	n := 0
	for _, set := range []bool{p.Text != nil, p.Texts != nil, p.Tokens != nil, p.TokenLists != nil} {
		if set {
			n++
		}
	}
	return n
}

// MarshalJSON encodes the form that is set; the zero Prompt is null.
func (p Prompt) MarshalJSON() ([]byte, error) {
	switch {
	case p.forms() > 1:
		return nil, errors.New("gateway: a Prompt must hold only one of Text, Texts, Tokens and TokenLists")
	case p.Text != nil:
		return json.Marshal(*p.Text)
	case p.Texts != nil:
		return json.Marshal(p.Texts)
	case p.Tokens != nil:
		return json.Marshal(p.Tokens)
	case p.TokenLists != nil:
		return json.Marshal(p.TokenLists)
	}
	return []byte("null"), nil
}

var errPromptShape = errors.New("must be a string, an array of strings, an array of token ids or an array of token arrays")

// UnmarshalJSON decodes any of the four forms. An empty array is read as
// an empty array of strings; null leaves p unchanged.
func (p *Prompt) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return errPromptShape
	}
	var q Prompt
	switch data[0] {
	case 'n':
		return nil
	case '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return errPromptShape
		}
		q.Text = &s
	case '[':
		var elems []json.RawMessage
		if err := json.Unmarshal(data, &elems); err != nil {
			return errPromptShape
		}
		var target any
		switch {
		case len(elems) == 0 || bytes.HasPrefix(bytes.TrimSpace(elems[0]), []byte(`"`)):
			target = &q.Texts
		case bytes.HasPrefix(bytes.TrimSpace(elems[0]), []byte(`[`)):
			target = &q.TokenLists
		default:
			target = &q.Tokens
		}
		if target == &q.TokenLists {
			// Decoded through pointers so that a null element is refused
			// rather than read as token 0.
			var lists [][]*int
			if err := json.Unmarshal(data, &lists); err != nil {
				return errPromptShape
			}
			q.TokenLists = make([][]int, len(lists))
			for i, l := range lists {
				if l == nil {
					return errPromptShape
				}
				q.TokenLists[i] = make([]int, len(l))
				for j, t := range l {
					if t == nil {
						return errPromptShape
					}
					q.TokenLists[i][j] = *t
				}
			}
		} else if err := json.Unmarshal(data, target); err != nil {
			return errPromptShape
		}
		if q.Texts == nil && q.Tokens == nil && q.TokenLists == nil {
			q.Texts = []string{}
		}
		// An element that decoded as null is not one of the four forms.
		for _, e := range elems {
			if bytes.Equal(bytes.TrimSpace(e), []byte("null")) {
				return errPromptShape
			}
		}
	default:
		return errPromptShape
	}
	*p = q
	return nil
}

func (p Prompt) validate() error {
	if p.forms() > 1 {
		return invalidValue("prompt", "prompt must hold only one form")
	}
	if p.Tokens != nil && len(p.Tokens) == 0 {
		return invalidValue("prompt", "prompt token arrays must not be empty")
	}
	for _, l := range p.TokenLists {
		if len(l) == 0 {
			return invalidValue("prompt", "prompt token arrays must not be empty")
		}
	}
	return nil
}

// Stop is the stop member of a completion request: one sequence written as
// a string (Text), or an array of at most 4 sequences (Sequences). At most
// one form is set; the zero value is no stop sequence and is left out.
type Stop struct {
	Text      *string
	Sequences []string
}

// IsZero reports whether s holds no stop sequence.
func (s Stop) IsZero() bool { return s.Text == nil && s.Sequences == nil }

// MarshalJSON encodes the form that is set; the zero Stop is null.
func (s Stop) MarshalJSON() ([]byte, error) {
	switch {
	case s.Text != nil && s.Sequences != nil:
		return nil, errors.New("gateway: a Stop must hold only one of Text and Sequences")
	case s.Text != nil:
		return json.Marshal(*s.Text)
	case s.Sequences != nil:
		return json.Marshal(s.Sequences)
	}
	return []byte("null"), nil
}

// UnmarshalJSON decodes a string or an array of strings; null leaves s
// unchanged.
func (s *Stop) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	var q Stop
	switch {
	case bytes.Equal(data, []byte("null")):
		return nil
	case len(data) > 0 && data[0] == '"':
		var t string
		if err := json.Unmarshal(data, &t); err != nil {
			return err
		}
		q.Text = &t
	default:
		var seqs []*string
		if err := json.Unmarshal(data, &seqs); err != nil || seqs == nil {
			return errors.New("must be a string or an array of strings")
		}
		q.Sequences = make([]string, len(seqs))
		for i, t := range seqs {
			if t == nil {
				return errors.New("must be a string or an array of strings")
			}
			q.Sequences[i] = *t
		}
	}
	*s = q
	return nil
}

func (s Stop) validate() error {
	if s.Text != nil && s.Sequences != nil {
		return invalidValue("stop", "stop must be a string or an array, not both")
	}
	if s.Sequences != nil && len(s.Sequences) == 0 {
		return invalidValue("stop", "stop must hold at least one sequence when it is an array")
	}
	if len(s.Sequences) > maxStopSequences {
		return invalidValue("stop", fmt.Sprintf("stop takes at most %d sequences, got %d", maxStopSequences, len(s.Sequences)))
	}
	return nil
}

// StreamOptions are the stream_options of a completion request, allowed
// only with stream true.
type StreamOptions struct {
	IncludeUsage       *bool `json:"include_usage,omitempty"`       // a last event carries the usage
	IncludeObfuscation *bool `json:"include_obfuscation,omitempty"` // pad events against side channels

	// Extra holds unknown members and explicit nulls; see
	// CompletionRequest.Extra.
	Extra map[string]json.RawMessage `json:"-"`
}

type streamOptionsFields StreamOptions

// UnmarshalJSON decodes stream options, keeping unknown members in Extra.
func (o *StreamOptions) UnmarshalJSON(data []byte) error {
	var f streamOptionsFields
	extra, err := decodeObject(data, &f)
	if err != nil {
		return err
	}
	f.Extra = extra
	*o = StreamOptions(f)
	return nil
}

// MarshalJSON encodes o with its Extra members.
func (o StreamOptions) MarshalJSON() ([]byte, error) {
	return encodeObject(streamOptionsFields(o), o.Extra)
}

// Completion is the response of POST /completions, and each event of a
// streamed one (both share this shape). Object is always "text_completion";
// an empty Object is written as that. Decoding keeps unknown members in
// Extra, so a provider's additions survive a round trip.
type Completion struct {
	ID                string             `json:"id"`
	Choices           []CompletionChoice `json:"choices"`
	Created           int64              `json:"created"` // Unix time in seconds
	Model             string             `json:"model"`
	Object            string             `json:"object"`                       // "text_completion"
	SystemFingerprint string             `json:"system_fingerprint,omitempty"` // backend configuration, for Seed
	Usage             *CompletionUsage   `json:"usage,omitempty"`

	// Extra holds unknown members and values the fields cannot tell from
	// their zero value; see CompletionRequest.Extra.
	Extra map[string]json.RawMessage `json:"-"`
}

// ObjectTextCompletion is the object value of a Completion.
const ObjectTextCompletion = "text_completion"

type completionFields Completion

// UnmarshalJSON decodes a completion, keeping unknown members in Extra.
func (c *Completion) UnmarshalJSON(data []byte) error {
	var f completionFields
	extra, err := decodeObject(data, &f, "object", "choices")
	if err != nil {
		return err
	}
	f.Extra = extra
	*c = Completion(f)
	return nil
}

// MarshalJSON encodes c with its Extra members. Nil Choices are written as
// an empty array.
func (c Completion) MarshalJSON() ([]byte, error) {
	f := completionFields(c)
	if f.Object == "" && c.Extra["object"] == nil {
		f.Object = ObjectTextCompletion
	}
	if f.Choices == nil && c.Extra["choices"] == nil {
		f.Choices = []CompletionChoice{}
	}
	return encodeObject(f, c.Extra)
}

// Validate checks the shape rules of a completion: object text_completion
// (an empty Object reads as that), and finish_reason, where given, one of
// stop, length and content_filter. Violations are *Error values naming the
// member in Param.
func (c *Completion) Validate() error {
	if c.Object != "" && c.Object != ObjectTextCompletion {
		return invalidValue("object", fmt.Sprintf("object must be %q, got %q", ObjectTextCompletion, c.Object))
	}
	for i, ch := range c.Choices {
		switch ch.FinishReason {
		case "", "stop", "length", "content_filter":
		default:
			return invalidValue(fmt.Sprintf("choices[%d].finish_reason", i), fmt.Sprintf("unknown finish_reason %q", ch.FinishReason))
		}
	}
	return nil
}

// CompletionChoice is one choice of a Completion. FinishReason is empty
// while a streamed choice is still going (the provider writes null), and
// an empty FinishReason is written as null.
type CompletionChoice struct {
	FinishReason string              `json:"finish_reason"` // stop, length or content_filter
	Index        int                 `json:"index"`
	Logprobs     *CompletionLogprobs `json:"logprobs"` // nil is written as null
	Text         string              `json:"text"`

	// Extra holds unknown members and values the fields cannot tell from
	// their zero value (such as a null finish_reason); see
	// CompletionRequest.Extra.
	Extra map[string]json.RawMessage `json:"-"`
}

type completionChoiceFields CompletionChoice

// UnmarshalJSON decodes a choice, keeping unknown members in Extra.
func (c *CompletionChoice) UnmarshalJSON(data []byte) error {
	var f completionChoiceFields
	extra, err := decodeObject(data, &f, "finish_reason")
	if err != nil {
		return err
	}
	f.Extra = extra
	*c = CompletionChoice(f)
	return nil
}

// MarshalJSON encodes c with its Extra members. An empty FinishReason is
// written as null.
func (c CompletionChoice) MarshalJSON() ([]byte, error) {
	if c.FinishReason == "" && c.Extra["finish_reason"] == nil {
		extra := make(map[string]json.RawMessage, len(c.Extra)+1)
		for k, v := range c.Extra {
			extra[k] = v
		}
		extra["finish_reason"] = jsonNull
		c.Extra = extra
	}
	return encodeObject(completionChoiceFields(c), c.Extra)
}

// CompletionLogprobs are the log probabilities of a choice. A null entry of
// TokenLogprobs (the first token of an echoed prompt) is a nil pointer; a
// null entry of TopLogprobs is a nil map.
type CompletionLogprobs struct {
	TextOffset    []int                `json:"text_offset,omitempty"`
	TokenLogprobs []*float64           `json:"token_logprobs,omitempty"`
	Tokens        []string             `json:"tokens,omitempty"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs,omitempty"`

	// Extra holds unknown members and values the fields cannot tell from
	// their zero value; see CompletionRequest.Extra.
	Extra map[string]json.RawMessage `json:"-"`
}

type completionLogprobsFields CompletionLogprobs

// UnmarshalJSON decodes log probabilities, keeping unknown members in Extra.
func (l *CompletionLogprobs) UnmarshalJSON(data []byte) error {
	var f completionLogprobsFields
	extra, err := decodeObject(data, &f)
	if err != nil {
		return err
	}
	f.Extra = extra
	*l = CompletionLogprobs(f)
	return nil
}

// MarshalJSON encodes l with its Extra members.
func (l CompletionLogprobs) MarshalJSON() ([]byte, error) {
	return encodeObject(completionLogprobsFields(l), l.Extra)
}

// CompletionUsage is the token usage of a completion. Breakdowns such as
// completion_tokens_details and prompt_tokens_details are kept in Extra as
// the provider wrote them.
type CompletionUsage struct {
	CompletionTokens int64 `json:"completion_tokens"`
	PromptTokens     int64 `json:"prompt_tokens"`
	TotalTokens      int64 `json:"total_tokens"`

	// Extra holds unknown members and values the fields cannot tell from
	// their zero value; see CompletionRequest.Extra.
	Extra map[string]json.RawMessage `json:"-"`
}

type completionUsageFields CompletionUsage

// UnmarshalJSON decodes usage, keeping unknown members in Extra.
func (u *CompletionUsage) UnmarshalJSON(data []byte) error {
	var f completionUsageFields
	extra, err := decodeObject(data, &f)
	if err != nil {
		return err
	}
	f.Extra = extra
	*u = CompletionUsage(f)
	return nil
}

// MarshalJSON encodes u with its Extra members.
func (u CompletionUsage) MarshalJSON() ([]byte, error) {
	return encodeObject(completionUsageFields(u), u.Extra)
}

// serveCompletions serves POST /completions: the body is read (up to
// Options.MaxBodyBytes, else 413), checked (checkCompletionBody, else the
// lossless decode and Validate: 400 naming the field), then sent as the
// caller wrote it to the selected provider, whose answer, streamed or not,
// comes back unchanged. Other methods get 405 with Allow: POST, since
// providers serve nothing else there.
func (g *Gateway) serveCompletions(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		methodNotAllowed(w, r, http.MethodPost)
		return
	}
	body, err := readBody(w, r, g.opts.MaxBodyBytes)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	model, ok := checkCompletionBody(body)
	if !ok {
		// The full decode is the authority: it names the field at fault,
		// or accepts what the quick check declined.
		var req CompletionRequest
		if err = decodeBody(body, &req); err == nil {
			err = req.Validate()
		}
		model = req.Model
	}
	if st := stateFrom(r.Context()); st != nil {
		st.log.Model = model
	}
	if err != nil {
		WriteError(w, r, err)
		return
	}
	g.forward(w, r, body)
}

// checkCompletionBody is the quick check of a POST /completions body: it
// reports whether decodeBody and Validate would accept body, and its
// model, without building the lossless CompletionRequest, which the route
// does not need since the body is forwarded as sent. It is conservative:
// ok is true only when the full decode would accept the body
// (FuzzCheckCompletionBody holds it to that); it is false for every body the full
// decode refuses, and for rare forms it does not read itself (escaped
// member names, an escaped model, a member given twice with a value that
// fails on its first occurrence), which the full decode then settles.
//
// Member names match exactly, as in decodeObject: "N" is not "n".
func checkCompletionBody(body []byte) (model string, ok bool) {
	if !json.Valid(body) {
		return "", false
	}
	i := skipJSONSpace(body, 0)
	if i == len(body) || body[i] != '{' {
		return "", false
	}
	var (
		req                          CompletionRequest
		n, bestOf, logprobs, maxToks int
		freq, pres, temp, topP       float64
		echo, stream                 bool
		so                           StreamOptions
	)
	isNull := func(v []byte) bool { return v[0] == 'n' }
	// The setters point the request's fields at the locals above, so
	// that Validate, the one statement of the bounds, reads them.
	setInt := func(dst **int, v []byte, val *int) bool {
		if isNull(v) {
			*dst = nil
			return true
		}
		x, ok := jsonInt(v, strconv.IntSize)
		*val, *dst = int(x), val
		return ok
	}
	setFloat := func(dst **float64, v []byte, val *float64) bool {
		if isNull(v) {
			*dst = nil
			return true
		}
		x, ok := jsonFloat(v)
		*val, *dst = x, val
		return ok
	}
	setBool := func(dst **bool, v []byte, val *bool) bool {
		if isNull(v) {
			*dst = nil
			return true
		}
		*val, *dst = v[0] == 't', val
		return v[0] == 't' || v[0] == 'f'
	}
	ok = eachJSONMember(body[i:], func(key, v []byte) bool {
		if bytes.IndexByte(key, '\\') >= 0 {
			return false // an escaped name could spell a known one
		}
		switch string(key) {
		case "model":
			switch {
			case isNull(v):
				model = ""
			case v[0] == '"' && bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v):
				// encoding/json would replace invalid UTF-8: the full
				// decode reads those.
				model = string(v[1 : len(v)-1])
			default:
				return false
			}
			req.Model = model
			return true
		case "suffix", "user":
			return isNull(v) || v[0] == '"'
		case "prompt":
			return isNull(v) || checkPrompt(v)
		case "stop":
			return isNull(v) || checkStop(v)
		case "logit_bias":
			return isNull(v) || checkLogitBias(v)
		case "stream_options":
			if isNull(v) {
				req.StreamOptions = nil
				return true
			}
			req.StreamOptions = &so
			return checkStreamOptions(v)
		case "n":
			return setInt(&req.N, v, &n)
		case "best_of":
			return setInt(&req.BestOf, v, &bestOf)
		case "logprobs":
			return setInt(&req.Logprobs, v, &logprobs)
		case "max_tokens":
			return setInt(&req.MaxTokens, v, &maxToks)
		case "seed":
			if isNull(v) {
				return true
			}
			_, ok := jsonInt(v, 64)
			return ok
		case "frequency_penalty":
			return setFloat(&req.FrequencyPenalty, v, &freq)
		case "presence_penalty":
			return setFloat(&req.PresencePenalty, v, &pres)
		case "temperature":
			return setFloat(&req.Temperature, v, &temp)
		case "top_p":
			return setFloat(&req.TopP, v, &topP)
		case "echo":
			return setBool(&req.Echo, v, &echo)
		case "stream":
			return setBool(&req.Stream, v, &stream)
		}
		return true // a member the gateway does not check
	})
	if !ok || req.Validate() != nil {
		return "", false
	}
	return model, true
}

// readBody reads the whole request body, at most limit bytes; a longer
// body is an *http.MaxBytesError, which errorFor maps to 413.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return []byte{}, nil
	}
	if r.ContentLength > limit {
		return nil, &http.MaxBytesError{Limit: limit}
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
}

// decodeBody decodes a JSON request body into v, turning decoding errors
// into 400s: a syntax error without Param, a member of the wrong type with
// Param naming the member.
func decodeBody(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return badRequest(CodeInvalidJSON, "", "the request body must be a JSON object")
	}
	err := json.Unmarshal(body, v)
	if err == nil {
		return nil
	}
	var fe *JSONFieldError
	if errors.As(err, &fe) {
		param := fe.Path
		if i := strings.IndexAny(param, ".["); i > 0 {
			param = param[:i]
		}
		return &Error{Status: http.StatusBadRequest, Type: TypeInvalidRequest, Code: CodeInvalidJSON, Param: param,
			Message: "invalid value for " + fe.Path + ": " + fe.Err.Error(), Err: err}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field == "" {
		return &Error{Status: http.StatusBadRequest, Type: TypeInvalidRequest, Code: CodeInvalidJSON,
			Message: "the request body must be a JSON object", Err: err}
	}
	return &Error{Status: http.StatusBadRequest, Type: TypeInvalidRequest, Code: CodeInvalidJSON,
		Message: "the request body is not valid JSON: " + strings.TrimPrefix(err.Error(), "json: "), Err: err}
}

// JSONFieldError reports a member of a JSON object whose value does not
// fit the typed field, e.g. a string where an integer belongs. Path names
// the member, with the names of enclosing members before it
// ("choices.logprobs").
type JSONFieldError struct {
	Path string
	Err  error
}

// Error returns the path and the decoding error.
func (e *JSONFieldError) Error() string {
	return "gateway: invalid JSON for " + e.Path + ": " + strings.TrimPrefix(e.Err.Error(), "json: ")
}

// Unwrap returns the decoding error.
func (e *JSONFieldError) Unwrap() error { return e.Err }

// jsonField is one json-tagged field of a struct.
type jsonField struct {
	index     int
	name      string
	omitEmpty bool
	omitZero  bool
}

// jsonFields lists the json-tagged fields of struct type t, in order.
func jsonFields(t reflect.Type) []jsonField {
	fields := make([]jsonField, 0, t.NumField())
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, ok := sf.Tag.Lookup("json")
		if !ok || tag == "-" || !sf.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		f := jsonField{index: i, name: name}
		for o := range strings.SplitSeq(opts, ",") {
			switch o {
			case "omitempty":
				f.omitEmpty = true
			case "omitzero":
				f.omitZero = true
			}
		}
		fields = append(fields, f)
	}
	return fields
}

// omitted reports whether encoding/json would leave v out.
func (f jsonField) omitted(v reflect.Value) bool {
	return (f.omitEmpty && isEmptyValue(v)) || (f.omitZero && isZero(v))
}

// blank reports whether v cannot be told from its zero value when encoded.
func (f jsonField) blank(v reflect.Value) bool {
	return isZero(v) || f.omitted(v)
}

func isZero(v reflect.Value) bool {
	if z, ok := v.Interface().(interface{ IsZero() bool }); ok {
		return z.IsZero()
	}
	return v.IsZero()
}

func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

var jsonNull = []byte("null")

// decodeObject decodes the JSON object data into the json-tagged fields of
// the struct dst points to, matching member names exactly, and returns the
// members no field represents: unknown ones, and those whose decoded field
// cannot be told from its zero value when encoded again (null where the
// field is omitted when empty, 0 where it is omitted, and so on). null for
// the whole object leaves dst unchanged.
//
// The members named in keep are kept in the result whenever their field is
// blank: MarshalJSON fills those fields with a default when they are blank,
// so their explicit value must be remembered.
func decodeObject(data []byte, dst any, keep ...string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, nil
	}
	rv := reflect.ValueOf(dst).Elem()
	for _, f := range jsonFields(rv.Type()) {
		raw, ok := m[f.name]
		if !ok {
			continue
		}
		fv := rv.Field(f.index)
		if err := json.Unmarshal(raw, fv.Addr().Interface()); err != nil {
			var fe *JSONFieldError
			if errors.As(err, &fe) {
				return nil, &JSONFieldError{Path: f.name + "." + fe.Path, Err: fe.Err}
			}
			return nil, &JSONFieldError{Path: f.name, Err: plainJSONError(err)}
		}
		if f.blank(fv) && (f.omitted(fv) || slices.Contains(keep, f.name) || !sameEncoding(fv, raw)) {
			continue // kept in m, hence in Extra
		}
		delete(m, f.name)
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

// plainJSONError drops the Go type names from a decoding error, which mean
// nothing to a caller writing JSON.
func plainJSONError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Type != nil {
		return fmt.Errorf("expected %s, got %s", jsonKind(te.Type), te.Value)
	}
	return err
}

// jsonKind describes the JSON a Go type decodes from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer in range"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

// sameEncoding reports whether v encodes to the same JSON as raw.
func sameEncoding(v reflect.Value, raw json.RawMessage) bool {
	enc, err := json.Marshal(v.Interface())
	if err != nil {
		return false
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return false
	}
	return bytes.Equal(enc, buf.Bytes())
}

// encodeObject encodes the json-tagged fields of the struct v, then the
// members of extra no field wrote, sorted by name. A field whose value is
// blank yields to an extra member of the same name, so values decodeObject
// kept there come back as they were.
func encodeObject(v any, extra map[string]json.RawMessage) ([]byte, error) {
	rv := reflect.ValueOf(v)
	fields := jsonFields(rv.Type())
	var buf bytes.Buffer
	buf.WriteByte('{')
	first := true
	member := func(name string, val []byte) {
		if !first {
			buf.WriteByte(',')
		}
		first = false
		k, _ := json.Marshal(name)
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(val)
	}
	known := make(map[string]bool, len(fields))
	for _, f := range fields {
		known[f.name] = true
		fv := rv.Field(f.index)
		if raw, ok := extra[f.name]; ok && f.blank(fv) {
			if raw == nil {
				raw = jsonNull
			}
			member(f.name, raw)
			continue
		}
		if f.omitted(fv) {
			continue
		}
		b, err := json.Marshal(fv.Interface())
		if err != nil {
			return nil, err
		}
		member(f.name, b)
	}
	names := make([]string, 0, len(extra))
	for k := range extra {
		if !known[k] {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		raw := extra[k]
		if raw == nil {
			raw = jsonNull
		}
		member(k, raw)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// The helpers below read JSON already checked by json.Valid, so they only
// find boundaries; none of them is safe on other input.

func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipJSONString returns the index after the string that starts at b[i].
func skipJSONString(b []byte, i int) int {
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

// skipJSONValue returns the index after the value that starts at b[i].
func skipJSONValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipJSONString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipJSONString(b, i)
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

// eachJSONMember calls fn with the name (between its quotes, escapes
// kept) and the value of each member of the object b, in order, while fn
// returns true. It reports whether fn always did.
func eachJSONMember(b []byte, fn func(name, v []byte) bool) bool {
	i := skipJSONSpace(b, 0) + 1 // past '{'
	for {
		i = skipJSONSpace(b, i)
		if b[i] == ',' {
			i = skipJSONSpace(b, i+1)
		}
		if b[i] == '}' {
			return true
		}
		end := skipJSONString(b, i)
		name := b[i+1 : end-1]
		i = skipJSONSpace(b, end) // at ':'
		i = skipJSONSpace(b, i+1) // at the value
		end = skipJSONValue(b, i)
		if !fn(name, b[i:end]) {
			return false
		}
		i = end
	}
}

// eachJSONElem calls fn with each element of the array b, in order, while
// fn returns true. It reports whether fn always did.
func eachJSONElem(b []byte, fn func(v []byte) bool) bool {
	i := 1 // past '['
	for {
		i = skipJSONSpace(b, i)
		if b[i] == ',' {
			i = skipJSONSpace(b, i+1)
		}
		if b[i] == ']' {
			return true
		}
		end := skipJSONValue(b, i)
		if !fn(b[i:end]) {
			return false
		}
		i = end
	}
}

// jsonInt reads v as encoding/json reads an integer of the given bit
// size: digits with an optional minus sign, in range; a fraction or an
// exponent is not an integer.
func jsonInt(v []byte, bits int) (int64, bool) {
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

// jsonFloat reads v as encoding/json reads a float64.
func jsonFloat(v []byte) (float64, bool) {
	if v[0] != '-' && (v[0] < '0' || v[0] > '9') {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	return f, err == nil
}

// checkPrompt reports whether v is a prompt Prompt.UnmarshalJSON and
// Prompt.validate accept: a string, or an array of strings, of integers or
// of non-empty integer arrays, without null elements.
func checkPrompt(v []byte) bool {
	switch v[0] {
	case '"':
		return true
	case '[':
	default:
		return false
	}
	var first byte
	return eachJSONElem(v, func(e []byte) bool {
		if first == 0 {
			first = e[0]
			if first == '-' || first >= '0' && first <= '9' {
				first = '0'
			}
		}
		switch first {
		case '"':
			return e[0] == '"'
		case '0':
			_, ok := jsonInt(e, strconv.IntSize)
			return ok
		case '[':
			n := 0
			ok := e[0] == '[' && eachJSONElem(e, func(t []byte) bool {
				n++
				_, ok := jsonInt(t, strconv.IntSize)
				return ok
			})
			return ok && n > 0
		}
		return false
	})
}

// checkStop reports whether v is a stop Stop.UnmarshalJSON and
// Stop.validate accept: a string, or an array of 1 to 4 strings.
func checkStop(v []byte) bool {
	if v[0] == '"' {
		return true
	}
	n := 0
	ok := v[0] == '[' && eachJSONElem(v, func(e []byte) bool {
		n++
		return e[0] == '"' && n <= maxStopSequences
	})
	return ok && n > 0
}

// checkLogitBias reports whether v is a logit_bias validateLogitBias
// accepts: an object whose names are token ids written plainly and whose
// values are integers from -100 to 100.
func checkLogitBias(v []byte) bool {
	return v[0] == '{' && eachJSONMember(v, func(name, b []byte) bool {
		if len(name) == 0 || name[0] == '-' || len(name) > 1 && name[0] == '0' {
			return false
		}
		if _, ok := jsonInt(name, 64); !ok {
			return false
		}
		f, ok := jsonFloat(b)
		return ok && f >= -maxLogitBias && f <= maxLogitBias && f == math.Trunc(f)
	})
}

// checkStreamOptions reports whether v is stream_options StreamOptions
// decodes: an object whose include_usage and include_obfuscation are
// booleans or null.
func checkStreamOptions(v []byte) bool {
	return v[0] == '{' && eachJSONMember(v, func(name, b []byte) bool {
		switch string(name) {
		case "include_usage", "include_obfuscation":
			return b[0] == 't' || b[0] == 'f' || b[0] == 'n'
		}
		return bytes.IndexByte(name, '\\') < 0
	})
}
