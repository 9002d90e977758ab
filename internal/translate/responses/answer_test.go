package responses

import (
	"encoding/json"
	"errors"
	"testing"
)

// codexRequest is the Codex fixture with deterministic ids.
func codexRequest(t testing.TB) *Request {
	t.Helper()
	r, err := Parse(fixture(t, "codex_request.json"))
	if err != nil {
		t.Fatal(err)
	}
	r.IDs = counter()
	return r
}

func TestAnswerTools(t *testing.T) {
	r := codexRequest(t)
	resp, err := r.Answer(fixture(t, "chat_answer_tools.json"), "resp_1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "response_tools.json", b)
}

func TestAnswer(t *testing.T) {
	tests := []struct {
		name, request, answer string
		want                  string
	}{
		{"text, defaults echoed", `{"model":"m","input":"Hi"}`,
			`{"id":"c","created":7,"model":"m-1","choices":[{"message":{"role":"assistant","content":"Hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`,
			`{"id":"resp_1","object":"response","created_at":7,"status":"completed","error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":"m-1",` +
				`"output":[{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Hello"}]}],` +
				`"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"store":true,"temperature":1,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1,"truncation":"disabled",` +
				`"usage":{"input_tokens":5,"input_tokens_details":{"cached_tokens":0},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":7},"user":null,"metadata":{}}`},
		{"cut by max_output_tokens, request echoed", `{"model":"m","input":"Hi","instructions":"Be brief.","max_output_tokens":2,"temperature":0.5,"top_p":0.8,"store":false,"previous_response_id":"resp_0","metadata":{"k":"v"},"user":"u","text":{"format":{"type":"json_object"}}}`,
			`{"id":"c","created":7,"model":"m","choices":[{"message":{"role":"assistant","content":"{\"a"},"finish_reason":"length"}]}`,
			`{"id":"resp_1","object":"response","created_at":7,"status":"incomplete","error":null,"incomplete_details":{"reason":"max_output_tokens"},"instructions":"Be brief.","max_output_tokens":2,"model":"m",` +
				`"output":[{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"{\"a"}]}],` +
				`"parallel_tool_calls":true,"previous_response_id":"resp_0","reasoning":{"effort":null,"summary":null},"store":false,"temperature":0.5,"text":{"format":{"type":"json_object"}},"tool_choice":"auto","tools":[],"top_p":0.8,"truncation":"disabled",` +
				`"usage":null,"user":"u","metadata":{"k":"v"}}`},
		{"refusal", `{"model":"m","input":"Hi"}`,
			`{"id":"c","created":7,"model":"m","choices":[{"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`,
			`{"id":"resp_1","object":"response","created_at":7,"status":"completed","error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":"m",` +
				`"output":[{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"refusal","refusal":"I can't help with that."}]}],` +
				`"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"store":true,"temperature":1,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1,"truncation":"disabled",` +
				`"usage":null,"user":null,"metadata":{}}`},
		{"tool call without id, OpenRouter reasoning", `{"model":"m","input":"Hi","reasoning":{"effort":"low"}}`,
			`{"id":"c","created":7,"model":"m","choices":[{"message":{"role":"assistant","content":"","reasoning":"Need the date.","tool_calls":[{"type":"function","function":{"name":"date","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
			`{"id":"resp_1","object":"response","created_at":7,"status":"completed","error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":"m",` +
				`"output":[{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Need the date."}]},{"id":"fc_3","type":"function_call","status":"completed","arguments":"{}","call_id":"call_2","name":"date"}],` +
				`"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":"low","summary":null},"store":true,"temperature":1,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1,"truncation":"disabled",` +
				`"usage":null,"user":null,"metadata":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse([]byte(tt.request))
			if err != nil {
				t.Fatal(err)
			}
			r.IDs = counter()
			resp, err := r.Answer([]byte(tt.answer), "resp_1")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(resp)
			if string(b) != tt.want {
				t.Errorf("response\n got %s\nwant %s", b, tt.want)
			}
		})
	}
}

func TestAnswerInvalid(t *testing.T) {
	r, _ := Parse([]byte(`{"model":"m","input":"Hi"}`))
	for _, body := range []string{`not json`, `{"choices":[]}`, `{"choices":"x"}`} {
		if _, err := r.Answer([]byte(body), "resp_1"); !errors.Is(err, ErrAnswer) {
			t.Errorf("Answer(%s) = %v, want ErrAnswer", body, err)
		}
	}
}

// TestAnswerRoundTrip: a response's output items, sent back as the next
// request's earlier items, give the model its own turn back unchanged.
func TestAnswerRoundTrip(t *testing.T) {
	r := codexRequest(t)
	resp, err := r.Answer(fixture(t, "chat_answer_tools.json"), "resp_1")
	if err != nil {
		t.Fatal(err)
	}
	next, err := Parse([]byte(`{"model":"m","previous_response_id":"resp_1","input":"go on"}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := next.Prepend(resp.Output); err != nil {
		t.Fatal(err)
	}
	tr, err := next.Chat(Options{ReasoningField: "reasoning_content"})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(tr.Body, &got); err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Choices []struct {
			Message json.RawMessage `json:"message"`
		} `json:"choices"`
	}
	json.Unmarshal(fixture(t, "chat_answer_tools.json"), &answer)
	if len(got.Messages) != 2 {
		t.Fatalf("%d messages, want the assistant's and the user's", len(got.Messages))
	}
	if a, b := normal(t, got.Messages[0]), normal(t, answer.Choices[0].Message); a != b {
		t.Errorf("assistant turn back\n got %s\nwant %s", a, b)
	}
}

// normal re-encodes a JSON object with its members sorted.
func normal(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}
