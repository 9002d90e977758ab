package messages

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelgateway/gateway/internal/chat"
)

func TestRequestClaudeCode(t *testing.T) {
	body := readFile(t, "claude_code.request.json")
	for _, tc := range []struct {
		name    string
		dialect Dialect
		dropped []string
	}{
		{"openai", Dialect{}, []string{
			"system[0].cache_control", "system[1].cache_control", "messages[0].content[1].cache_control",
			"messages[1].content[0]", "messages[2].content[0].is_error", "messages[3].content[0]",
			"messages[3].content[1]", "messages[4].content[0].cache_control", "tools[3].cache_control"}},
		{"reasoning_content", Dialect{Reasoning: "reasoning_content"}, []string{
			"system[0].cache_control", "system[1].cache_control", "messages[0].content[1].cache_control",
			"messages[1].content[0].signature", "messages[2].content[0].is_error", "messages[3].content[0].signature",
			"messages[3].content[1]", "messages[4].content[0].cache_control", "tools[3].cache_control"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := Request(body, tc.dialect)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "claude_code."+tc.name+".chat.json", tr.Body)
			if diff := cmp.Diff(tc.dropped, tr.Dropped); diff != "" {
				t.Errorf("Dropped (-want +got):\n%s", diff)
			}
			if tr.Model != "claude-sonnet-4-5-20250929" || !tr.Stream {
				t.Errorf("Model, Stream = %q, %v", tr.Model, tr.Stream)
			}
			// What the root's translators read of it parses.
			if _, err := chat.ParseRequest(tr.Body); err != nil {
				t.Errorf("chat.ParseRequest: %v", err)
			}
		})
	}
}

func TestRequestMapping(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		dialect    Dialect
		want       string
	}{
		{"string system and content", `{"model":"m","max_tokens":10,"system":"be brief","messages":[{"role":"user","content":"hi"}]}`, Dialect{},
			`{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],"max_tokens":10}`},
		{"tool choice any, no parallel", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"any","disable_parallel_tool_use":true}}`, Dialect{},
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"required","parallel_tool_calls":false,"max_tokens":10}`},
		{"tool choice tool", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"custom","name":"f\"x","description":"d","input_schema":{}}],"tool_choice":{"type":"tool","name":"f\"x"}}`, Dialect{},
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f\"x","description":"d","parameters":{}}}],"tool_choice":{"type":"function","function":{"name":"f\"x"}},"max_tokens":10}`},
		{"tool choice auto and none", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"tool_choice":{"type":"none"}}`, Dialect{},
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"tool_choice":"none","max_tokens":10}`},
		{"sampling, stop, user, top_k allowed", `{"model":"m","max_tokens":10,"temperature":0.5,"top_p":0.9,"top_k":40,"stop_sequences":["END","##"],"metadata":{"user_id":"u1"},"service_tier":"auto","messages":[{"role":"user","content":"hi"}]}`, Dialect{TopK: true},
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"stop":["END","##"],"max_tokens":10,"temperature":0.5,"top_p":0.9,"top_k":40,"user":"u1"}`},
		{"thinking low, reasoning member", `{"model":"m","max_tokens":8000,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":""},{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`, Dialect{Reasoning: "reasoning"},
			`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"ab","reasoning":"hmm"}],"max_completion_tokens":8000,"reasoning_effort":"low"}`},
		{"thinking medium, disabled", `{"model":"m","max_tokens":8000,"thinking":{"type":"enabled","budget_tokens":10000},"messages":[{"role":"user","content":"hi"}]}`, Dialect{},
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":8000,"reasoning_effort":"medium"}`},
		{"thinking disabled", `{"model":"m","max_tokens":80,"thinking":{"type":"disabled"},"messages":[{"role":"user","content":"hi"}]}`, Dialect{},
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":80}`},
		{"images", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://x/y.png"}},{"type":"text","text":"what?"}]}]}`, Dialect{},
			`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}},{"type":"text","text":"what?"}]}],"max_tokens":1}`},
		{"tool results before the text, images after them", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":{ "x" : 1 }},{"type":"tool_use","id":"b","name":"g","input":{}}]},{"role":"user","content":[{"type":"text","text":"note"},{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"1"},{"type":"text","text":"2"},{"type":"image","source":{"type":"base64","media_type":"image/gif","data":"R0lG"}}]},{"type":"tool_result","tool_use_id":"b"}]}]}`, Dialect{},
			`{"model":"m","messages":[{"role":"user","content":"go"},{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}},{"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]},{"role":"tool","content":"1\n2","tool_call_id":"a"},{"role":"tool","content":"","tool_call_id":"b"},{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/gif;base64,R0lG"}},{"type":"text","text":"note"}]}],"max_tokens":1}`},
		{"stream asks for usage", `{"model":"m","max_tokens":1,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, Dialect{},
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":1,"stream":true,"stream_options":{"include_usage":true}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := Request([]byte(tc.body), tc.dialect)
			if err != nil {
				t.Fatal(err)
			}
			if string(tr.Body) != tc.want {
				t.Errorf("got  %s\nwant %s", tr.Body, tc.want)
			}
		})
	}
}

func TestRequestRefused(t *testing.T) {
	deep := `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":` +
		strings.Repeat(`{"a":`, 200) + `1` + strings.Repeat(`}`, 200) + `}]}`
	msg := func(content string) string {
		return `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"ok"},{"role":"user","content":` + content + `}]}`
	}
	for _, tc := range []struct {
		name, body  string
		code, param string
	}{
		{"document", msg(`[{"type":"text","text":"x"},{"type":"document","source":{"type":"text","media_type":"text/plain","data":"d"}}]`), CodeUnsupportedParameter, "messages[2].content[1].type"},
		{"document in tool result", msg(`[{"type":"tool_result","tool_use_id":"t","content":[{"type":"document"}]}]`), CodeUnsupportedParameter, "messages[2].content[0].content[0].type"},
		{"server tool", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":5}]}`, CodeUnsupportedParameter, "tools[0].type"},
		{"top_k", `{"model":"m","max_tokens":1,"top_k":5,"messages":[{"role":"user","content":"hi"}]}`, CodeUnsupportedParameter, "top_k"},
		{"unknown member", `{"model":"m","max_tokens":1,"mcp_servers":[],"messages":[{"role":"user","content":"hi"}]}`, CodeUnsupportedParameter, "mcp_servers"},
		{"file image", msg(`[{"type":"image","source":{"type":"file","file_id":"f"}}]`), CodeUnsupportedParameter, "messages[2].content[0].source.type"},
		{"thinking adaptive", `{"model":"m","max_tokens":1,"thinking":{"type":"adaptive"},"messages":[{"role":"user","content":"hi"}]}`, CodeUnsupportedParameter, "thinking.type"},
		{"tool_use in a user message", msg(`[{"type":"tool_use","id":"a","name":"f","input":{}}]`), CodeUnsupportedParameter, "messages[2].content[0].type"},
		{"unknown block", msg(`[{"type":"hologram"}]`), CodeInvalidJSON, "messages[2].content[0].type"},
		{"no model", `{"max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`, CodeInvalidJSON, "model"},
		{"no max_tokens", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, CodeInvalidJSON, "max_tokens"},
		{"no messages", `{"model":"m","max_tokens":1,"messages":[]}`, CodeInvalidJSON, "messages"},
		{"bad role", `{"model":"m","max_tokens":1,"messages":[{"role":"system","content":"hi"}]}`, CodeInvalidJSON, "messages[0].role"},
		{"empty blocks", msg(`[]`), CodeInvalidJSON, "messages[2].content"},
		{"content a number", msg(`7`), CodeInvalidJSON, "messages.content"},
		{"max_tokens a string", `{"model":"m","max_tokens":"1","messages":[{"role":"user","content":"hi"}]}`, CodeInvalidJSON, "max_tokens"},
		{"tool input not an object", `{"model":"m","max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":[1]}]}]}`, CodeInvalidJSON, "messages[0].content[0].input"},
		{"tool_result without id", msg(`[{"type":"tool_result","content":"x"}]`), CodeInvalidJSON, "messages[2].content[0].tool_use_id"},
		{"tool choice tool without name", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"tool_choice":{"type":"tool"}}`, CodeInvalidJSON, "tool_choice.name"},
		{"system image", `{"model":"m","max_tokens":1,"system":[{"type":"image"}],"messages":[{"role":"user","content":"hi"}]}`, CodeUnsupportedParameter, "system[0].type"},
		{"too deep", deep, CodeInvalidJSON, ""},
		{"not JSON", `{"model":`, CodeInvalidJSON, ""},
		{"not an object", `[1]`, CodeInvalidJSON, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Request([]byte(tc.body), Dialect{})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want an *Error", err)
			}
			if e.Code != tc.code || e.Param != tc.param {
				t.Errorf("code, param = %q, %q, want %q, %q (%v)", e.Code, e.Param, tc.code, tc.param, e)
			}
		})
	}
}
