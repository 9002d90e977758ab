package messages

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelgateway/gateway/internal/wire"
)

// FuzzRequestDecoders holds Request's reflection-free paths to
// encoding/json, which they replace: a body the fast decoder takes
// decodes as json.Unmarshal decodes it, and the chat request is written
// as json.Marshal writes it.
func FuzzRequestDecoders(f *testing.F) {
	f.Add(readFile(f, "claude_code.request.json"))
	f.Add([]byte(`{"model":"m","max_tokens":1,"system":"s","messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"x"}}]}]}],"tool_choice":{"type":"tool","name":"f<&>"}}`))
	f.Add([]byte(`{"model":null,"MODEL":"m","max_tokens":1.0,"messages":[],"messages":null,"stop_sequences":[null,"\u2028"],"temperature":1e-7,"top_p":null,"metadata":{"user_id":"u"},"thinking":{"type":"enabled","budget_tokens":null}}`))
	f.Add([]byte(`{"model":"m","max_tokens":1,"tools":[{"name":"t","input_schema":{ "a" : [1, "<\u2029>"] },"cache_control":null}],"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"i","name":"n","input":null}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		fast, slow := &msgRequest{}, &msgRequest{}
		if _, ok := decodeFast(body, fast); ok {
			if err := json.Unmarshal(body, slow); err != nil {
				t.Fatalf("decodeFast took a body encoding/json refuses: %v", err)
			}
			// The system prompt decoded as it is read is the one
			// system would decode from System.
			if fast.system != nil {
				if c, err := contentOf(bytes.TrimSpace(fast.System)); err != nil || !reflect.DeepEqual(*fast.system, c) {
					t.Fatalf("system decoded as %#v, from System as %#v (%v)", *fast.system, c, err)
				}
				fast.system = nil
			}
			if !reflect.DeepEqual(fast, slow) {
				t.Fatalf("decodeFast and encoding/json differ:\n%#v\n%#v", fast, slow)
			}
		}
		var c, want msgContent
		var d wire.Decoder
		d.Reset(body)
		decodeContent(&d, &c, new(blockBufs))
		if d.End() {
			if err := want.UnmarshalJSON(bytes.TrimSpace(body)); err != nil || !reflect.DeepEqual(c, want) {
				t.Fatalf("decodeContent and UnmarshalJSON differ (%v):\n%#v\n%#v", err, c, want)
			}
		}
		for _, dialect := range []Dialect{{}, {Reasoning: "reasoning", TopK: true}} {
			_, out, err := translate(body, dialect)
			if err != nil {
				continue
			}
			want, err := json.Marshal(out)
			if err != nil {
				t.Fatal(err)
			}
			if got := appendChat(nil, out); !bytes.Equal(got, want) {
				t.Fatalf("appendChat and json.Marshal differ:\n%s\n%s", got, want)
			}
		}
	})
}

// TestDecodeFastFixture checks that a real agent's request takes the fast
// path, not the fallback to encoding/json.
func TestDecodeFastFixture(t *testing.T) {
	if _, ok := decodeFast(readFile(t, "claude_code.request.json"), &msgRequest{}); !ok {
		t.Fatal("decodeFast refused the Claude Code request")
	}
}

// FuzzCompletionDecoder holds completionOf, which decodes chat answers
// and stream chunks, to json.Unmarshal.
func FuzzCompletionDecoder(f *testing.F) {
	for _, name := range []string{"text.chat.json", "tools_reasoning.chat.json"} {
		f.Add(readFile(f, name))
	}
	f.Add([]byte(`{"id":"c","choices":[null,{"index":0,"delta":{"content":"a\u00e9\"","reasoning":{"x":1},"tool_calls":[null,{"index":null,"id":"t","function":{"name":"f","arguments":"{}"}}]},"finish_reason":null,"stop_reason":7,"matched_stop":"\xff"}],"usage":{"prompt_tokens":3,"prompt_tokens_details":{"cached_tokens":null}}}`))
	f.Add([]byte(`{"error":{"message":"m","type":null,"code":429}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast, slow chatCompletion
		err := wire.Decode(data, &fast, decodeCompletion)
		werr := json.Unmarshal(data, &slow)
		if (err == nil) != (werr == nil) || err == nil && !reflect.DeepEqual(fast, slow) {
			t.Fatalf("completionOf and encoding/json differ (%v, %v):\n%#v\n%#v", err, werr, fast, slow)
		}
	})
}
