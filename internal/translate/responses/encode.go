package responses

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"

	"github.com/modelgateway/gateway/internal/wire"
)

// Errors of AppendJSON where json.Marshal fails too: a temperature or
// top_p JSON cannot hold, and a raw message that is empty but not nil
// (json.Marshal writes a nil one as null).
var (
	errNotFinite = errors.New("responses: a temperature or top_p that is not a finite number")
	errEmptyRaw  = errors.New("responses: an empty raw message")
)

// AppendJSON appends r to b as json.Marshal writes it, without reflection
// and without reading its raw messages twice: they are copied compacted,
// with <, > and & escaped, as json.Marshal copies a json.RawMessage. They
// must be valid JSON, as the decoders and Answer leave them;
// FuzzAppendJSON holds the two to the same bytes.
func (r *Response) AppendJSON(b []byte) ([]byte, error) {
	if !finite(r.Temperature) || !finite(r.TopP) {
		return b, errNotFinite
	}
	if emptyRaw(r.Text) || emptyRaw(r.ToolChoice) || slices.ContainsFunc(r.Output, emptyRaw) ||
		slices.ContainsFunc(r.Tools, emptyRaw) {
		return b, errEmptyRaw
	}
	b = append(b, `{"id":`...)
	b = wire.AppendString(b, r.ID)
	b = append(b, `,"object":`...)
	b = wire.AppendString(b, r.Object)
	b = append(b, `,"created_at":`...)
	b = strconv.AppendInt(b, r.CreatedAt, 10)
	b = append(b, `,"status":`...)
	b = wire.AppendString(b, r.Status)
	b = append(b, `,"error":`...)
	if e := r.Error; e != nil {
		b = append(b, `{"code":`...)
		b = wire.AppendString(b, e.Code)
		b = append(b, `,"message":`...)
		b = append(wire.AppendString(b, e.Message), '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"incomplete_details":`...)
	if d := r.IncompleteDetails; d != nil {
		b = append(b, `{"reason":`...)
		b = append(wire.AppendString(b, d.Reason), '}')
	} else {
		b = append(b, "null"...)
	}
	b = appendStringPtr(append(b, `,"instructions":`...), r.Instructions)
	b = append(b, `,"max_output_tokens":`...)
	if n := r.MaxOutputTokens; n != nil {
		b = strconv.AppendInt(b, int64(*n), 10)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"model":`...)
	b = wire.AppendString(b, r.Model)
	b = appendRaws(append(b, `,"output":`...), r.Output)
	b = strconv.AppendBool(append(b, `,"parallel_tool_calls":`...), r.ParallelToolCalls)
	b = appendStringPtr(append(b, `,"previous_response_id":`...), r.PreviousResponseID)
	b = appendStringPtr(append(b, `,"reasoning":{"effort":`...), r.Reasoning.Effort)
	b = appendStringPtr(append(b, `,"summary":`...), r.Reasoning.Summary)
	b = strconv.AppendBool(append(b, `},"store":`...), r.Store)
	b = wire.AppendFloat(append(b, `,"temperature":`...), r.Temperature)
	b = wire.AppendRaw(append(b, `,"text":`...), r.Text)
	b = wire.AppendRaw(append(b, `,"tool_choice":`...), r.ToolChoice)
	b = appendRaws(append(b, `,"tools":`...), r.Tools)
	b = wire.AppendFloat(append(b, `,"top_p":`...), r.TopP)
	b = append(b, `,"truncation":`...)
	b = wire.AppendString(b, r.Truncation)
	b = append(b, `,"usage":`...)
	if u := r.Usage; u != nil {
		b = strconv.AppendInt(append(b, `{"input_tokens":`...), int64(u.InputTokens), 10)
		b = strconv.AppendInt(append(b, `,"input_tokens_details":{"cached_tokens":`...), int64(u.InputTokensDetails.CachedTokens), 10)
		b = strconv.AppendInt(append(b, `},"output_tokens":`...), int64(u.OutputTokens), 10)
		b = strconv.AppendInt(append(b, `,"output_tokens_details":{"reasoning_tokens":`...), int64(u.OutputTokensDetails.ReasoningTokens), 10)
		b = strconv.AppendInt(append(b, `},"total_tokens":`...), int64(u.TotalTokens), 10)
		b = append(b, '}')
	} else {
		b = append(b, "null"...)
	}
	b = appendStringPtr(append(b, `,"user":`...), r.User)
	b = wire.AppendStringMap(append(b, `,"metadata":`...), r.Metadata)
	return append(b, '}'), nil
}

// appendStringPtr appends *s as a JSON string, or null.
func appendStringPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return wire.AppendString(b, *s)
}

// appendRaws appends raws as json.Marshal writes a []json.RawMessage.
func appendRaws(b []byte, raws []json.RawMessage) []byte {
	return appendArray(b, raws, func(b []byte, raw json.RawMessage) []byte { return wire.AppendRaw(b, raw) })
}

// appendArray appends list as json.Marshal writes a slice, null when it
// is nil, each element written by elem.
func appendArray[T any](b []byte, list []T, elem func([]byte, T) []byte) []byte {
	if list == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, v := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = elem(b, v)
	}
	return append(b, ']')
}

// emptyRaw reports whether raw is empty but not nil.
func emptyRaw(raw json.RawMessage) bool { return raw != nil && len(raw) == 0 }

// finite reports whether f is neither infinite nor NaN.
func finite(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }

// appendValue appends v, an output item or content part, as json.Marshal
// writes it: the item and part types of this package without reflection,
// any other through json.Marshal (nothing when that fails).
func appendValue(b []byte, v any) []byte {
	switch v := v.(type) {
	case messageItem:
		b = appendStringMember(b, `{"id":`, v.ID)
		b = appendStringMember(b, `,"type":`, v.Type)
		b = appendStringMember(b, `,"status":`, v.Status)
		b = appendStringMember(b, `,"role":`, v.Role)
		return append(appendArray(append(b, `,"content":`...), v.Content, appendValue), '}')
	case textPartOut:
		b = appendStringMember(b, `{"type":`, v.Type)
		b = appendRaws(append(b, `,"annotations":`...), v.Annotations)
		b = appendRaws(append(b, `,"logprobs":`...), v.Logprobs)
		return append(appendStringMember(b, `,"text":`, v.Text), '}')
	case refusalPartOut:
		b = appendStringMember(b, `{"type":`, v.Type)
		return append(appendStringMember(b, `,"refusal":`, v.Refusal), '}')
	case functionCallItem:
		b = appendStringMember(b, `{"id":`, v.ID)
		b = appendStringMember(b, `,"type":`, v.Type)
		b = appendStringMember(b, `,"status":`, v.Status)
		b = appendStringMember(b, `,"arguments":`, v.Arguments)
		b = appendStringMember(b, `,"call_id":`, v.CallID)
		return append(appendStringMember(b, `,"name":`, v.Name), '}')
	case reasoningItem:
		b = appendStringMember(b, `{"id":`, v.ID)
		b = appendStringMember(b, `,"type":`, v.Type)
		return append(appendArray(append(b, `,"summary":`...), v.Summary, appendSummaryPart), '}')
	case summaryPart:
		return appendSummaryPart(b, v)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return append(b, out...)
}

// appendSummaryPart appends p as json.Marshal writes it.
func appendSummaryPart(b []byte, p summaryPart) []byte {
	b = appendStringMember(b, `{"type":`, p.Type)
	return append(appendStringMember(b, `,"text":`, p.Text), '}')
}

// appendStringMember appends prefix (a member's name and colon, after its
// punctuation) and s as a JSON string.
func appendStringMember(b []byte, prefix, s string) []byte {
	return wire.AppendString(append(b, prefix...), s)
}
