package messages

import (
	"errors"
	"testing"
)

func TestCountTokens(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       int
	}{
		// 3 for the message, 5 bytes of text: 2 tokens.
		{"one message", `{"model":"m","messages":[{"role":"user","content":"hello"}]}`, 5},
		// system "ab" (4 bytes with its quotes) and "hi": 6 bytes, 2
		// tokens; 3 for the message.
		{"system", `{"model":"m","system":"ab","messages":[{"role":"user","content":"hi"}]}`, 5},
		// message 3, blocks 3+3+3, image 1600, 350 for tools, tool 3;
		// bytes: "look" 4, tool_result "12345678" 8 + its block, tool
		// "f" 1 + "d" 1 + schema 17 = 31: 8 tokens.
		{"blocks, image, tools", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","source":{"type":"url","url":"https://x"}},{"type":"tool_result","tool_use_id":"t","content":"12345678"}]}],"tools":[{"name":"f","description":"d","input_schema":{"type":"object"}}]}`, 3 + 9 + 1600 + 350 + 3 + 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CountTokens([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("CountTokens = %d, want %d", got, tc.want)
			}
		})
	}
	var e *Error
	if _, err := CountTokens([]byte(`{"model":"m","messages":[]}`)); !errors.As(err, &e) || e.Param != "messages" {
		t.Errorf("no messages: %v", err)
	}
	if got := string(CountTokensBody(1234)); got != `{"input_tokens":1234}` {
		t.Errorf("CountTokensBody = %s", got)
	}
}

// TestCountTokensClaudeCode checks the estimate of an agent's request
// stays where its parts put it: about 1100 tokens of text and schemas,
// 1600 for its image, 350 for its tools and some framing.
func TestCountTokensClaudeCode(t *testing.T) {
	n, err := CountTokens(readFile(t, "claude_code.request.json"))
	if err != nil {
		t.Fatal(err)
	}
	if n < 2800 || n > 3500 {
		t.Errorf("CountTokens = %d, want about 3100", n)
	}
}

// TestInputTokens: a cloud host's count is read from its member only when
// it is a whole number of at least 0.
func TestInputTokens(t *testing.T) {
	for _, tc := range []struct {
		body string
		want int
		ok   bool
	}{
		{`{"inputTokens":17}`, 17, true},
		{`{"inputTokens":0,"other":[1]}`, 0, true},
		{`{"input_tokens":17}`, 0, false},
		{`{"inputTokens":null}`, 0, false},
		{`{"inputTokens":"17"}`, 0, false},
		{`{"inputTokens":-3}`, 0, false},
		{`{"inputTokens":1e3}`, 0, false},
		{`{"inputTokens":17.0}`, 0, false},
		{`{"inputTokens":99999999999}`, 0, false},
		{`[17]`, 0, false},
		{``, 0, false},
	} {
		n, err := InputTokens([]byte(tc.body), "inputTokens")
		if (err == nil) != tc.ok || n != tc.want {
			t.Errorf("InputTokens(%s) = %d, %v; want %d, ok %v", tc.body, n, err, tc.want, tc.ok)
		}
	}
}
