package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
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
	return decodeInto(data, (*completionRequestFields)(r))
}

// MarshalJSON encodes r with its Extra members.
func (r CompletionRequest) MarshalJSON() ([]byte, error) {
	return encodeObject(completionRequestFields(r))
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
	if err := checkModel(r.Model); err != nil {
		return err
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

// checkModel refuses a model over maxModelBytes (docs/architecture.md, Trust): it becomes a
// log field, a metrics label and a part of the cache key.
func checkModel(m string) error {
	if len(m) > maxModelBytes {
		return invalidValue("model", "model must be at most "+strconv.Itoa(maxModelBytes)+" bytes")
	}
	return nil
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
	return decodeInto(data, (*streamOptionsFields)(o))
}

// MarshalJSON encodes o with its Extra members.
func (o StreamOptions) MarshalJSON() ([]byte, error) {
	return encodeObject(streamOptionsFields(o))
}

// The helpers below read JSON already checked by json.Valid, so they only
// find boundaries; none of them is safe on other input.
