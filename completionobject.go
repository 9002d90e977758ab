package gateway

import (
	"encoding/json"
	"fmt"
)

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
	return decodeInto(data, (*completionFields)(c), "object", "choices")
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
	return encodeObject(f)
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
	return decodeInto(data, (*completionChoiceFields)(c), "finish_reason")
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
	return encodeObject(completionChoiceFields(c))
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
	return decodeInto(data, (*completionLogprobsFields)(l))
}

// MarshalJSON encodes l with its Extra members.
func (l CompletionLogprobs) MarshalJSON() ([]byte, error) {
	return encodeObject(completionLogprobsFields(l))
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
	return decodeInto(data, (*completionUsageFields)(u))
}

// MarshalJSON encodes u with its Extra members.
func (u CompletionUsage) MarshalJSON() ([]byte, error) {
	return encodeObject(completionUsageFields(u))
}
