package responses

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata")

// golden compares got with testdata/name, both compacted; -update
// rewrites the file from got, indented.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		var b bytes.Buffer
		if err := json.Indent(&b, got, "", "  "); err != nil {
			t.Fatalf("%s: output is not JSON: %v", name, err)
		}
		b.WriteByte('\n')
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if c := compact(t, want); !bytes.Equal(compact(t, got), c) {
		t.Errorf("%s differs:\n got %s\nwant %s", name, compact(t, got), c)
	}
}

func compact(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return out.Bytes()
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// counter returns deterministic ids: msg_1, fc_2, …
func counter() func(string) string {
	n := 0
	return func(prefix string) string {
		n++
		return prefix + "_" + strconv.Itoa(n)
	}
}

func translate(t *testing.T, body string, opt Options) (*Translation, error) {
	t.Helper()
	r, err := Parse([]byte(body))
	if err != nil {
		return nil, err
	}
	return r.Chat(opt)
}

func TestChatCodex(t *testing.T) {
	r, err := Parse(fixture(t, "codex_request.json"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Store || !r.Stream || r.Model != "qwen3-coder" {
		t.Errorf("store %v stream %v model %q, want false, true, qwen3-coder", r.Store, r.Stream, r.Model)
	}
	tr, err := r.Chat(Options{ReasoningField: "reasoning_content"})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "codex_chat.json", tr.Body)
	wantNotes := []string{
		"reasoning.summary dropped: the model's reasoning is returned as it comes",
		"include dropped: none of its data exists in a chat completion",
		"prompt_cache_key dropped: chat completions have no equivalent",
	}
	if diff := cmp.Diff(wantNotes, tr.Notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
	if n := len(tr.Chat.Messages); n != 8 {
		t.Errorf("chat.Request holds %d messages, want 8", n)
	}
}

func TestChat(t *testing.T) {
	tests := []struct {
		name, body string
		opt        Options
		want       string
	}{
		{"string input", `{"model":"m","input":"Hi"}`, Options{},
			`{"model":"m","messages":[{"role":"user","content":"Hi"}]}`},
		{"instructions first, developer as system", `{"model":"m","instructions":"Be brief.","input":[{"role":"developer","content":"Use Go."},{"role":"user","content":"Hi"}]}`, Options{},
			`{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"system","content":"Use Go."},{"role":"user","content":"Hi"}]}`},
		{"images stay parts", `{"model":"m","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"What is it?"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo=","detail":"auto"},{"type":"input_image","image_url":"https://example.com/a.png","detail":"low"}]}]}`, Options{},
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"What is it?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},{"type":"image_url","image_url":{"url":"https://example.com/a.png","detail":"low"}}]}]}`},
		{"assistant text parts joined", `{"model":"m","input":[{"role":"user","content":"a"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"x","annotations":[]},{"type":"output_text","text":"y"}]}]}`, Options{},
			`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"xy"}]}`},
		{"sampling and limits", `{"model":"m","input":"Hi","temperature":0.2,"top_p":0.9,"max_output_tokens":300,"user":"u-1","metadata":{"k":"v"},"parallel_tool_calls":true}`, Options{},
			`{"model":"m","messages":[{"role":"user","content":"Hi"}],"max_completion_tokens":300,"temperature":0.2,"top_p":0.9,"user":"u-1"}`},
		{"named tool choice, strict tool", `{"model":"m","input":"Hi","tools":[{"type":"function","name":"f","parameters":{"type":"object"},"strict":true}],"tool_choice":{"type":"function","name":"f"},"parallel_tool_calls":false}`, Options{},
			`{"model":"m","messages":[{"role":"user","content":"Hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"},"strict":true}}],"tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":false}`},
		{"required tool choice", `{"model":"m","input":"Hi","tools":[{"type":"function","name":"f"}],"tool_choice":"required"}`, Options{},
			`{"model":"m","messages":[{"role":"user","content":"Hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required"}`},
		{"json schema", `{"model":"m","input":"Hi","text":{"format":{"type":"json_schema","name":"answer","schema":{"type":"object","properties":{"n":{"type":"integer"}}},"strict":true}}}`, Options{},
			`{"model":"m","messages":[{"role":"user","content":"Hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"answer","schema":{"type":"object","properties":{"n":{"type":"integer"}}},"strict":true}}}`},
		{"json object", `{"model":"m","input":"Hi","text":{"format":{"type":"json_object"}}}`, Options{},
			`{"model":"m","messages":[{"role":"user","content":"Hi"}],"response_format":{"type":"json_object"}}`},
		{"text format is the default", `{"model":"m","input":"Hi","text":{"format":{"type":"text"}}}`, Options{},
			`{"model":"m","messages":[{"role":"user","content":"Hi"}]}`},
		{"reasoning back as reasoning", `{"model":"m","reasoning":{"effort":"high"},"input":[{"role":"user","content":"a"},{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"think"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"b"}]}]}`, Options{ReasoningField: "reasoning"},
			`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","reasoning":"think"}],"reasoning_effort":"high"}`},
		{"reasoning dropped", `{"model":"m","input":[{"role":"user","content":"a"},{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"think"}]},{"type":"message","role":"assistant","content":"b"}]}`, Options{},
			`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}`},
		{"tool output as parts", `{"model":"m","input":[{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"ok "},{"type":"input_text","text":"done"}]}]}`, Options{},
			`{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","content":"ok done","tool_call_id":"c1"}]}`},
		{"stream asks for usage", `{"model":"m","input":"Hi","stream":true}`, Options{},
			`{"model":"m","messages":[{"role":"user","content":"Hi"}],"stream":true,"stream_options":{"include_usage":true}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := translate(t, tt.body, tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(tr.Body); got != tt.want {
				t.Errorf("chat body\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestChatNotesDroppedReasoning(t *testing.T) {
	tr, err := translate(t, `{"model":"m","input":[{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"t"}]},{"role":"user","content":"a"}]}`, Options{ReasoningField: "reasoning_content"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"reasoning items dropped: the target takes no reasoning back"}
	if diff := cmp.Diff(want, tr.Notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}

func TestChatErrors(t *testing.T) {
	deep := `{"model":"m","input":"Hi","tools":[{"type":"function","name":"f","parameters":` +
		string(bytes.Repeat([]byte(`{"a":`), 70)) + `1` + string(bytes.Repeat([]byte(`}`), 70)) + `}]}`
	tests := []struct {
		name, body  string
		code, param string
	}{
		{"not an object", `[1]`, CodeInvalid, ""},
		{"no model", `{"input":"Hi"}`, CodeInvalid, "model"},
		{"no input", `{"model":"m"}`, CodeInvalid, "input"},
		{"input a number", `{"model":"m","input":3}`, CodeInvalid, "input"},
		{"model a number", `{"model":3,"input":"x"}`, CodeInvalid, "model"},
		{"file input", `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_file","file_id":"file-1"}]}]}`, CodeUnsupported, "input[0].content[1].type"},
		{"image by file id", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"file-1","detail":"auto"}]}]}`, CodeUnsupported, "input[0].content[0].file_id"},
		{"audio part", `{"model":"m","input":[{"role":"user","content":[{"type":"input_audio"}]}]}`, CodeUnsupported, "input[0].content[0].type"},
		{"bad role", `{"model":"m","input":[{"role":"tool","content":"a"}]}`, CodeInvalid, "input[0].role"},
		{"web search tool", `{"model":"m","input":"Hi","tools":[{"type":"function","name":"f"},{"type":"web_search"}]}`, CodeUnsupported, "tools[1].type"},
		{"file search tool", `{"model":"m","input":"Hi","tools":[{"type":"file_search","vector_store_ids":["vs_1"]}]}`, CodeUnsupported, "tools[0].type"},
		{"computer use tool", `{"model":"m","input":"Hi","tools":[{"type":"computer_use_preview"}]}`, CodeUnsupported, "tools[0].type"},
		{"unnamed function", `{"model":"m","input":"Hi","tools":[{"type":"function"}]}`, CodeInvalid, "tools[0].name"},
		{"hosted tool choice", `{"model":"m","input":"Hi","tool_choice":{"type":"web_search_preview"}}`, CodeUnsupported, "tool_choice.type"},
		{"bad tool choice", `{"model":"m","input":"Hi","tool_choice":"always"}`, CodeInvalid, "tool_choice"},
		{"item reference", `{"model":"m","input":[{"type":"item_reference","id":"msg_1"}]}`, CodeUnsupported, "input[0].type"},
		{"web search call item", `{"model":"m","input":[{"role":"user","content":"a"},{"type":"web_search_call","id":"ws_1"}]}`, CodeUnsupported, "input[1].type"},
		{"call without id", `{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, CodeInvalid, "input[0].call_id"},
		{"output without id", `{"model":"m","input":[{"type":"function_call_output","output":"x"}]}`, CodeInvalid, "input[0].call_id"},
		{"image tool output", `{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"https://x/a.png"}]}]}`, CodeUnsupported, "input[0].output[0].type"},
		{"schema format without schema", `{"model":"m","input":"Hi","text":{"format":{"type":"json_schema","name":"x"}}}`, CodeInvalid, "text.format.schema"},
		{"grammar format", `{"model":"m","input":"Hi","text":{"format":{"type":"grammar"}}}`, CodeUnsupported, "text.format.type"},
		{"background", `{"model":"m","input":"Hi","background":true}`, CodeUnsupported, "background"},
		{"prompt template", `{"model":"m","prompt":{"id":"pmpt_1"},"input":"Hi"}`, CodeUnsupported, "prompt"},
		{"conversation", `{"model":"m","conversation":"conv_1","input":"Hi"}`, CodeUnsupported, "conversation"},
		{"top logprobs", `{"model":"m","input":"Hi","top_logprobs":3}`, CodeUnsupported, "top_logprobs"},
		{"deep nesting", deep, CodeInvalid, ""},
		{"reasoning only", `{"model":"m","input":[{"type":"reasoning","summary":[]}]}`, CodeInvalid, "input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := translate(t, tt.body, Options{})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v, want an *Error", err)
			}
			if e.Code != tt.code || e.Param != tt.param {
				t.Errorf("code %q param %q (%v), want %q %q", e.Code, e.Param, e, tt.code, tt.param)
			}
		})
	}
}

func TestPrepend(t *testing.T) {
	// The first turn: its input items, then the response's output items.
	first, err := Items(json.RawMessage(`"What is in /tmp?"`))
	if err != nil {
		t.Fatal(err)
	}
	output := []json.RawMessage{
		json.RawMessage(`{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"List it."}]}`),
		json.RawMessage(`{"id":"fc_2","type":"function_call","status":"completed","arguments":"{\"path\":\"/tmp\"}","call_id":"call_3","name":"ls"}`),
	}
	r, err := Parse([]byte(`{"model":"m","previous_response_id":"resp_1","input":[{"type":"function_call_output","call_id":"call_3","output":"a.txt"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.PreviousResponseID != "resp_1" || !r.Store {
		t.Errorf("previous %q store %v, want resp_1 true", r.PreviousResponseID, r.Store)
	}
	if err := r.Prepend(append(first, output...)); err != nil {
		t.Fatal(err)
	}
	tr, err := r.Chat(Options{ReasoningField: "reasoning_content"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","messages":[{"role":"user","content":"What is in /tmp?"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_3","type":"function","function":{"name":"ls","arguments":"{\"path\":\"/tmp\"}"}}],"reasoning_content":"List it."},` +
		`{"role":"tool","content":"a.txt","tool_call_id":"call_3"}]}`
	if got := string(tr.Body); got != want {
		t.Errorf("chat body\n got %s\nwant %s", got, want)
	}
}

func TestPrependNamesPreviousResponse(t *testing.T) {
	r, err := Parse([]byte(`{"model":"m","previous_response_id":"resp_1","input":"next"}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Prepend([]json.RawMessage{json.RawMessage(`{"type":"web_search_call","id":"ws_1","status":"completed"}`)}); err != nil {
		t.Fatal(err)
	}
	_, err = r.Chat(Options{})
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeUnsupported || e.Param != "previous_response_id" {
		t.Fatalf("error %v, want unsupported_parameter naming previous_response_id", err)
	}
	if err := r.Prepend([]json.RawMessage{json.RawMessage(`[]`)}); !errors.As(err, &e) || e.Param != "previous_response_id" {
		t.Fatalf("error %v, want one naming previous_response_id", err)
	}
}
