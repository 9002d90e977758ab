package gateway

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// typedHeaders are the gateway key and virtual key of a coreEnv.
var typedHeaders = []string{HeaderAPIKey + ": " + coreKey, HeaderVirtualKey + ": vk-up"}

// typedSameJSON fails the test unless a and b are the same JSON document,
// compared as values (member order and spacing aside).
func typedSameJSON(t *testing.T, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("output %s is not JSON: %v", got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("reference %s is not JSON: %v", want, err)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("JSON differs from the reference (-want +got):\n%s", diff)
	}
}

// typedParam returns the Param of an *Error, or "<not an *Error>".
func typedParam(err error) string {
	var e *Error
	if !errors.As(err, &e) {
		return "<not an *Error>"
	}
	return e.Param
}

// validateBase is the start of every body of validateCases.
const validateBase = `"model":"gpt-3.5-turbo-instruct","prompt":"Say this is a test"`

// validateCases are completion requests at and past every bound.
var validateCases = []struct {
	name  string
	extra string // members added to validateBase
	param string // "" means valid
}{
	{"minimal", ``, ""},
	{"missing model", `,"model":""`, "model"},
	{"n low edge", `,"n":1`, ""},
	{"n below", `,"n":0`, "n"},
	{"n high edge", `,"n":128`, ""},
	{"n above", `,"n":129`, "n"},
	{"best_of low edge", `,"best_of":0`, ""},
	{"best_of below", `,"best_of":-1`, "best_of"},
	{"best_of high edge", `,"best_of":20`, ""},
	{"best_of above", `,"best_of":21`, "best_of"},
	{"best_of greater than n", `,"best_of":3,"n":2`, ""},
	{"best_of equal to n", `,"best_of":2,"n":2`, "best_of"},
	{"best_of below n", `,"best_of":1,"n":2`, "best_of"},
	{"best_of with stream", `,"best_of":2,"stream":true`, "best_of"},
	{"n above beside a valid best_of", `,"best_of":5,"n":129`, "n"},
	{"n below beside best_of 0", `,"best_of":0,"n":0`, "n"},
	{"best_of with stream false", `,"best_of":2,"stream":false`, ""},
	{"logprobs low edge", `,"logprobs":0`, ""},
	{"logprobs below", `,"logprobs":-1`, "logprobs"},
	{"logprobs high edge", `,"logprobs":5`, ""},
	{"logprobs above", `,"logprobs":6`, "logprobs"},
	{"stop four", `,"stop":["a","b","c","d"]`, ""},
	{"stop five", `,"stop":["a","b","c","d","e"]`, "stop"},
	{"stop string", `,"stop":"\n"`, ""},
	{"stop one", `,"stop":["a"]`, ""},
	{"stop empty array", `,"stop":[]`, "stop"},
	{"max_tokens edge", `,"max_tokens":0`, ""},
	{"max_tokens below", `,"max_tokens":-1`, "max_tokens"},
	{"temperature low edge", `,"temperature":0`, ""},
	{"temperature below", `,"temperature":-0.01`, "temperature"},
	{"temperature high edge", `,"temperature":2`, ""},
	{"temperature above", `,"temperature":2.01`, "temperature"},
	{"top_p low edge", `,"top_p":0`, ""},
	{"top_p below", `,"top_p":-0.01`, "top_p"},
	{"top_p high edge", `,"top_p":1`, ""},
	{"top_p above", `,"top_p":1.01`, "top_p"},
	{"frequency_penalty low edge", `,"frequency_penalty":-2`, ""},
	{"frequency_penalty below", `,"frequency_penalty":-2.01`, "frequency_penalty"},
	{"frequency_penalty high edge", `,"frequency_penalty":2`, ""},
	{"frequency_penalty above", `,"frequency_penalty":2.01`, "frequency_penalty"},
	{"presence_penalty low edge", `,"presence_penalty":-2`, ""},
	{"presence_penalty below", `,"presence_penalty":-2.01`, "presence_penalty"},
	{"presence_penalty high edge", `,"presence_penalty":2`, ""},
	{"presence_penalty above", `,"presence_penalty":2.01`, "presence_penalty"},
	{"logit_bias low edge", `,"logit_bias":{"50256":-100}`, ""},
	{"logit_bias below", `,"logit_bias":{"50256":-101}`, "logit_bias"},
	{"logit_bias high edge", `,"logit_bias":{"50256":100}`, ""},
	{"logit_bias above", `,"logit_bias":{"50256":101}`, "logit_bias"},
	{"logit_bias integer written as float", `,"logit_bias":{"50256":5.0}`, ""},
	{"logit_bias fraction", `,"logit_bias":{"50256":1.5}`, "logit_bias"},
	{"logit_bias key not a token id", `,"logit_bias":{"hello":1}`, "logit_bias"},
	{"logit_bias negative key", `,"logit_bias":{"-1":1}`, "logit_bias"},
	{"stream_options with stream", `,"stream":true,"stream_options":{"include_usage":true}`, ""},
	{"stream_options without stream", `,"stream_options":{"include_usage":true}`, "stream_options"},
	{"stream_options with stream false", `,"stream":false,"stream_options":{}`, "stream_options"},
	{"stream_options null", `,"stream_options":null`, ""},
	{"nulls everywhere", `,"n":null,"best_of":null,"logprobs":null,"stop":null,"temperature":null,"top_p":null,"seed":null`, ""},
	{"seed extremes", `,"seed":-9223372036854775808`, ""},
	{"empty token list", `,"prompt":[[1,2],[]]`, "prompt"},
	{"token list", `,"prompt":[[1,2],[3]]`, ""},
}

func TestCompletionRequestValidate(t *testing.T) {
	for _, tt := range validateCases {
		t.Run(tt.name, func(t *testing.T) {
			var req CompletionRequest
			if err := json.Unmarshal([]byte("{"+validateBase+tt.extra+"}"), &req); err != nil {
				t.Fatalf("decode: %v", err)
			}
			err := req.Validate()
			if tt.param == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Validate() = %v, want an *Error", err)
			}
			got := [3]any{e.Status, e.Type, e.Param}
			want := [3]any{http.StatusBadRequest, TypeInvalidRequest, tt.param}
			if got != want {
				t.Errorf("Validate() = %v (status, type, param), want %v; message %q", got, want, e.Message)
			}
		})
	}
}

func TestCompletionRequestValidateGo(t *testing.T) {
	// Values a Go caller can build that JSON cannot carry.
	nan := 0.0
	nan /= nan
	tests := []struct {
		name  string
		req   CompletionRequest
		param string
	}{
		{"NaN temperature", CompletionRequest{Model: "m", Temperature: &nan}, "temperature"},
		{"two prompt forms", CompletionRequest{Model: "m", Prompt: Prompt{Texts: []string{"a"}, Tokens: []int{1}}}, "prompt"},
		{"empty tokens", CompletionRequest{Model: "m", Prompt: Prompt{Tokens: []int{}}}, "prompt"},
		{"two stop forms", CompletionRequest{Model: "m", Stop: Stop{Text: new(string), Sequences: []string{"x"}}}, "stop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := typedParam(tt.req.Validate()); got != tt.param {
				t.Errorf("Validate() param = %q, want %q", got, tt.param)
			}
		})
	}
}

func TestCompletionRequestRoundTrip(t *testing.T) {
	docs := []struct{ name, doc string }{
		{"string prompt", `{"model":"gpt-3.5-turbo-instruct","prompt":"Say this is a test","max_tokens":7,"temperature":0}`},
		{"string array prompt", `{"model":"m","prompt":["a","b"],"stop":["\n","END"],"n":2,"best_of":3}`},
		{"empty array prompt", `{"model":"m","prompt":[]}`},
		{"token prompt", `{"model":"m","prompt":[1212,318,257,1332,13],"logprobs":5,"echo":true}`},
		{"token arrays prompt", `{"model":"m","prompt":[[1212,318],[257]],"suffix":"end."}`},
		{"null prompt and stop", `{"model":"m","prompt":null,"stop":null,"suffix":null,"user":"user-1234"}`},
		{"every field", `{"model":"m","prompt":"p","best_of":2,"echo":false,"frequency_penalty":-1.5,
			"logit_bias":{"50256":-100,"12":3},"logprobs":0,"max_tokens":0,"n":1,"presence_penalty":0,
			"seed":9223372036854775807,"stop":"\n","stream":true,"stream_options":{"include_usage":true,"include_obfuscation":false},
			"suffix":"s","temperature":0.7,"top_p":1,"user":"u"}`},
		{"zeros and empties", `{"model":"m","prompt":"","max_tokens":0,"user":"","logit_bias":{},"stop":[]}`},
		{"unknown members", `{"model":"m","prompt":"p","vendor_option":{"a":[1,null,"x"]},"Model":"shadow","stream_options":{"future":1}}`},
		{"explicit nulls", `{"model":"m","prompt":"p","n":null,"best_of":null,"echo":null,"logit_bias":null,"stream":null,"stream_options":null,"temperature":null}`},
	}
	for _, d := range docs {
		t.Run(d.name, func(t *testing.T) {
			var req CompletionRequest
			if err := json.Unmarshal([]byte(d.doc), &req); err != nil {
				t.Fatalf("decode: %v", err)
			}
			out, err := json.Marshal(req)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			typedSameJSON(t, out, []byte(d.doc))
		})
	}
}

func TestCompletionRequestFields(t *testing.T) {
	// Decoding fills the typed fields, not only Extra.
	doc := `{"model":"m","prompt":[[1,2]],"stop":"\n","n":3,"logit_bias":{"7":-1},"stream":true,"stream_options":{"include_usage":true},"x":1}`
	var req CompletionRequest
	if err := json.Unmarshal([]byte(doc), &req); err != nil {
		t.Fatal(err)
	}
	nl, three, yes := "\n", 3, true
	want := CompletionRequest{
		Model: "m", Prompt: Prompt{TokenLists: [][]int{{1, 2}}}, Stop: Stop{Text: &nl}, N: &three,
		LogitBias: LogitBias{"7": -1}, Stream: &yes, StreamOptions: &StreamOptions{IncludeUsage: &yes},
		Extra: map[string]json.RawMessage{"x": json.RawMessage("1")},
	}
	if diff := cmp.Diff(want, req, cmp.AllowUnexported()); diff != "" {
		t.Errorf("decoded request (-want +got):\n%s", diff)
	}
}

func TestCompletionRequestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, body string
		param      string
	}{
		{"n as string", `{"model":"m","n":"2"}`, "n"},
		{"n fractional", `{"model":"m","n":1.5}`, "n"},
		{"prompt object", `{"model":"m","prompt":{"a":1}}`, "prompt"},
		{"prompt mixed array", `{"model":"m","prompt":["a",1]}`, "prompt"},
		{"prompt null token", `{"model":"m","prompt":[[1,null]]}`, "prompt"},
		{"stop number", `{"model":"m","stop":4}`, "stop"},
		{"stop null entry", `{"model":"m","stop":["a",null]}`, "stop"},
		{"logit_bias null value", `{"model":"m","logit_bias":{"1":null}}`, "logit_bias"},
		{"stream_options not object", `{"model":"m","stream":true,"stream_options":3}`, "stream_options"},
		{"seed too large", `{"model":"m","seed":9223372036854775808}`, "seed"},
		{"syntax", `{"model":`, ""},
		{"array body", `[]`, ""},
		{"trailing data", `{"model":"m"}{}`, ""},
		{"empty body", ``, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req CompletionRequest
			err := decodeBody([]byte(tt.body), &req)
			var e *Error
			if !errors.As(err, &e) || e.Status != http.StatusBadRequest {
				t.Fatalf("decodeBody = %v, want a 400 *Error", err)
			}
			if e.Param != tt.param {
				t.Errorf("param = %q, want %q (message %q)", e.Param, tt.param, e.Message)
			}
		})
	}
}

// Reference completions, as the OpenAI API writes them.
var completionDocs = []struct{ name, doc string }{
	{"plain", `{"id":"cmpl-uqkvlQyYK7bGYrRHQ0eXlWi7","object":"text_completion","created":1589478378,"model":"gpt-3.5-turbo-instruct",
		"system_fingerprint":"fp_44709d6fcb","choices":[{"text":"\n\nThis is indeed a test","index":0,"logprobs":null,"finish_reason":"length"}],
		"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}`},
	{"logprobs with nulls", `{"id":"c","object":"text_completion","created":1,"model":"m","choices":[{"text":"a b","index":0,
		"logprobs":{"tokens":["a"," b"],"token_logprobs":[null,-0.5],"top_logprobs":[null,{" b":-0.5,"c":-2}],"text_offset":[0,1]},
		"finish_reason":"stop"}]}`},
	{"stream chunk", `{"id":"c","object":"text_completion","created":1,"model":"m","choices":[{"text":"He","index":0,"logprobs":null,"finish_reason":null}],"usage":null}`},
	{"usage chunk", `{"id":"c","object":"text_completion","created":1,"model":"m","choices":[],
		"usage":{"prompt_tokens":5,"completion_tokens":0,"total_tokens":5,"completion_tokens_details":{"reasoning_tokens":0},"prompt_tokens_details":null}}`},
	{"provider additions", `{"id":"c","object":"text_completion","created":1,"model":"m","choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"content_filter","content_filter_results":{"hate":{"filtered":true}}}],
		"prompt_filter_results":[{"prompt_index":0}],"system_fingerprint":""}`},
}

func TestCompletionRoundTrip(t *testing.T) {
	for _, d := range completionDocs {
		t.Run(d.name, func(t *testing.T) {
			var c Completion
			if err := json.Unmarshal([]byte(d.doc), &c); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if err := c.Validate(); err != nil {
				t.Errorf("Validate() = %v", err)
			}
			out, err := json.Marshal(c)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			typedSameJSON(t, out, []byte(d.doc))
		})
	}
}

func TestCompletionFromGo(t *testing.T) {
	// A Completion built in Go gets the constant members filled in.
	out, err := json.Marshal(Completion{ID: "c", Created: 2, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	typedSameJSON(t, out, []byte(`{"id":"c","object":"text_completion","created":2,"model":"m","choices":[]}`))

	bad := Completion{Object: "chat.completion"}
	if got := typedParam(bad.Validate()); got != "object" {
		t.Errorf("Validate of a chat completion: param %q, want object", got)
	}
	odd := Completion{Choices: []CompletionChoice{{}, {FinishReason: "tool_calls"}}}
	if got := typedParam(odd.Validate()); got != "choices[1].finish_reason" {
		t.Errorf("Validate of an unknown finish_reason: param %q", got)
	}
}

func TestServeCompletions(t *testing.T) {
	var answered []string
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		answered = append(answered, r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Provider-Own", "kept")
		io.WriteString(w, completionDocs[0].doc)
	})
	env := newCoreEnv(t, up, nil)

	t.Run("valid request forwarded as sent", func(t *testing.T) {
		body := `{ "model": "gpt-3.5-turbo-instruct",  "prompt": ["a"], "vendor_thing": 1 }`
		res := env.do(http.MethodPost, "/v1/completions", strings.NewReader(body), append(typedHeaders, "Content-Type: application/json")...)
		got, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK || string(got) != completionDocs[0].doc || res.Header.Get("X-Provider-Own") != "kept" {
			t.Fatalf("status %d, body %s, want the provider's answer unchanged", res.StatusCode, got)
		}
		rec := up.received()
		last := rec[len(rec)-1]
		if last.Path != "/v1/completions" || last.Body != body || last.Method != http.MethodPost {
			t.Errorf("provider got %s %s %q, want POST /v1/completions with the body byte for byte", last.Method, last.Path, last.Body)
		}
	})

	t.Run("valid request the quick check declines", func(t *testing.T) {
		body := `{"model":"m","\u006e":2,"logit_bias":{"1":500,"1":1}}` // decided by the lossless decode
		res := env.do(http.MethodPost, "/v1/completions", strings.NewReader(body), typedHeaders...)
		io.Copy(io.Discard, res.Body)
		rec := up.received()
		if res.StatusCode != http.StatusOK || rec[len(rec)-1].Body != body {
			t.Errorf("status %d, provider got %q; want 200 and the body byte for byte", res.StatusCode, rec[len(rec)-1].Body)
		}
	})

	tests := []struct {
		name, body string
		status     int
		param      string
	}{
		{"best_of with stream", `{"model":"m","prompt":"p","best_of":2,"stream":true}`, 400, "best_of"},
		{"n above", `{"model":"m","prompt":"p","n":129}`, 400, "n"},
		{"n above beside best_of", `{"model":"m","prompt":"p","best_of":5,"n":129}`, 400, "n"},
		{"escaped n above", `{"model":"m","prompt":"p","\u006e":129}`, 400, "n"},
		{"missing model", `{"prompt":"p"}`, 400, "model"},
		{"wrong type", `{"model":"m","temperature":"hot"}`, 400, "temperature"},
		{"malformed", `{"model":"m",`, 400, "<null>"},
		{"not an object", `"hello"`, 400, "<null>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(up.received())
			res := env.do(http.MethodPost, "/v1/completions", strings.NewReader(tt.body), typedHeaders...)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tt.status)
			}
			e := decodeError(t, res)
			if e.Error.Type != TypeInvalidRequest || deref(e.Error.Param) != tt.param || e.Error.Message == "" {
				t.Errorf("error %+v, want invalid_request_error with param %s", e.Error, tt.param)
			}
			if len(up.received()) != before {
				t.Errorf("an invalid request reached the provider")
			}
		})
	}

	t.Run("other methods get 405", func(t *testing.T) {
		for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodPatch} {
			res := env.do(m, "/v1/completions", nil, typedHeaders...)
			if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != http.MethodPost {
				t.Errorf("%s: status %d, Allow %q; want 405 with Allow: POST", m, res.StatusCode, res.Header.Get("Allow"))
			}
			decodeError(t, res)
		}
	})

	t.Run("model is logged", func(t *testing.T) {
		res := env.do(http.MethodPost, "/v1/completions", strings.NewReader(`{"model":"davinci-002","prompt":"x"}`),
			append(typedHeaders, HeaderTraceID+": typed-model-log")...)
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		env.gw.Close() // flushes the log queue
		logs := env.logs.Query(LogFilter{TraceID: "typed-model-log"})
		if len(logs) != 1 || logs[0].Model != "davinci-002" || logs[0].Status != http.StatusOK {
			t.Errorf("logs %+v, want one record with model davinci-002 and status 200", logs)
		}
	})
}

func TestServeCompletionsBodyLimit(t *testing.T) {
	up := newCoreUpstream(t, nil)
	env := newCoreEnv(t, up, func(o *Options) { o.MaxBodyBytes = 64 })
	small := `{"model":"m","prompt":"p"}`
	big := `{"model":"m","prompt":"` + strings.Repeat("x", 100) + `"}`
	for _, tc := range []struct {
		name    string
		body    io.Reader
		status  int
		chunked bool
	}{
		{"under the limit", strings.NewReader(small), http.StatusOK, false},
		{"over the limit", strings.NewReader(big), http.StatusRequestEntityTooLarge, false},
		{"over the limit, no length", io.MultiReader(strings.NewReader(big)), http.StatusRequestEntityTooLarge, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := env.do(http.MethodPost, "/v1/completions", tc.body, typedHeaders...)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tc.status)
			}
			if tc.status != http.StatusOK {
				if e := decodeError(t, res); deref(e.Error.Code) != CodePayloadTooLarge {
					t.Errorf("code %s, want %s", deref(e.Error.Code), CodePayloadTooLarge)
				}
			}
		})
	}
	if n := len(up.received()); n != 1 {
		t.Errorf("provider got %d requests, want only the one under the limit", n)
	}
}

// TestServeCompletionsStreamIncremental proves that each event reaches the
// HTTP caller before the provider sends the next one.
func TestServeCompletionsStreamIncremental(t *testing.T) {
	next := make(chan struct{})
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			io.WriteString(w, `data: {"id":"c","object":"text_completion","created":1,"model":"m","choices":[{"text":"`+strconv.Itoa(i)+`","index":0,"logprobs":null,"finish_reason":null}]}`+"\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-next:
			case <-r.Context().Done():
				return
			}
		}
		io.WriteString(w, "data: [DONE]\n\n")
	})
	env := newCoreEnv(t, up, nil)
	res := env.do(http.MethodPost, "/v1/completions", strings.NewReader(`{"model":"m","prompt":"p","stream":true}`), typedHeaders...)
	if ct := res.Header.Get("Content-Type"); res.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("status %d, content type %q", res.StatusCode, ct)
	}
	var texts []string
	for c, err := range readCompletionEvents(res.Body, 1<<20) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		// The provider is blocked until we let it go: this event arrived
		// before the next was written.
		texts = append(texts, c.Choices[0].Text)
		next <- struct{}{}
	}
	if diff := cmp.Diff([]string{"0", "1", "2"}, texts); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// fullCheck is what POST /completions decides with the lossless decode:
// whether body is accepted, and its model.
func fullCheck(body []byte) (string, bool) {
	var req CompletionRequest
	err := decodeBody(body, &req)
	if err == nil {
		err = req.Validate()
	}
	return req.Model, err == nil
}

// TestCheckCompletionBody: the quick check of the hot route decides like
// the lossless decode on every bound, every decoding error and the forms a
// caller writes, so that the route answers alike whichever decides.
func TestCheckCompletionBody(t *testing.T) {
	bodies := []string{
		`{"model":"m"}`, ` { "model" : "m" , "prompt" : [ 1 , -2 ] } `, `{"model":"m","prompt":[]}`,
		`{"model":"m","prompt":[[1],[2,3]],"stop":[]}`, `{"model":"m","N":500,"Best_Of":-1}`,
		`{"model":"m","logit_bias":{}}`, `{"model":"m","logit_bias":{"01":1}}`, `{"model":"m","logit_bias":{"9223372036854775808":1}}`,
		`{"model":"m","n":5,"n":null,"best_of":5}`, `{"model":"m","stream":true,"stream_options":{},"stream_options":null}`,
		`{"model":"m","stream_options":{"include_usage":"yes"},"stream":true}`, `{"model":"m","stream_options":{"x":[1]},"stream":true}`,
		`{"model":"m","prompt":[[1],null]}`, `{"model":"m","prompt":[null]}`, `{"model":"m","prompt":[1,"a"]}`, `{"model":"m","prompt":5}`,
		`{"model":"m","prompt":[9223372036854775807]}`, `{"model":"m","prompt":[9223372036854775808]}`, `{"model":"m","prompt":[1.0]}`,
		`{"model":"m","seed":-9223372036854775808}`, `{"model":"m","temperature":1e400}`, `{"model":"m","temperature":2e0}`,
		`{"model":"m","echo":"true"}`, `{"model":"m","user":5}`, `{"model":"m","suffix":null,"user":null}`,
		`{"model":null}`, `{"model":5}`, `{"model":""}`, `null`, `[]`, `{}`, `{"model":"m"} x`, `{"model":"m","stop":["a",null]}`,
		`{"model":"m","vendor":{"n":500,"nested":["}",{"]":"\""}]}}`,
	}
	for _, c := range validateCases {
		bodies = append(bodies, "{"+validateBase+c.extra+"}")
	}
	for _, b := range bodies {
		wantModel, want := fullCheck([]byte(b))
		model, got := checkCompletionBody([]byte(b))
		if got != want || got && model != wantModel {
			t.Errorf("%s: quick check (%q, %t), lossless decode (%q, %t)", b, model, got, wantModel, want)
		}
	}
}

// FuzzCheckCompletionBody holds the quick check to never accepting a body
// the lossless decode refuses, nor reading another model.
func FuzzCheckCompletionBody(f *testing.F) {
	for _, c := range validateCases {
		f.Add([]byte("{" + validateBase + c.extra + "}"))
	}
	f.Add([]byte(`{"model":"m","prompt":[[1],[2]],"stop":"x","logit_bias":{"0":-100},"stream":true,"stream_options":{"include_usage":null}}`))
	f.Add([]byte(`{"model":"m","\u006e":500,"n":1}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		model, ok := checkCompletionBody(body)
		if !ok {
			return
		}
		wantModel, want := fullCheck(body)
		if !want || model != wantModel {
			t.Fatalf("%s: quick check accepted model %q; lossless decode: accepted %t, model %q", body, model, want, wantModel)
		}
	})
}

func FuzzCompletionRequest(f *testing.F) {
	for _, seed := range []string{
		`{"model":"m","prompt":"p"}`,
		`{"model":"m","prompt":[[1,2],[3]],"stop":["a"],"n":2,"best_of":3}`,
		`{"model":"m","prompt":[1,2],"logit_bias":{"1":-100},"stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"m","prompt":null,"stop":null,"x":{"y":[null]},"temperature":2}`,
		`{"model":"","prompt":["a",""],"stop":"\n","n":null,"Model":"x"}`,
		`{"prompt":[],"seed":-1,"max_tokens":0,"logprobs":5}`,
		`[]`, `null`, `{"model":`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var req CompletionRequest
		if err := decodeBody(data, &req); err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Status != http.StatusBadRequest {
				t.Fatalf("decode error %v is not a 400 *Error", err)
			}
			return
		}
		if err := req.Validate(); err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Param == "" {
				t.Fatalf("Validate error %v is not a 400 *Error naming a field", err)
			}
		}
		out, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("encode after decode: %v", err)
		}
		var before, after any
		if json.Unmarshal(data, &before) != nil {
			t.Fatalf("decoded %q but encoding/json rejects it", data)
		}
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("encoded %q is not JSON: %v", out, err)
		}
		if before == nil {
			return // a null body decodes to the zero request
		}
		if !cmp.Equal(before, after) {
			t.Fatalf("round trip changed the document:\n in: %s\nout: %s", data, out)
		}
		var again CompletionRequest
		if err := json.Unmarshal(out, &again); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		out2, err := json.Marshal(again)
		if err != nil || string(out2) != string(out) {
			t.Fatalf("second round trip differs: %s vs %s (%v)", out, out2, err)
		}
	})
}

// BenchmarkCompletionRequestDecode measures the typed decode (exact-name
// decoding with Extra, then Validate) and the quick check POST
// /completions runs, against a plain encoding/json decode of the same
// body into a struct without custom methods, so the figures to read are
// the ratios.
func BenchmarkCompletionRequestDecode(b *testing.B) {
	body := []byte(`{"model":"gpt-3.5-turbo-instruct","prompt":["Say this is a test","and another"],"max_tokens":64,
		"temperature":0.7,"top_p":1,"n":2,"best_of":3,"stop":["\n","END"],"logit_bias":{"50256":-100},"user":"user-1234","vendor":{"x":1}}`)
	b.Run("typed+validate", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var req CompletionRequest
			if err := json.Unmarshal(body, &req); err != nil {
				b.Fatal(err)
			}
			if err := req.Validate(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("route check", func(b *testing.B) {
		// What POST /completions runs: the quick check, which leaves the
		// lossless decode to bodies it declines.
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, ok := checkCompletionBody(body); !ok {
				b.Fatal("declined")
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		type plain struct {
			Model       string             `json:"model"`
			Prompt      any                `json:"prompt"`
			MaxTokens   *int               `json:"max_tokens"`
			Temperature *float64           `json:"temperature"`
			TopP        *float64           `json:"top_p"`
			N           *int               `json:"n"`
			BestOf      *int               `json:"best_of"`
			Stop        any                `json:"stop"`
			LogitBias   map[string]float64 `json:"logit_bias"`
			User        string             `json:"user"`
		}
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var req plain
			if err := json.Unmarshal(body, &req); err != nil {
				b.Fatal(err)
			}
		}
	})
}
