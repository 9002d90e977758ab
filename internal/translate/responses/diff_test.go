package responses

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelgateway/gateway/internal/wire"
)

// FuzzChatDecoders holds the reflection-free paths of Parse and Chat to
// encoding/json, which they replace: what the fast decoders take decodes
// as json.Unmarshal decodes it, and the chat request is written as
// json.Marshal writes it.
func FuzzChatDecoders(f *testing.F) {
	f.Add(fixture(f, "codex_request.json"))
	f.Add([]byte(`{"model":"m","input":"Hi <&>","metadata":{"a":null,"b":"c"},"text":{"format":{"type":"json_schema","name":"n","schema":{ "x" : 1 },"strict":true}},"temperature":1e21,"n":null}`))
	f.Add([]byte(`{"model":"m","input":[null,{"role":"user","content":[null,{"type":"input_image","image_url":"https://x/a.png","detail":"high"}]},{"type":"reasoning","summary":[{"type":"summary_text","text":"t"}],"content":[{"text":"u"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"x"}]}],"tools":[{"type":"function","name":"f","parameters":null,"strict":false}],"tool_choice":{"type":"function","name":"f"},"reasoning":{"effort":"low","summary":null},"include":[null],"store":false}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var fast, slow wireRequest
		var in decodedInput
		if decodeRequest(body, &fast, &in) {
			if err := json.Unmarshal(body, &slow); err != nil {
				t.Fatalf("decodeRequest took a body encoding/json refuses: %v", err)
			}
			if !reflect.DeepEqual(fast, slow) {
				t.Fatalf("decodeRequest and encoding/json differ:\n%#v\n%#v", fast, slow)
			}
			checkDecodedInput(t, &slow, in)
		}
		items, err := decodeItems(body)
		var want []inputItem
		if werr := json.Unmarshal(body, &want); (err == nil) != (werr == nil) || err == nil && !reflect.DeepEqual(items, want) {
			t.Fatalf("decodeItems and encoding/json differ (%v, %v):\n%#v\n%#v", err, werr, items, want)
		}
		var tool, wantTool wireTool
		err = wire.Decode(body, &tool, decodeTool)
		if werr := json.Unmarshal(body, &wantTool); (err == nil) != (werr == nil) || err == nil && !reflect.DeepEqual(tool, wantTool) {
			t.Fatalf("toolOf and encoding/json differ (%v, %v):\n%#v\n%#v", err, werr, tool, wantTool)
		}
		r, err := Parse(body)
		if err != nil {
			return
		}
		for _, opt := range []Options{{}, {ReasoningField: "reasoning"}} {
			_, out, err := r.translate(opt)
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

// checkDecodedInput checks that the items, content parts and tools
// decoded with the body are what decoding their members on their own
// gives.
func checkDecodedInput(t *testing.T, w *wireRequest, in decodedInput) {
	t.Helper()
	if len(in.tools) != len(w.Tools) {
		t.Fatalf("%d tools, %d decoded", len(w.Tools), len(in.tools))
	}
	for i, dt := range in.tools {
		var want wireTool
		if err := json.Unmarshal(w.Tools[i], &want); dt.ok && (err != nil || !reflect.DeepEqual(dt.tool, want)) {
			t.Fatalf("tool %d decoded with the body differs from encoding/json's (%v):\n%#v\n%#v", i, err, dt.tool, want)
		}
	}
	input := w.Input
	if !in.ok {
		if in.items != nil || in.parts != nil {
			t.Fatalf("input not decoded, yet items kept: %#v", in)
		}
		return
	}
	var want []inputItem
	if err := json.Unmarshal(input, &want); err != nil || !reflect.DeepEqual(in.items, want) {
		t.Fatalf("items decoded with the body differ from encoding/json's (%v):\n%#v\n%#v", err, in.items, want)
	}
	if len(in.parts) != len(in.items) {
		t.Fatalf("%d items, %d decoded contents", len(in.items), len(in.parts))
	}
	for i, dp := range in.parts {
		if !dp.ok {
			continue
		}
		var parts []textPart
		if err := json.Unmarshal(in.items[i].Content, &parts); err != nil || !reflect.DeepEqual(dp.parts, parts) {
			t.Fatalf("item %d: parts decoded with the body differ from encoding/json's (%v):\n%#v\n%#v", i, err, dp.parts, parts)
		}
	}
}

// TestDecodeFastFixture checks that a real agent's request takes the fast
// paths, not the fallback to encoding/json, and that its input items and
// their content parts are decoded once, with the body.
func TestDecodeFastFixture(t *testing.T) {
	var w wireRequest
	var in decodedInput
	if !decodeRequest(fixture(t, "codex_request.json"), &w, &in) {
		t.Fatal("decodeRequest refused the Codex request")
	}
	if !in.ok {
		t.Fatal("the input items were not decoded with the body")
	}
	for i, it := range in.items {
		if it.Type == "message" && !in.parts[i].ok {
			t.Errorf("input[%d]: content parts not decoded with the body", i)
		}
	}
	for i, dt := range in.tools {
		if !dt.ok {
			t.Errorf("tools[%d] not decoded with the body", i)
		}
	}
	checkDecodedInput(t, &w, in)
}

// FuzzChunkDecoder holds chunkOf, which decodes stream chunks, to
// json.Unmarshal.
func FuzzChunkDecoder(f *testing.F) {
	f.Add([]byte(`{"id":"c","model":"m","choices":[null,{"index":0,"delta":{"content":"a\u00e9\"","refusal":null,"reasoning":{"x":1},"reasoning_content":"r","tool_calls":[null,{"index":null,"id":"t","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":null}],"usage":{"prompt_tokens":3,"total_tokens":null,"prompt_tokens_details":{"cached_tokens":1},"completion_tokens_details":{"reasoning_tokens":2}}}`))
	f.Add([]byte(`{"error":{"message":"m","type":null,"code":429}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast, slow chunk
		err := wire.Decode(data, &fast, decodeChunk)
		werr := json.Unmarshal(data, &slow)
		if (err == nil) != (werr == nil) || err == nil && !reflect.DeepEqual(fast, slow) {
			t.Fatalf("chunkOf and encoding/json differ (%v, %v):\n%#v\n%#v", err, werr, fast, slow)
		}
	})
}

// FuzzAnswerDecoder holds decodeCompletion, with which Answer reads a chat
// answer, to json.Unmarshal into a completion: the same result, and an
// error where it gives one.
func FuzzAnswerDecoder(f *testing.F) {
	f.Add(fixture(f, "chat_answer_tools.json"))
	f.Add([]byte(`{"id":"c","created":1,"model":"m","choices":[{"message":{"content":null,"refusal":"no","reasoning":{"x":1},"reasoning_content":null},"finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":null,"prompt_tokens_details":{"cached_tokens":1},"completion_tokens_details":null}}`))
	f.Add([]byte(`{"choices":[null,{"message":null}],"usage":null,"Model":"m","id":"a","id":"b"}`))
	f.Add([]byte(`{"choices":[{"message":{"content":"<b>","tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"{}"}}],"reasoning":"r"}}],"created":1.5}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var fast, slow completion
		err := wire.Decode(body, &fast, decodeCompletion)
		werr := json.Unmarshal(body, &slow)
		if (err == nil) != (werr == nil) || err == nil && !reflect.DeepEqual(fast, slow) {
			t.Fatalf("decodeCompletion and encoding/json differ (%v, %v):\n%#v\n%#v", err, werr, fast, slow)
		}
		// What the fast decoder took on its own, without falling back.
		var d wire.Decoder
		d.Reset(body)
		var own completion
		decodeCompletion(&d, &own)
		if d.End() && (werr != nil || !reflect.DeepEqual(own, slow)) {
			t.Fatalf("decodeCompletion took a body encoding/json reads otherwise (%v):\n%#v\n%#v", werr, own, slow)
		}
	})
}
