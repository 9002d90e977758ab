package messages

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

func FuzzRequest(f *testing.F) {
	f.Add(readFile(f, "claude_code.request.json"))
	f.Add([]byte(`{"model":"m","max_tokens":1,"system":"s","messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"x"}}]}]}],"tool_choice":{"type":"tool","name":"f"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, d := range []Dialect{{}, {Reasoning: "reasoning", TopK: true}} {
			tr, err := Request(body, d)
			if err != nil {
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("error %v is not an *Error", err)
				}
				continue
			}
			if !json.Valid(tr.Body) {
				t.Fatalf("invalid JSON out: %s", tr.Body)
			}
		}
		CountTokens(body)
	})
}

func FuzzStream(f *testing.F) {
	for _, name := range []string{"text", "tools_reasoning", "interleaved", "error", "stop_sequence"} {
		f.Add(readFile(f, name+".chat.sse"))
	}
	for _, name := range []string{"text", "tools_reasoning"} {
		f.Add(readFile(f, name+".chat.json")) // for Answer
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var w bytes.Buffer
		s := NewStream(&w, StreamOptions{StopSequences: []string{"3"}})
		for _, line := range bytes.Split(in, []byte("\n")) {
			if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				s.Chunk(data)
			}
		}
		s.Close()
		names := events(t, w.Bytes())
		if len(names) == 0 {
			t.Fatal("no events")
		}
		if last := names[len(names)-1]; last != "message_stop" && last != "error" {
			t.Fatalf("the stream ends with %s", last)
		}
		// Whatever Answer takes, it gives back as JSON.
		if out, err := Answer(in, "", nil); err == nil && !json.Valid(out) {
			t.Fatalf("Answer gave invalid JSON: %s", out)
		}
	})
}
