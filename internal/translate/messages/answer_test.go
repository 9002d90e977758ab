package messages

import (
	"errors"
	"strings"
	"testing"
)

func TestAnswerFixtures(t *testing.T) {
	for _, name := range []string{"text", "tools_reasoning"} {
		t.Run(name, func(t *testing.T) {
			got, err := Answer(readFile(t, name+".chat.json"), "", nil)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name+".messages.json", got)
		})
	}
}

func TestAnswer(t *testing.T) {
	const usage = `"usage":{"input_tokens":5,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":2}`
	for _, tc := range []struct {
		name, body, model string
		stops             []string
		want              string
	}{
		{"length", `{"id":"chatcmpl-abc","model":"gpt","choices":[{"message":{"content":"cut"},"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`, "claude-x", nil,
			`{"id":"msg_abc","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"cut"}],"stop_reason":"max_tokens","stop_sequence":null,` + usage + `}`},
		{"content filter with refusal", `{"id":"r","model":"gpt","choices":[{"message":{"content":null,"refusal":"I can't help with that."},"finish_reason":"content_filter"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`, "", nil,
			`{"id":"msg_r","type":"message","role":"assistant","model":"gpt","content":[{"type":"text","text":"I can't help with that."}],"stop_reason":"refusal","stop_sequence":null,` + usage + `}`},
		{"stop sequence (SGLang)", `{"id":"s","model":"m","choices":[{"message":{"content":"a"},"finish_reason":"stop","matched_stop":"END"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`, "", []string{"END"},
			`{"id":"msg_s","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"a"}],"stop_reason":"stop_sequence","stop_sequence":"END",` + usage + `}`},
		{"stop not a sequence of the request", `{"id":"s","model":"m","choices":[{"message":{"content":"a"},"finish_reason":"stop","stop_reason":128001}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`, "", []string{"END"},
			`{"id":"msg_s","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"a"}],"stop_reason":"end_turn","stop_sequence":null,` + usage + `}`},
		{"tool call finished with stop, bad arguments", `{"id":"","model":"m","choices":[{"message":{"content":null,"tool_calls":[{"id":"","type":"function","function":{"name":"f","arguments":"{oops"}},{"id":"c2","type":"function","function":{"name":"g","arguments":" { \"a\" : [1, 2] } "}}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`, "m", nil,
			`"content":[{"type":"tool_use","id":"toolu_X_0","name":"f","input":{}},{"type":"tool_use","id":"c2","name":"g","input":{"a":[1,2]}}],"stop_reason":"tool_use","stop_sequence":null,` + usage + `}`},
		{"cache reads and writes", `{"id":"c","model":"m","choices":[{"message":{"content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":600,"cache_write_tokens":300}}}`, "", nil,
			`{"id":"msg_c","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":100,"cache_creation_input_tokens":300,"cache_read_input_tokens":600,"output_tokens":2}}`},
		{"reasoning member, no usage", `{"id":"o","model":"m","choices":[{"message":{"content":"","reasoning":"why"},"finish_reason":"stop"}]}`, "", nil,
			`{"id":"msg_o","type":"message","role":"assistant","model":"m","content":[{"type":"thinking","thinking":"why","signature":""}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Answer([]byte(tc.body), tc.model, tc.stops)
			if err != nil {
				t.Fatal(err)
			}
			s := string(got)
			if strings.HasPrefix(tc.want, `"content"`) {
				// The message id is random: compare from content on,
				// and the generated tool id by its shape.
				id := s[len(`{"id":"msg_`):strings.Index(s, `","type"`)]
				s = strings.Replace(s[strings.Index(s, `"content"`):], "toolu_"+id+"_0", "toolu_X_0", 1)
			}
			if s != tc.want {
				t.Errorf("got  %s\nwant %s", s, tc.want)
			}
		})
	}
}

func TestAnswerRefused(t *testing.T) {
	if _, err := Answer([]byte(`{"choices":[]}`), "", nil); !errors.Is(err, ErrNoChoice) {
		t.Errorf("no choice: %v", err)
	}
	if _, err := Answer([]byte(`<html>`), "", nil); err == nil {
		t.Error("not JSON: no error")
	}
}
