package responses

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// TestAppendJSONAnswer: the Response of the Codex fixture's answer, and
// the in-progress one of its request, encode as json.Marshal has them.
func TestAppendJSONAnswer(t *testing.T) {
	r := codexRequest(t)
	answer, err := r.Answer(fixture(t, "chat_answer_tools.json"), "resp_1")
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range []*Response{answer, r.Response("resp_2", 1757586000)} {
		want, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		got, err := res.AppendJSON([]byte("prefix"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Errorf("AppendJSON:\n%s\njson.Marshal:\n%s", got, want)
		}
	}
}

// TestAppendJSONNotFinite: a temperature or top_p JSON cannot hold is an
// error, as it is json.Marshal's.
func TestAppendJSONNotFinite(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		for _, r := range []*Response{{Temperature: f}, {TopP: f}} {
			if _, err := json.Marshal(r); err == nil {
				t.Fatalf("json.Marshal took %v", f)
			}
			if b, err := r.AppendJSON(nil); err == nil {
				t.Errorf("AppendJSON(%v) = %s, want an error", f, b)
			}
		}
	}
}

// FuzzAppendJSON holds AppendJSON to json.Marshal's bytes for Responses
// of any strings, numbers and valid raw messages, each optional field
// present or not as a bit of flags says.
func FuzzAppendJSON(f *testing.F) {
	f.Add("resp_1", "completed", "gpt-4o", "<b>&amp;", "x\u2028y\xff", 0.7, 1e-7, int64(17),
		[]byte(`{"type":"message","content":[{"type":"output_text","text":"<hi> & \u2029"}]}`), []byte(` { "format" : {"type":"text"} } `),
		uint16(0xffff))
	f.Add("", "", "", "", "", 0.0, 1e21, int64(-1), []byte(`[1, 2.50, -0e3, "\ud800"]`), []byte(`"auto"`), uint16(0))
	f.Add("a", "b", "c", "d", "e", -1e-300, 123456789.125, int64(math.MaxInt64), []byte(`null`), []byte(``), uint16(0x5555))
	f.Fuzz(func(t *testing.T, id, status, model, s1, s2 string, temp, topP float64, n int64, raw1, raw2 []byte, flags uint16) {
		valid := func(raw []byte) []byte {
			if len(raw) == 0 || json.Valid(raw) {
				return raw
			}
			b, _ := json.Marshal(string(raw))
			return b
		}
		raw1, raw2 = valid(raw1), valid(raw2)
		on := func(bit int) bool { return flags&(1<<bit) != 0 }
		r := &Response{ID: id, Object: "response", CreatedAt: n, Status: status, Model: model, ParallelToolCalls: on(0),
			Store: on(1), Temperature: temp, TopP: topP, Text: raw1, ToolChoice: raw2, Truncation: s2}
		if on(2) {
			r.Error = &ResponseError{Code: s1, Message: s2}
		}
		if on(3) {
			r.IncompleteDetails = &IncompleteDetails{Reason: s1}
		}
		if on(4) {
			r.Instructions = &s1
		}
		if on(5) {
			m := int(n % 1e6)
			r.MaxOutputTokens = &m
		}
		if on(6) {
			r.PreviousResponseID = &s2
		}
		if on(7) {
			r.Reasoning = reasoningEcho{Effort: &s1}
		}
		if on(8) {
			r.Reasoning.Summary = &s2
		}
		if on(9) {
			k := int(n % 1e9)
			r.Usage = &Usage{InputTokens: k, InputTokensDetails: InputDetails{CachedTokens: k / 2}, OutputTokens: -k,
				OutputTokensDetails: OutputDetail{ReasoningTokens: 3}, TotalTokens: k + 1}
		}
		if on(10) {
			r.User = &s1
		}
		if on(11) {
			r.Metadata = map[string]string{s1: s2, s2: s1, "b<": id, "a": ""}
		} else if on(12) {
			r.Metadata = map[string]string{}
		}
		if on(13) {
			r.Output = []json.RawMessage{raw1, raw2, nil}
		} else if on(14) {
			r.Output = []json.RawMessage{}
		}
		if on(15) {
			r.Tools = []json.RawMessage{raw2}
		}
		want, werr := json.Marshal(r)
		got, gerr := r.AppendJSON(nil)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("json.Marshal: %v; AppendJSON: %v", werr, gerr)
		}
		if werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("AppendJSON:\n%s\njson.Marshal:\n%s", got, want)
		}
	})
}

// BenchmarkAppendJSON: the Response of BenchmarkAnswer encoded, by
// AppendJSON and by json.Marshal.
func BenchmarkAppendJSON(b *testing.B) {
	r := codexRequest(b)
	res, err := r.Answer(fixture(b, "chat_answer_tools.json"), "resp_1")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		cpuTime(b)
		var buf []byte
		for b.Loop() {
			buf, _ = res.AppendJSON(buf[:0])
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		cpuTime(b)
		for b.Loop() {
			json.Marshal(res)
		}
	})
}

// FuzzAppendValue holds appendValue to json.Marshal's bytes for every
// output item and content part, of any strings.
func FuzzAppendValue(f *testing.F) {
	f.Add("msg_1", "completed", "Hello <world> & \u2028", `{"path":"a.go"}`, "x\xffy", uint8(7))
	f.Add("", "", "", "", "", uint8(0))
	f.Fuzz(func(t *testing.T, id, status, text, args, name string, flags uint8) {
		var parts []any
		if flags&1 != 0 {
			parts = append(parts, textPartOf(text))
		}
		if flags&2 != 0 {
			parts = append(parts, refusalPartOf(name))
		}
		if flags&4 != 0 {
			parts = append(parts, textPartOutWith(text))
		}
		var summary []summaryPart
		if flags&8 != 0 {
			summary = []summaryPart{{Type: "summary_text", Text: text}, {Type: name, Text: args}}
		} else if flags&16 != 0 {
			summary = []summaryPart{}
		}
		for _, v := range []any{
			messageItem{ID: id, Type: "message", Status: status, Role: name, Content: parts},
			functionCallItem{ID: id, Type: "function_call", Status: status, Arguments: args, CallID: text, Name: name},
			reasoningItem{ID: id, Type: "reasoning", Summary: summary},
			summaryPart{Type: "summary_text", Text: text},
			textPartOf(text), refusalPartOf(text),
			map[string]string{text: name}, // not an item: through json.Marshal
		} {
			want, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if got := appendValue([]byte("x"), v); !bytes.Equal(got, append([]byte("x"), want...)) {
				t.Fatalf("appendValue(%#v):\n%s\njson.Marshal:\n%s", v, got[1:], want)
			}
		}
	})
}

// textPartOutWith is an output_text part whose annotations and logprobs
// are nil, not empty.
func textPartOutWith(s string) any { return textPartOut{Type: "output_text", Text: s} }
