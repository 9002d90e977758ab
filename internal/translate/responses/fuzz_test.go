package responses

import (
	"bytes"
	"encoding/json"
	"testing"
)

func FuzzChat(f *testing.F) {
	f.Add(fixture(f, "codex_request.json"))
	f.Add([]byte(`{"model":"m","input":"Hi"}`))
	f.Add([]byte(`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"https://x/a.png"}]},{"type":"reasoning","summary":[{"type":"summary_text","text":"t"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"x"}],"text":{"format":{"type":"json_schema","schema":{}}},"tool_choice":{"type":"function","name":"f"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := Parse(body)
		if err != nil {
			return
		}
		r.Prepend([]json.RawMessage{json.RawMessage(`{"role":"user","content":"earlier"}`)})
		for _, opt := range []Options{{}, {ReasoningField: "reasoning_content"}} {
			tr, err := r.Chat(opt)
			if err != nil {
				continue
			}
			if !json.Valid(tr.Body) {
				t.Fatalf("chat body is not JSON: %s", tr.Body)
			}
		}
		resp := r.Response("resp_1", 1)
		if b, err := json.Marshal(resp); err != nil || !json.Valid(b) {
			t.Fatalf("response echo is not JSON: %v %s", err, b)
		}
	})
}

func FuzzStream(f *testing.F) {
	f.Add(fixture(f, "chat_stream_tools.txt"))
	f.Add(chunks("length", `{"content":"a"}`, `{"refusal":"b"}`, `{"reasoning":"c"}`))
	f.Add([]byte("data: {\"error\":{\"message\":\"x\"}}\n\n"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		r, _ := Parse([]byte(`{"model":"m","input":"Hi","stream":true}`))
		var out bytes.Buffer
		s := r.NewStream(&out, "resp_1", 1)
		for _, line := range bytes.Split(stream, []byte("\n")) {
			if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				s.Chunk(data)
			}
		}
		s.Finish()
		evs := parseEvents(t, out.Bytes()) // every event well formed, in sequence
		last := evs[len(evs)-1].typ
		if last != "response.completed" && last != "response.incomplete" && last != "response.failed" {
			t.Fatalf("the stream ends with %s", last)
		}
	})
}
