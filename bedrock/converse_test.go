package bedrock_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/bedrock"
)

const (
	haiku    = "anthropic.claude-3-haiku-20240307-v1:0"
	euWest3  = "https://bedrock-runtime.eu-west-3.amazonaws.com"
	vkHeader = "X-Gateway-Virtual-Key"
)

// native is what the fake Bedrock received of one request.
type native struct {
	Path, EscapedPath string
	Body              string
	Header            http.Header
	Unsigned          string // why the signature over Body does not verify; "" when it does
}

// fakeBedrock stands in for Bedrock: it records each request, checks its
// signature over the body it received, and answers with answer. A
// CountTokens request (POST /model/{modelId}/count-tokens) whose shape is
// not what Bedrock takes for an InvokeModel body of a Claude model is
// answered 400 ValidationException, as Bedrock does, before answer sees
// it (see countShape).
type fakeBedrock struct {
	answer http.HandlerFunc
	mu     sync.Mutex // guards got
	got    []native
}

func (f *fakeBedrock) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	n := native{Path: r.URL.Path, EscapedPath: r.URL.EscapedPath(), Body: string(body), Header: r.Header.Clone(),
		Unsigned: verify(r, body, map[string]string{testKeyID: testSecret, testStored: testSecret2})}
	f.mu.Lock()
	f.got = append(f.got, n)
	f.mu.Unlock()
	if strings.HasSuffix(r.URL.Path, "/count-tokens") {
		if msg := countShape(r, body); msg != "" {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Amzn-Errortype", "ValidationException")
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]string{"message": "fake bedrock: " + msg})
			return
		}
	}
	f.answer(w, r)
}

// countShape says what is wrong with a CountTokens request, "" when
// nothing: it must be signed, and its body must be exactly
// {"input":{"invokeModel":{"body":…}}} with, base64, a Messages body for
// InvokeModel: a JSON object with Bedrock's anthropic_version, max_tokens
// and messages, without model or stream.
func countShape(r *http.Request, body []byte) string {
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		return "no SigV4 Authorization header"
	}
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		return "not a POST of application/json"
	}
	var req struct {
		Input struct {
			InvokeModel *struct {
				Body []byte `json:"body"`
			} `json:"invokeModel"`
		} `json:"input"`
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(&req); err != nil || req.Input.InvokeModel == nil {
		return "the body is not {\"input\":{\"invokeModel\":{\"body\":…}}}"
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(req.Input.InvokeModel.Body, &m); err != nil {
		return "invokeModel.body is not a JSON object"
	}
	var maxTokens int
	switch _, model := m["model"]; {
	case model:
		return "invokeModel.body has model"
	case m["stream"] != nil:
		return "invokeModel.body has stream"
	case string(m["anthropic_version"]) != `"bedrock-2023-05-31"`:
		return "invokeModel.body has anthropic_version " + string(m["anthropic_version"])
	case json.Unmarshal(m["max_tokens"], &maxTokens) != nil || maxTokens < 1:
		return "invokeModel.body has no max_tokens"
	case len(m["messages"]) < 3 || m["messages"][0] != '[':
		return "invokeModel.body has no messages"
	}
	return ""
}

func (f *fakeBedrock) requests() []native {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]native(nil), f.got...)
}

// translationEnv is a gateway whose virtual key bedrock-prod (eu-west-3,
// stored access key) leads to a fake Bedrock answering with answer.
func translationEnv(t *testing.T, answer http.HandlerFunc) (*env, *fakeBedrock) {
	t.Helper()
	fb := &fakeBedrock{answer: answer}
	// The request logs are drained until the gateway has closed: this
	// cleanup, registered before newEnv's, runs after them.
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	e := newEnv(t, bedrock.Options{}, fb.ServeHTTP)
	go func() {
		for {
			select {
			case <-e.logs:
			case <-stop:
				return
			}
		}
	}()
	return e, fb
}

// post sends an OpenAI request to route through the virtual key.
func (e *env) post(t *testing.T, route, body string) (*http.Response, []byte) {
	t.Helper()
	return e.do(t, http.MethodPost, "/v1"+route, body, vkHeader, "bedrock-prod", "Content-Type", "application/json")
}

// jsonDiff compares two JSON texts as values.
func jsonDiff(t *testing.T, want string, got []byte) string {
	t.Helper()
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("the wanted JSON: %v", err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		return "not JSON: " + string(got)
	}
	return cmp.Diff(w, g)
}

// converseAnswer answers with a Converse JSON body.
func converseAnswer(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-Requestid", "req-123")
		io.WriteString(w, body)
	}
}

// TestConverseTranslation sends one OpenAI request with system and
// developer prompts, an image, parallel tool calls and their results, and
// a forced tool, and checks the Converse request Bedrock gets (path,
// body, a signature over that body) and the OpenAI answer the caller gets.
func TestConverseTranslation(t *testing.T) {
	e, fb := translationEnv(t, converseAnswer(`{"output":{"message":{"role":"assistant","content":[
		{"text":"Let me look."},{"toolUse":{"toolUseId":"tooluse_3","name":"weather","input":{"city":"Tromsø"}}}]}},
		"stopReason":"tool_use","usage":{"inputTokens":10,"outputTokens":7,"totalTokens":21,"cacheReadInputTokens":4},
		"metrics":{"latencyMs":120}}`))
	res, b := e.post(t, "/chat/completions", `{"model":"`+haiku+`","max_tokens":300,"temperature":0.5,"top_p":0.9,
		"stop":["END"],"user":"u-1","logprobs":false,
		"messages":[
			{"role":"system","content":"Be brief."},
			{"role":"developer","content":[{"type":"text","text":"Use metric units."}]},
			{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]},
			{"role":"assistant","content":"Checking.","tool_calls":[
				{"id":"tooluse_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Bergen\"}"}},
				{"id":"tooluse_2","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Oslo\"}"}}]},
			{"role":"tool","tool_call_id":"tooluse_1","content":"rain"},
			{"role":"tool","tool_call_id":"tooluse_2","content":[{"type":"text","text":"sun"}]},
			{"role":"user","content":"And Tromsø?"}],
		"tools":[{"type":"function","function":{"name":"weather","description":"Weather now","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],
		"tool_choice":{"type":"function","function":{"name":"weather"}}}`)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", res.StatusCode, b)
	}
	got := fb.requests()
	if len(got) != 1 {
		t.Fatalf("Bedrock got %d requests, want 1", len(got))
	}
	n := got[0]
	if n.Path != "/model/"+haiku+"/converse" || n.Unsigned != "" || n.Header.Get("Content-Type") != "application/json" {
		t.Errorf("Bedrock got %s (signature: %q) with %v", n.Path, n.Unsigned, n.Header)
	}
	if sent := e.rt.requests()[0]; sent.URL != euWest3+"/model/"+haiku+"/converse" ||
		!strings.HasPrefix(sent.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential="+testStored+"/20240102/eu-west-3/bedrock/aws4_request") {
		t.Errorf("sent to %s with Authorization %q", sent.URL, sent.Header.Get("Authorization"))
	}
	if d := jsonDiff(t, `{
		"system":[{"text":"Be brief."},{"text":"Use metric units."}],
		"messages":[
			{"role":"user","content":[{"text":"What is this?"},{"image":{"format":"png","source":{"bytes":"iVBORw0KGgo="}}}]},
			{"role":"assistant","content":[{"text":"Checking."},
				{"toolUse":{"toolUseId":"tooluse_1","name":"weather","input":{"city":"Bergen"}}},
				{"toolUse":{"toolUseId":"tooluse_2","name":"weather","input":{"city":"Oslo"}}}]},
			{"role":"user","content":[
				{"toolResult":{"toolUseId":"tooluse_1","content":[{"text":"rain"}]}},
				{"toolResult":{"toolUseId":"tooluse_2","content":[{"text":"sun"}]}},
				{"text":"And Tromsø?"}]}],
		"inferenceConfig":{"maxTokens":300,"temperature":0.5,"topP":0.9,"stopSequences":["END"]},
		"toolConfig":{"tools":[{"toolSpec":{"name":"weather","description":"Weather now",
			"inputSchema":{"json":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}}],
			"toolChoice":{"tool":{"name":"weather"}}}}`, []byte(n.Body)); d != "" {
		t.Errorf("Converse request (-want +got):\n%s", d)
	}

	var answer map[string]any
	json.Unmarshal(b, &answer)
	delete(answer, "created")
	a, _ := json.Marshal(answer)
	if d := jsonDiff(t, `{"id":"chatcmpl-req-123","object":"chat.completion","model":"`+haiku+`",
		"choices":[{"index":0,"logprobs":null,"finish_reason":"tool_calls","message":{"role":"assistant","content":"Let me look.","refusal":null,
			"tool_calls":[{"id":"tooluse_3","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Tromsø\"}"}}]}}],
		"usage":{"prompt_tokens":14,"completion_tokens":7,"total_tokens":21,"prompt_tokens_details":{"cached_tokens":4}}}`, a); d != "" {
		t.Errorf("OpenAI answer (-want +got):\n%s", d)
	}
	if res.Header.Get("Content-Type") != "application/json" || res.Header.Get(gateway.HeaderProvider) != "bedrock" {
		t.Errorf("headers %v", res.Header)
	}
}

// TestConverseRequestMapping checks the Converse body of smaller requests,
// one mapping decision each.
func TestConverseRequestMapping(t *testing.T) {
	const hi = `"messages":[{"role":"user","content":"Hi"}]`
	const weather = `"tools":[{"type":"function","function":{"name":"weather","parameters":{"type":"object"}}}]`
	const hiNative = `"messages":[{"role":"user","content":[{"text":"Hi"}]}]`
	const weatherNative = `"tools":[{"toolSpec":{"name":"weather","inputSchema":{"json":{"type":"object"}}}}]`
	cases := []struct{ name, body, want string }{
		{"only a user message", `{` + hi + `}`, `{` + hiNative + `}`},
		{"max_completion_tokens wins over max_tokens, one stop string",
			`{"max_tokens":5,"max_completion_tokens":9,"stop":"END",` + hi + `}`,
			`{"inferenceConfig":{"maxTokens":9,"stopSequences":["END"]},` + hiNative + `}`},
		{"tool_choice auto", `{"tool_choice":"auto",` + weather + `,` + hi + `}`,
			`{"toolConfig":{` + weatherNative + `,"toolChoice":{"auto":{}}},` + hiNative + `}`},
		{"tool_choice required", `{"tool_choice":"required","parallel_tool_calls":true,` + weather + `,` + hi + `}`,
			`{"toolConfig":{` + weatherNative + `,"toolChoice":{"any":{}}},` + hiNative + `}`},
		{"no tool_choice", `{` + weather + `,` + hi + `}`, `{"toolConfig":{` + weatherNative + `},` + hiNative + `}`},
		{"tool_choice none leaves the tools out", `{"tool_choice":"none",` + weather + `,` + hi + `}`, `{` + hiNative + `}`},
		{"a tool without parameters",
			`{"tools":[{"type":"function","function":{"name":"now","description":"The time"}}],` + hi + `}`,
			`{"toolConfig":{"tools":[{"toolSpec":{"name":"now","description":"The time","inputSchema":{"json":{"type":"object","properties":{}}}}}]},` + hiNative + `}`},
		{"parameters asking for nothing pass", `{"presence_penalty":0,"frequency_penalty":0,"logit_bias":{},"n":1,"response_format":{"type":"text"},` + hi + `}`,
			`{` + hiNative + `}`},
		{"consecutive turns merged, empty ones dropped",
			`{"messages":[{"role":"user","content":"a"},{"role":"user","content":[{"type":"text","text":"b"},{"type":"text","text":""}]},
				{"role":"assistant","content":""},{"role":"user","content":"c"}]}`,
			`{"messages":[{"role":"user","content":[{"text":"a"},{"text":"b"},{"text":"c"}]}]}`},
		{"jpeg, gif and webp images", `{"messages":[{"role":"user","content":[
				{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4A=="}},
				{"type":"image_url","image_url":{"url":"data:image/gif;base64,R0lGOA=="}},
				{"type":"image_url","image_url":{"url":"data:image/webp;base64,UklGRg=="}}]}]}`,
			`{"messages":[{"role":"user","content":[{"image":{"format":"jpeg","source":{"bytes":"/9j/4A=="}}},
				{"image":{"format":"gif","source":{"bytes":"R0lGOA=="}}},{"image":{"format":"webp","source":{"bytes":"UklGRg=="}}}]}]}`},
		{"a tool call without arguments", `{` + weather + `,"messages":[{"role":"user","content":"Hi"},
				{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"weather","arguments":""}}]},
				{"role":"tool","tool_call_id":"t1","content":""}]}`,
			`{"toolConfig":{` + weatherNative + `},"messages":[{"role":"user","content":[{"text":"Hi"}]},
				{"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"weather","input":{}}}]},
				{"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"text":""}]}}]}]}`},
	}
	e, fb := translationEnv(t, converseAnswer(`{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn","usage":{}}`))
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, b := e.post(t, "/chat/completions", `{"model":"`+haiku+`",`+strings.TrimPrefix(c.body, "{"))
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", res.StatusCode, b)
			}
			got := fb.requests()
			if len(got) != i+1 {
				t.Fatalf("Bedrock got %d requests, want %d", len(got), i+1)
			}
			if d := jsonDiff(t, c.want, []byte(got[i].Body)); d != "" {
				t.Errorf("Converse request (-want +got):\n%s", d)
			}
		})
	}
}

// TestConverseModelARN: a model ARN stays one path segment, its '/' sent
// as %2F, and the signature covers that path.
func TestConverseModelARN(t *testing.T) {
	const arn = "arn:aws:bedrock:eu-west-3:123456789012:inference-profile/eu.anthropic.claude-3-haiku-20240307-v1:0"
	const escaped = "/model/arn:aws:bedrock:eu-west-3:123456789012:inference-profile%2Feu.anthropic.claude-3-haiku-20240307-v1:0/converse"
	e, fb := translationEnv(t, converseAnswer(`{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn"}`))
	res, b := e.post(t, "/chat/completions", `{"model":"`+arn+`","messages":[{"role":"user","content":"Hi"}]}`)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", res.StatusCode, b)
	}
	n := fb.requests()[0]
	got := []string{e.rt.requests()[0].URL, n.EscapedPath, n.Path, n.Unsigned}
	want := []string{euWest3 + escaped, escaped, "/model/" + arn + "/converse", ""}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("URL, path as received, path, signature check (-want +got):\n%s", d)
	}
}

// converseEvents is a ConverseStream answer: text in two pieces, then a
// tool call whose arguments arrive in two pieces, messageStop and, when
// withMetadata, the metadata event with the usage.
func converseEvents(withMetadata bool) []byte {
	var b bytes.Buffer
	for _, ev := range [][2]string{
		{"messageStart", `{"p":"abcdef","role":"assistant"}`},
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hel"},"p":"abc"}`},
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"lo"}}`},
		{"contentBlockStop", `{"contentBlockIndex":0}`},
		{"contentBlockStart", `{"contentBlockIndex":1,"start":{"toolUse":{"name":"weather","toolUseId":"tooluse_9","type":"tool_use"}}}`},
		{"contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":""}}}`},
		{"contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"city\":"}}}`},
		{"contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":"\"Oslo\"}"}}}`},
		{"contentBlockStop", `{"contentBlockIndex":1}`},
		{"messageStop", `{"stopReason":"tool_use"}`},
	} {
		b.Write(event(ev[0], ev[1]))
	}
	if withMetadata {
		b.Write(event("metadata", `{"metrics":{"latencyMs":5},"usage":{"inputTokens":12,"outputTokens":9,"totalTokens":23,"cacheReadInputTokens":2}}`))
	}
	return b.Bytes()
}

// sseDeltas reads an OpenAI stream into one line per event: the delta and
// finish reason of a chunk, "usage …" for a usage chunk, [DONE], or
// "error …". Every chunk must carry id and model.
func sseDeltas(t *testing.T, stream []byte, id, model string) []string {
	t.Helper()
	var out []string
	for _, ev := range strings.Split(strings.TrimSuffix(string(stream), "\n\n"), "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok {
			t.Fatalf("not an SSE data event: %q", ev)
		}
		if data == "[DONE]" {
			out = append(out, data)
			continue
		}
		var c struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			Model   string `json:"model"`
			Choices []struct {
				Delta        json.RawMessage `json:"delta"`
				FinishReason *string         `json:"finish_reason"`
			} `json:"choices"`
			Usage json.RawMessage `json:"usage"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("event %s: %v", data, err)
		}
		switch {
		case c.Error != nil:
			out = append(out, "error "+string(c.Error))
			continue
		case c.ID != id || c.Object != "chat.completion.chunk" || c.Model != model:
			t.Fatalf("chunk %s: want id %s, model %s", data, id, model)
		case len(c.Choices) == 0:
			out = append(out, "usage "+string(c.Usage))
			continue
		}
		d := string(c.Choices[0].Delta)
		if f := c.Choices[0].FinishReason; f != nil {
			d += " finish=" + *f
		}
		out = append(out, d)
	}
	return out
}

// TestConverseStreamTranslation: ConverseStream's binary events become
// OpenAI chunks as they arrive: the role first, content and tool-call
// deltas with a stable index and id, the finish reason, the usage chunk
// asked for (from the metadata event after messageStop), then [DONE].
func TestConverseStreamTranslation(t *testing.T) {
	events := converseEvents(true)
	first := len(event("messageStart", `{"p":"abcdef","role":"assistant"}`)) +
		len(event("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hel"},"p":"abc"}`))
	release := make(chan struct{})
	e, fb := translationEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		w.Header().Set("X-Amzn-Requestid", "req-s")
		w.Write(events[:first])
		http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Write(events[first:])
	})
	res := e.send(t, http.MethodPost, "/v1/chat/completions",
		`{"model":"`+haiku+`","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hi"}]}`,
		vkHeader, "bedrock-prod", "Content-Type", "application/json")
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		close(release)
		t.Fatalf("status %d, Content-Type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	// The first two events reach the caller before Bedrock sends more.
	br := bufio.NewReader(res.Body)
	var head bytes.Buffer
	for i := 0; i < 4; i++ { // two events, each a data line and a blank line
		line, err := br.ReadBytes('\n')
		if err != nil {
			close(release)
			t.Fatalf("reading the first events: %v (got %q)", err, head.String())
		}
		head.Write(line)
	}
	close(release)
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	n := fb.requests()[0]
	if n.Path != "/model/"+haiku+"/converse-stream" || n.Unsigned != "" || strings.Contains(n.Body, "stream") {
		t.Errorf("Bedrock got %s (signature: %q): %s", n.Path, n.Unsigned, n.Body)
	}
	want := []string{
		`{"role":"assistant","content":""}`,
		`{"content":"Hel"}`,
		`{"content":"lo"}`,
		`{"tool_calls":[{"index":0,"id":"tooluse_9","type":"function","function":{"name":"weather","arguments":""}}]}`,
		`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`,
		`{"tool_calls":[{"index":0,"function":{"arguments":"\"Oslo\"}"}}]}`,
		`{} finish=tool_calls`,
		`usage {"prompt_tokens":14,"completion_tokens":9,"total_tokens":23,"prompt_tokens_details":{"cached_tokens":2}}`,
		"[DONE]",
	}
	if d := cmp.Diff(want, sseDeltas(t, append(head.Bytes(), rest...), "chatcmpl-req-s", haiku)); d != "" {
		t.Errorf("chunks (-want +got):\n%s", d)
	}
}

// TestConverseStreamEnds covers how a stream ends: without usage asked
// for, after messageStop without metadata, on the real Titan capture, on
// an exception (an error event, no [DONE]), and cut or corrupted (the
// caller's connection is aborted: reading fails).
func TestConverseStreamEnds(t *testing.T) {
	all := converseEvents(true)
	noMeta := converseEvents(false)
	beforeStop := noMeta[:len(noMeta)-len(event("messageStop", `{"stopReason":"tool_use"}`))]
	corrupt := append([]byte{}, all...)
	corrupt[len(corrupt)-30] ^= 1
	exception := append(append([]byte{}, beforeStop...),
		frame(`{"message":"Too many tokens, please wait before trying again."}`,
			":message-type", "exception", ":exception-type", "throttlingException", ":content-type", "application/json")...)
	errorMsg := append(append([]byte{}, beforeStop...),
		frame("", ":message-type", "error", ":error-code", "InternalFailure", ":error-message", "boom")...)
	body := func(usage bool) string {
		return `{"model":"` + haiku + `","stream":true,"stream_options":{"include_usage":` + map[bool]string{true: "true", false: "false"}[usage] +
			`},"messages":[{"role":"user","content":"Hi"}]}`
	}
	toolDeltas := []string{
		`{"role":"assistant","content":""}`, `{"content":"Hel"}`, `{"content":"lo"}`,
		`{"tool_calls":[{"index":0,"id":"tooluse_9","type":"function","function":{"name":"weather","arguments":""}}]}`,
		`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`,
		`{"tool_calls":[{"index":0,"function":{"arguments":"\"Oslo\"}"}}]}`,
	}
	with := func(more ...string) []string { return append(append([]string{}, toolDeltas...), more...) }
	cases := []struct {
		name    string
		stream  []byte
		usage   bool
		want    []string // nil: reading must fail
		wantErr bool
	}{
		{"no usage asked for", all, false, with(`{} finish=tool_calls`, "[DONE]"), false},
		{"no metadata", noMeta, true, with(`{} finish=tool_calls`, "[DONE]"), false},
		{"real Titan capture", unhex(titanStream), true, []string{
			`{"role":"assistant","content":""}`,
			`{"content":"I am Amazon Titan, a large language model built by AWS. I was designed to assist you with tasks or answer any questions you may have. How may I help you?"}`,
			`{} finish=stop`,
			`usage {"prompt_tokens":8,"completion_tokens":39,"total_tokens":47,"prompt_tokens_details":{"cached_tokens":0}}`,
			"[DONE]"}, false},
		{"exception", exception, true, with(`error {"code":"throttlingException","message":"Too many tokens, please wait before trying again.","param":null,"type":"rate_limit_error"}`), false},
		{"error message", errorMsg, true, with(`error {"code":"InternalFailure","message":"boom","param":null,"type":"gateway_error"}`), false},
		{"ended before messageStop", beforeStop, true, nil, true},
		{"cut in a message", all[:len(all)-10], true, nil, true},
		{"bad CRC", corrupt, true, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, _ := translationEnv(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
				w.Header().Set("X-Amzn-Requestid", "req-e")
				w.Write(c.stream)
			})
			res := e.send(t, http.MethodPost, "/v1/chat/completions", body(c.usage), vkHeader, "bedrock-prod", "Content-Type", "application/json")
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d", res.StatusCode)
			}
			b, err := io.ReadAll(res.Body)
			if c.wantErr {
				if err == nil {
					t.Errorf("the stream ended cleanly, want the connection aborted; got %q", b)
				}
				if bytes.Contains(b, []byte("[DONE]")) {
					t.Errorf("an aborted stream sent [DONE]: %q", b)
				}
				return
			}
			if err != nil {
				t.Fatalf("reading: %v", err)
			}
			if d := cmp.Diff(c.want, sseDeltas(t, b, "chatcmpl-req-e", haiku)); d != "" {
				t.Errorf("chunks (-want +got):\n%s", d)
			}
		})
	}
}
