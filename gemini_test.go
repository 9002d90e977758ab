package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modelgateway/gateway/internal/chat"
)

// geminiKind is one of the two kinds that speak Gemini: how the harness
// reaches it and how the fake upstream sees it.
type geminiKind struct {
	name   string // provider slug
	vk     string // virtual key slug
	models string // path of the models at the fake upstream
	auth   string // the credential header the provider must get
	key    string // and its value
	other  string // the credential header it must not get
}

var geminiKinds = []geminiKind{
	{ProviderGoogle, "vk-google", "/v1beta/models/", "X-Goog-Api-Key", "gk-stored", "Authorization"},
	{ProviderVertexAI, "vk-vertex", "/v1/projects/my-proj/locations/us-central1/publishers/google/models/", "Authorization", "Bearer ya29.stored", "X-Goog-Api-Key"},
}

// geminiEnv is a gateway with virtual keys "vk-google" (kind google) and
// "vk-vertex" (kind vertex-ai, project my-proj in us-central1) pointing at
// one fake Google host that answers with h.
func geminiEnv(t *testing.T, h http.HandlerFunc) *coreEnv {
	t.Helper()
	up := newCoreUpstream(t, h)
	e := newCoreEnv(t, up, nil)
	e.store.AddVirtualKey(VirtualKey{Slug: "vk-google", Provider: ProviderGoogle, APIKey: "gk-stored", BaseURL: up.URL + "/v1beta", WorkspaceID: "ws-1"})
	e.store.AddVirtualKey(VirtualKey{Slug: "vk-vertex", Provider: ProviderVertexAI, APIKey: "ya29.stored", BaseURL: up.URL, WorkspaceID: "ws-1",
		HostSettings: HostSettings{ProjectID: "my-proj", Region: "us-central1"}})
	return e
}

// postAs posts body to the gateway path through virtual key vk.
func postAs(e *coreEnv, vk, path, body string) *http.Response {
	return e.do("POST", path, strings.NewReader(body),
		"x-gateway-api-key: "+coreKey, "x-gateway-virtual-key: "+vk, "Content-Type: application/json")
}

// checkNative fails unless the provider got exactly path and query, the
// kind's credential header and not the other, and a body equal to want as
// JSON.
func checkNative(t *testing.T, k geminiKind, got coreReceived, path, query, want string) {
	t.Helper()
	if got.Method != "POST" || got.Path != path || got.Query != query {
		t.Errorf("provider got %s %s?%s, want POST %s?%s", got.Method, got.Path, got.Query, path, query)
	}
	if got.Header.Get(k.auth) != k.key || got.Header.Get(k.other) != "" || strings.Contains(got.Query, "key") {
		t.Errorf("provider got credentials %s=%q %s=%q query %q, want only %s", k.auth, got.Header.Get(k.auth), k.other, got.Header.Get(k.other), got.Query, k.auth)
	}
	if ct := got.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("provider got Content-Type %q", ct)
	}
	var native, w any
	if err := json.Unmarshal([]byte(got.Body), &native); err != nil {
		t.Fatalf("provider got a body that is not JSON: %s", got.Body)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(w, native); d != "" {
		t.Errorf("native request (-want +got):\n%s", d)
	}
}

// callIDs matches the tool call ids the translation makes up.
var callIDs = regexp.MustCompile(`call_[0-9a-f]{24}`)

// sameIDs replaces the made-up tool call ids of s by "ID", failing if
// two of them are equal.
func sameIDs(t *testing.T, s string) string {
	t.Helper()
	seen := map[string]bool{}
	for _, id := range callIDs.FindAllString(s, -1) {
		if seen[id] {
			t.Errorf("tool call id %s given twice", id)
		}
		seen[id] = true
	}
	return callIDs.ReplaceAllString(s, "ID")
}

// TestGeminiTranslation sends one OpenAI chat request with system and
// developer prompts, two images, parallel tool calls and their results,
// tools, a named tool choice, a JSON schema and every sampling parameter
// Gemini has, to both Gemini kinds, and checks the generateContent
// request each gets and the OpenAI answer the caller gets.
func TestGeminiTranslation(t *testing.T) {
	e := geminiEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		io.WriteString(w, `{"candidates":[
			{"content":{"role":"model","parts":[{"text":"Let me look.","thoughtSignature":"c2ln"},{"functionCall":{"name":"weather","args":{"city":"Oslo"}}},{"functionCall":{"name":"time"}}]},"finishReason":"STOP"},
			{"index":1,"content":{"role":"model","parts":[{"text":"hmm","thought":true},{"text":"{\"city\":"}]},"finishReason":"MAX_TOKENS"}],
			"usageMetadata":{"promptTokenCount":14,"candidatesTokenCount":7,"thoughtsTokenCount":3,"totalTokenCount":24,"cachedContentTokenCount":4},
			"modelVersion":"gemini-2.0-flash-001","responseId":"resp-1"}`)
	})
	const request = `{"model":"gemini-2.0-flash","n":2,"max_completion_tokens":300,"temperature":0.5,"top_p":0.9,"stop":"END",
		"seed":7,"presence_penalty":0.1,"frequency_penalty":0.2,"logprobs":false,"user":"u-1",
		"response_format":{"type":"json_schema","json_schema":{"name":"w","schema":{"type":"object","additionalProperties":false}}},
		"messages":[
			{"role":"system","content":"Be brief."},
			{"role":"developer","content":[{"type":"text","text":"Answer in JSON."}]},
			{"role":"user","content":[{"type":"text","text":"What is this?"},
				{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},
				{"type":"image_url","image_url":{"url":"https://example.com/cat.webp?s=1"}}]},
			{"role":"assistant","content":"Checking.","tool_calls":[
				{"id":"call_a","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Bergen\"}"}},
				{"id":"call_b","type":"function","function":{"name":"time","arguments":""}}]},
			{"role":"tool","tool_call_id":"call_a","content":"rain"},
			{"role":"tool","tool_call_id":"call_b","content":"{\"hour\":9}"},
			{"role":"user","content":"And Oslo?"}],
		"tools":[{"type":"function","function":{"name":"weather","description":"Weather now","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}},
			{"type":"function","function":{"name":"time"}}],
		"tool_choice":{"type":"function","function":{"name":"weather"}}}`
	const native = `{
		"systemInstruction":{"parts":[{"text":"Be brief."},{"text":"Answer in JSON."}]},
		"contents":[
			{"role":"user","parts":[{"text":"What is this?"},{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}},
				{"fileData":{"mimeType":"image/webp","fileUri":"https://example.com/cat.webp?s=1"}}]},
			{"role":"model","parts":[{"text":"Checking."},{"functionCall":{"name":"weather","args":{"city":"Bergen"}}},{"functionCall":{"name":"time","args":{}}}]},
			{"role":"user","parts":[{"functionResponse":{"name":"weather","response":{"content":"rain"}}},
				{"functionResponse":{"name":"time","response":{"hour":9}}},{"text":"And Oslo?"}]}],
		"tools":[{"functionDeclarations":[
			{"name":"weather","description":"Weather now","parametersJsonSchema":{"type":"object","properties":{"city":{"type":"string"}}}},
			{"name":"time"}]}],
		"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["weather"]}},
		"generationConfig":{"temperature":0.5,"topP":0.9,"maxOutputTokens":300,"stopSequences":["END"],"candidateCount":2,
			"responseMimeType":"application/json","responseJsonSchema":{"type":"object","additionalProperties":false},
			"seed":7,"presencePenalty":0.1,"frequencyPenalty":0.2}}`
	const answer = `{"id":"chatcmpl-resp-1","object":"chat.completion","model":"gemini-2.0-flash-001",
		"choices":[
			{"index":0,"logprobs":null,"finish_reason":"tool_calls","message":{"role":"assistant","content":"Let me look.","refusal":null,
				"tool_calls":[{"id":"ID","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Oslo\"}"}},
					{"id":"ID","type":"function","function":{"name":"time","arguments":"{}"}}]}},
			{"index":1,"logprobs":null,"finish_reason":"length","message":{"role":"assistant","content":"{\"city\":","refusal":null}}],
		"usage":{"prompt_tokens":14,"completion_tokens":10,"total_tokens":24,"prompt_tokens_details":{"cached_tokens":4}}}`
	for i, k := range geminiKinds {
		t.Run(k.name, func(t *testing.T) {
			res := postAs(e, k.vk, "/v1/chat/completions", request)
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != 200 {
				t.Fatalf("status %d: %s", res.StatusCode, b)
			}
			checkNative(t, k, e.up.received()[i], k.models+"gemini-2.0-flash:generateContent", "", native)
			var got, want map[string]any
			json.Unmarshal([]byte(sameIDs(t, string(b))), &got)
			if _, ok := got["created"].(float64); !ok {
				t.Errorf("answer has no created time: %s", b)
			}
			delete(got, "created")
			json.Unmarshal([]byte(answer), &want)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("OpenAI answer (-want +got):\n%s", d)
			}
			if res.Header.Get("Content-Type") != "application/json" || res.Header.Get(HeaderProvider) != k.name {
				t.Errorf("answer headers %v", res.Header)
			}
		})
	}
}

// geminiEvents is a streamed Gemini answer (alt=sse, CRLF as Google sends
// it): text in two events, then a function call with the finish reason
// and the final usage.
const geminiEvents = "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hel\"}]}}],\"usageMetadata\":{\"promptTokenCount\":12},\"modelVersion\":\"gemini-2.0-flash-001\",\"responseId\":\"resp-s\"}\r\n\r\n" +
	"data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"lo\"}]}}],\"modelVersion\":\"gemini-2.0-flash-001\",\"responseId\":\"resp-s\"}\r\n\r\n" +
	"data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"weather\",\"args\":{\"city\":\"Oslo\"}}}]},\"finishReason\":\"STOP\"}]," +
	"\"usageMetadata\":{\"promptTokenCount\":12,\"candidatesTokenCount\":9,\"totalTokenCount\":21,\"cachedContentTokenCount\":2},\"modelVersion\":\"gemini-2.0-flash-001\",\"responseId\":\"resp-s\"}\r\n\r\n"

// serveEvents answers with the SSE events of stream, flushing each.
func serveEvents(stream string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range strings.SplitAfter(stream, "\r\n\r\n") {
			io.WriteString(w, ev)
			http.NewResponseController(w).Flush()
		}
	}
}

// chunkDeltas reads an OpenAI stream and returns each event as its delta
// and finish reason, "usage …" or "[DONE]", failing on an event that is
// not a chunk of id and model.
func chunkDeltas(t *testing.T, b []byte, id, model string) []string {
	t.Helper()
	var deltas []string
	for _, ev := range strings.Split(strings.TrimSpace(string(b)), "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok {
			t.Fatalf("not an SSE data event: %q", ev)
		}
		if data == "[DONE]" {
			deltas = append(deltas, "[DONE]")
			continue
		}
		var c struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			Model   string `json:"model"`
			Choices []struct {
				Index        int             `json:"index"`
				Delta        json.RawMessage `json:"delta"`
				FinishReason *string         `json:"finish_reason"`
			} `json:"choices"`
			Usage json.RawMessage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil || c.ID != id || c.Object != "chat.completion.chunk" || c.Model != model {
			t.Fatalf("chunk %s: %v", data, err)
		}
		if len(c.Choices) == 0 {
			deltas = append(deltas, "usage "+string(c.Usage))
			continue
		}
		d := string(c.Choices[0].Delta)
		if f := c.Choices[0].FinishReason; f != nil {
			d += " finish=" + *f
		}
		deltas = append(deltas, d)
	}
	return deltas
}

// TestGeminiStreamTranslation: Gemini's events become OpenAI chunks, role
// first, content and a tool-call delta with its index and id, the finish
// reason, the usage chunk asked for, then [DONE], for both kinds.
func TestGeminiStreamTranslation(t *testing.T) {
	e := geminiEnv(t, serveEvents(geminiEvents))
	want := []string{
		`{"role":"assistant","content":""}`,
		`{"content":"Hel"}`,
		`{"content":"lo"}`,
		`{"tool_calls":[{"index":0,"id":"ID","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Oslo\"}"}}]}`,
		`{} finish=tool_calls`,
		`usage {"prompt_tokens":12,"completion_tokens":9,"total_tokens":21,"prompt_tokens_details":{"cached_tokens":2}}`,
		"[DONE]",
	}
	for i, k := range geminiKinds {
		t.Run(k.name, func(t *testing.T) {
			res := postAs(e, k.vk, "/v1/chat/completions", `{"model":"gemini-2.0-flash","stream":true,"stream_options":{"include_usage":true},
				"messages":[{"role":"user","content":"Hi"}]}`)
			if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("status %d, Content-Type %q", res.StatusCode, res.Header.Get("Content-Type"))
			}
			checkNative(t, k, e.up.received()[i], k.models+"gemini-2.0-flash:streamGenerateContent", "alt=sse",
				`{"contents":[{"role":"user","parts":[{"text":"Hi"}]}]}`)
			b, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatalf("reading the stream: %v", err)
			}
			got := chunkDeltas(t, []byte(sameIDs(t, string(b))), "chatcmpl-resp-s", "gemini-2.0-flash-001")
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("chunks (-want +got):\n%s", d)
			}
		})
	}
}

// TestGeminiStreamEnds: a stream cut before its finish reason aborts the
// caller's connection, where a clean end would pass for a whole answer;
// an error event is passed on OpenAI-shaped, without [DONE].
func TestGeminiStreamEnds(t *testing.T) {
	const first = "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hel\"}]}}],\"responseId\":\"r\"}\r\n\r\n"
	for _, tc := range []struct {
		name, stream string
		cut          bool
		want         []string
	}{
		{name: "cut", stream: first, cut: true},
		{name: "error event", stream: first + "data: {\"error\":{\"code\":503,\"message\":\"The model is overloaded.\",\"status\":\"UNAVAILABLE\"}}\r\n\r\n",
			want: []string{`{"role":"assistant","content":""}`, `{"content":"Hel"}`,
				`{"error":{"code":"UNAVAILABLE","message":"The model is overloaded.","param":null,"type":"unavailable"}}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := geminiEnv(t, serveEvents(tc.stream))
			res := postAs(e, "vk-google", "/v1/chat/completions", `{"model":"gemini-2.0-flash","stream":true,"messages":[{"role":"user","content":"Hi"}]}`)
			if res.StatusCode != 200 {
				t.Fatalf("status %d", res.StatusCode)
			}
			b, err := io.ReadAll(res.Body)
			if tc.cut {
				if err == nil {
					t.Errorf("the stream ended cleanly after %q, want the connection aborted", b)
				}
				if bytes.Contains(b, []byte("[DONE]")) {
					t.Errorf("a cut stream ended with [DONE]: %q", b)
				}
				return
			}
			if err != nil {
				t.Fatalf("reading the stream: %v", err)
			}
			var got []string
			for _, ev := range strings.Split(strings.TrimSpace(string(b)), "\n\n") {
				data, _ := strings.CutPrefix(ev, "data: ")
				var c struct {
					Choices []struct {
						Delta json.RawMessage `json:"delta"`
					} `json:"choices"`
				}
				if json.Unmarshal([]byte(data), &c) == nil && len(c.Choices) == 1 {
					data = string(c.Choices[0].Delta)
				}
				got = append(got, data)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("events (-want +got):\n%s", d)
			}
		})
	}
}

// TestGeminiEmbeddings: two inputs with dimensions become one
// batchEmbedContents call on the Gemini API and one text embeddings
// predict call on Vertex AI, and their vectors OpenAI's answer.
func TestGeminiEmbeddings(t *testing.T) {
	e := geminiEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, ":batchEmbedContents") {
			io.WriteString(w, `{"embeddings":[{"values":[0.1,0.2,0.3]},{"values":[0.4,0.5,0.6]}]}`)
			return
		}
		io.WriteString(w, `{"predictions":[{"embeddings":{"statistics":{"truncated":false,"token_count":1},"values":[0.1,0.2,0.3]}},
			{"embeddings":{"statistics":{"truncated":false,"token_count":2},"values":[0.4,0.5,0.6]}}],"metadata":{"billableCharacterCount":2}}`)
	})
	for i, tc := range []struct {
		k                     geminiKind
		model, path, native   string
		wantModel, wantTokens string
	}{
		{geminiKinds[0], "models/gemini-embedding-001", "gemini-embedding-001:batchEmbedContents",
			`{"requests":[{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"a"}]},"outputDimensionality":3},
				{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"b"}]},"outputDimensionality":3}]}`,
			"models/gemini-embedding-001", "0"},
		{geminiKinds[1], "text-embedding-005", "text-embedding-005:predict",
			`{"instances":[{"content":"a"},{"content":"b"}],"parameters":{"outputDimensionality":3}}`,
			"text-embedding-005", "3"},
	} {
		t.Run(tc.k.name, func(t *testing.T) {
			res := postAs(e, tc.k.vk, "/v1/embeddings", `{"model":"`+tc.model+`","input":["a","b"],"dimensions":3}`)
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != 200 {
				t.Fatalf("status %d: %s", res.StatusCode, b)
			}
			checkNative(t, tc.k, e.up.received()[i], tc.k.models+tc.path, "", tc.native)
			want := `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2,0.3]},{"object":"embedding","index":1,"embedding":[0.4,0.5,0.6]}],` +
				`"model":"` + tc.wantModel + `","usage":{"prompt_tokens":` + tc.wantTokens + `,"total_tokens":` + tc.wantTokens + `}}`
			if string(b) != want {
				t.Errorf("answer %s\nwant   %s", b, want)
			}
		})
	}
}

// TestGeminiRefusals: what Gemini cannot do, or a request that cannot be
// translated, is a 400 naming the parameter, before the provider is
// called.
func TestGeminiRefusals(t *testing.T) {
	e := geminiEnv(t, nil)
	const hi = `"messages":[{"role":"user","content":"Hi"}]`
	for _, tc := range []struct {
		path, body, param string
		only              string // one kind only
	}{
		{"/v1/chat/completions", `{"model":"gemini-2.0-flash","logprobs":true,` + hi + `}`, "logprobs", ""},
		{"/v1/chat/completions", `{"model":"gemini-2.0-flash","top_logprobs":2,` + hi + `}`, "top_logprobs", ""},
		{"/v1/chat/completions", `{"model":"gemini-2.0-flash","logit_bias":{"1":2},` + hi + `}`, "logit_bias", ""},
		{"/v1/chat/completions", `{"model":"gemini-2.0-flash","n":0,` + hi + `}`, "n", ""},
		{"/v1/chat/completions", `{"model":"gemini-2.0-flash","seed":1.5,` + hi + `}`, "seed", ""},
		{"/v1/chat/completions", `{"model":"gemini-2.0-flash","stop":["a","b","c","d","e"],` + hi + `}`, "stop", ""},
		{"/v1/chat/completions", `{"model":"gemini-2.0-flash","response_format":{"type":"grammar"},` + hi + `}`, "response_format", ""},
		{"/v1/chat/completions", `{"model":"gemini-2.0-flash","parallel_tool_calls":false,"tools":[{"type":"function","function":{"name":"f"}}],` + hi + `}`, "parallel_tool_calls", ""},
		{"/v1/chat/completions", `{"model":"gemini-2.0-flash","tools":[{"type":"custom","function":{"name":"f"}}],` + hi + `}`, "tools[0].type", ""},
		{"/v1/chat/completions", `{"model":"gemini-2.0-flash","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"http://example.com/a.png"}}]}]}`, "messages[0].content", ""},
		{"/v1/chat/completions", `{"model":"gemini-2.0-flash","messages":[{"role":"user","content":[{"type":"input_audio"}]}]}`, "messages[0].content", ""},
		{"/v1/chat/completions", `{"model":"gemini-2.0-flash","messages":[{"role":"tool","tool_call_id":"call_x","content":"rain"}]}`, "messages[0].tool_call_id", ""},
		{"/v1/chat/completions", `{"model":"gemini-2.0-flash","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`, "messages[0].tool_calls", ""},
		{"/v1/chat/completions", `{"model":"gemini-2.0-flash","messages":[{"role":"system","content":"Be brief."}]}`, "messages", ""},
		{"/v1/chat/completions", `{"model":"gemini-x/../../files",` + hi + `}`, "model", ""},
		{"/v1/chat/completions", `{` + hi + `}`, "model", ProviderGoogle},
		{"/v1/embeddings", `{"model":"text-embedding-004","input":[[1,2]]}`, "input", ""},
		{"/v1/embeddings", `{"model":"text-embedding-004","input":"a","dimensions":0}`, "dimensions", ""},
		{"/v1/embeddings", `{"model":"text-embedding-004?x","input":"a"}`, "model", ""},
		{"/v1/embeddings", `{"model":"gemini-embedding-001","input":["a","b"]}`, "input", ProviderVertexAI},
	} {
		for _, k := range geminiKinds {
			if tc.only != "" && tc.only != k.name {
				continue
			}
			res := postAs(e, k.vk, tc.path, tc.body)
			if res.StatusCode != 400 {
				b, _ := io.ReadAll(res.Body)
				t.Errorf("%s %s: status %d %s, want 400", k.name, tc.body, res.StatusCode, b)
				continue
			}
			if got := decodeError(t, res); deref(got.Error.Param) != tc.param || got.Error.Type != TypeInvalidRequest {
				t.Errorf("%s %s: error %+v param %q, want an invalid_request_error naming %q", k.name, tc.body, got.Error, deref(got.Error.Param), tc.param)
			}
		}
	}
	if n := len(e.up.received()); n != 0 {
		t.Errorf("the provider was called %d times for refused requests", n)
	}
}

// TestGeminiProviderErrors: Google's error answers, {"error": {…}} and
// the array form of Vertex AI's streaming methods, come back OpenAI-shaped
// with the provider's status, for chat, streamed chat and embeddings.
func TestGeminiProviderErrors(t *testing.T) {
	e := geminiEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("X-Goog-Api-Key") != "" {
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[]}}`)
			return
		}
		w.WriteHeader(429)
		io.WriteString(w, `[{"error":{"code":429,"message":"Resource exhausted.","status":"RESOURCE_EXHAUSTED"}}]`)
	})
	wants := map[string]struct {
		status        int
		message, code string
	}{
		ProviderGoogle:   {400, "API key not valid. Please pass a valid API key.", "INVALID_ARGUMENT"},
		ProviderVertexAI: {429, "Resource exhausted.", "RESOURCE_EXHAUSTED"},
	}
	for _, k := range geminiKinds {
		w := wants[k.name]
		for _, req := range []struct{ path, body string }{
			{"/v1/chat/completions", `{"model":"gemini-2.0-flash","messages":[{"role":"user","content":"Hi"}]}`},
			{"/v1/chat/completions", `{"model":"gemini-2.0-flash","stream":true,"messages":[{"role":"user","content":"Hi"}]}`},
			{"/v1/embeddings", `{"model":"text-embedding-005","input":"a"}`},
		} {
			res := postAs(e, k.vk, req.path, req.body)
			if res.StatusCode != w.status || res.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%s %s: status %d %q, want %d application/json", k.name, req.body, res.StatusCode, res.Header.Get("Content-Type"), w.status)
				continue
			}
			got := decodeError(t, res)
			if got.Error.Message != w.message || got.Error.Type != strings.ToLower(w.code) || deref(got.Error.Code) != w.code || got.Error.Param != nil {
				t.Errorf("%s %s: error %+v code %s", k.name, req.body, got.Error, deref(got.Error.Code))
			}
		}
	}
}

// TestGooglePassThrough: paths of the google kind other than the two
// translated routes reach the Gemini API byte for byte, query kept, with
// the key as x-goog-api-key, whether it comes from a virtual key or is
// the caller's bearer token; the answer comes back unchanged.
func TestGooglePassThrough(t *testing.T) {
	const answer = `{"totalTokens": 3}` + "\n"
	e := geminiEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.Header().Set("X-Google-Thing", "kept")
		io.WriteString(w, answer)
	})
	const body = `{"contents": [{"parts":[{"text":"hi"}]}]}`
	for _, tc := range []struct {
		name    string
		method  string
		path    string
		headers []string
		key     string
		body    string
		query   string
	}{
		{"virtual key", "POST", "/v1/models/gemini-2.0-flash:countTokens?foo=bar", []string{"x-gateway-virtual-key: vk-google"}, "gk-stored", body, "foo=bar"},
		{"caller's token", "POST", "/v1/models/gemini-2.0-flash:countTokens", []string{"x-gateway-provider: google", "Authorization: Bearer gk-caller",
			"x-gateway-custom-host: " + e.up.URL + "/v1beta"}, "gk-caller", body, ""},
		{"get", "GET", "/v1/files?pageSize=2", []string{"x-gateway-virtual-key: vk-google"}, "gk-stored", "", "pageSize=2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := len(e.up.received())
			var rd io.Reader
			if tc.body != "" {
				rd = strings.NewReader(tc.body)
			}
			res := e.do(tc.method, tc.path, rd, append([]string{"x-gateway-api-key: " + coreKey, "Content-Type: application/json"}, tc.headers...)...)
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != 200 || string(b) != answer || res.Header.Get("X-Google-Thing") != "kept" {
				t.Errorf("answer %d %q %v, want the provider's own", res.StatusCode, b, res.Header)
			}
			got := e.up.received()[n]
			wantPath := "/v1beta" + strings.TrimPrefix(strings.SplitN(tc.path, "?", 2)[0], "/v1")
			if got.Method != tc.method || got.Path != wantPath || got.Query != tc.query || got.Body != tc.body {
				t.Errorf("provider got %s %s?%s %q, want %s %s?%s %q", got.Method, got.Path, got.Query, got.Body, tc.method, wantPath, tc.query, tc.body)
			}
			if got.Header.Get("X-Goog-Api-Key") != tc.key || got.Header.Get("Authorization") != "" {
				t.Errorf("provider got x-goog-api-key %q, Authorization %q; want %q and none", got.Header.Get("X-Goog-Api-Key"), got.Header.Get("Authorization"), tc.key)
			}
		})
	}
}

// TestGoogleDefaultURL: without a base URL the google kind goes to the
// Gemini API's own host.
func TestGoogleDefaultURL(t *testing.T) {
	pr := hostsProxyRequest("/models/gemini-2.0-flash:generateContent", "alt=sse", HostSettings{})
	if err := builtinProviders()[ProviderGoogle].Rewrite(pr); err != nil {
		t.Fatal(err)
	}
	const want = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:generateContent?alt=sse"
	if got := pr.Out.URL.String(); got != want || pr.Out.Header.Get("X-Goog-Api-Key") != "k" || len(pr.Out.Header) != 1 {
		t.Errorf("request to %s with %v, want %s with only x-goog-api-key", got, pr.Out.Header, want)
	}
}

// TestVertexOpenAIEndpoint: a chat request for a model that is not a bare
// Gemini id (a publisher-qualified one) stays the caller's, for Vertex
// AI's own OpenAI-compatible endpoint, and so does its answer.
func TestVertexOpenAIEndpoint(t *testing.T) {
	const answer = `{"id":"x","object":"chat.completion","choices":[]}`
	e := geminiEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	})
	for i, model := range []string{"meta/llama-3.3-70b-instruct-maas", "google/gemini-2.0-flash-001"} {
		body := `{"model": "` + model + `", "messages": [{"role":"user","content":"Hi"}], "logprobs": true}`
		res := postAs(e, "vk-vertex", "/v1/chat/completions", body)
		if b, _ := io.ReadAll(res.Body); res.StatusCode != 200 || string(b) != answer {
			t.Errorf("%s: answer %d %s, want the provider's own", model, res.StatusCode, b)
		}
		got := e.up.received()[i]
		if got.Path != "/v1/projects/my-proj/locations/us-central1/endpoints/openapi/chat/completions" || got.Body != body ||
			got.Header.Get("Authorization") != "Bearer ya29.stored" {
			t.Errorf("%s: provider got %s %q %v, want the caller's bytes at the OpenAI-compatible endpoint", model, got.Path, got.Body, got.Header)
		}
	}
}

// TestGeminiFallbackAcrossKinds: one OpenAI body falls back from the
// Gemini API (unavailable) to Vertex AI, each getting its own
// translation, and the caller gets one OpenAI answer.
func TestGeminiFallbackAcrossKinds(t *testing.T) {
	e := geminiEnv(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("X-Goog-Api-Key") != "" {
			w.WriteHeader(503)
			io.WriteString(w, `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`)
			return
		}
		io.WriteString(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi!"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":2,"candidatesTokenCount":1,"totalTokenCount":3}}`)
	})
	res := e.do("POST", "/v1/chat/completions", strings.NewReader(`{"model":"gemini-2.0-flash","messages":[{"role":"user","content":"Hi"}]}`),
		"x-gateway-api-key: "+coreKey, "Content-Type: application/json",
		`x-gateway-config: {"strategy":{"mode":"fallback"},"targets":[{"virtual_key":"vk-google"},{"virtual_key":"vk-vertex"}]}`)
	b, _ := io.ReadAll(res.Body)
	var c chat.Completion
	json.Unmarshal(b, &c)
	if res.StatusCode != 200 || res.Header.Get(HeaderLastUsedOptionIndex) != "config.targets[1]" || len(c.Choices) != 1 ||
		c.Choices[0].Message.Content == nil || *c.Choices[0].Message.Content != "Hi!" || c.Model != "gemini-2.0-flash" || c.Usage.TotalTokens != 3 {
		t.Errorf("answer %d from %s: %s", res.StatusCode, res.Header.Get(HeaderLastUsedOptionIndex), b)
	}
	if got := e.up.received(); len(got) != 2 || !strings.HasPrefix(got[0].Path, "/v1beta/models/") || !strings.HasPrefix(got[1].Path, "/v1/projects/") {
		t.Errorf("provider calls %+v, want the Gemini API then Vertex AI", got)
	}
}

// FuzzGeminiStream feeds arbitrary provider streams to the translator: it
// never panics, and whatever it writes is a sequence of data: events.
func FuzzGeminiStream(f *testing.F) {
	f.Add([]byte(geminiEvents), true)
	f.Add([]byte("data: {\"error\":{\"code\":503,\"message\":\"x\",\"status\":\"UNAVAILABLE\"}}\n\n"), false)
	f.Add([]byte("data: {\"promptFeedback\":{\"blockReason\":\"SAFETY\"}}\n\n"), true)
	f.Add([]byte("data: {\"candidates\":[{\"index\":3,\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"f\",\"args\":null}},{\"text\":\"x\",\"thought\":true}]},\"finishReason\":\"SAFETY\"}]}\n\n"), true)
	f.Add([]byte("data: [{\"candidates\":[]}]\n\n"), false)
	f.Fuzz(func(t *testing.T, stream []byte, usage bool) {
		req := &chat.Request{Model: "m", Stream: true, StreamOptions: &chat.StreamOptions{IncludeUsage: usage}}
		out, _ := io.ReadAll(geminiStream(ProviderGoogle, req, io.NopCloser(bytes.NewReader(stream))))
		for _, ev := range strings.SplitAfter(string(out), "\n\n") {
			if ev != "" && (!strings.HasPrefix(ev, "data: ") || !strings.HasSuffix(ev, "\n\n")) {
				t.Fatalf("not a data event: %q", ev)
			}
		}
	})
}
