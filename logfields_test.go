package gateway

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// fieldsEnv is a coreEnv whose request log records arrive on a channel.
type fieldsEnv struct {
	*coreEnv
	recs chanSink
}

func newFieldsEnv(t *testing.T, up *coreUpstream, mod func(*Options)) *fieldsEnv {
	t.Helper()
	recs := make(chanSink, 16)
	e := newCoreEnv(t, up, func(o *Options) {
		o.LogSink = recs
		o.RetryBaseDelay = time.Millisecond
		if mod != nil {
			mod(o)
		}
	})
	return &fieldsEnv{coreEnv: e, recs: recs}
}

// post sends a chat completion with headers and reads the answer whole.
func (e *fieldsEnv) post(body string, headers ...string) (*http.Response, string) {
	e.t.Helper()
	res := e.do("POST", "/v1/chat/completions", strings.NewReader(body),
		append([]string{"x-gateway-api-key: " + coreKey, "Content-Type: application/json"}, headers...)...)
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return res, string(b)
}

// next returns the next request log record.
func (e *fieldsEnv) next() *RequestLog {
	e.t.Helper()
	select {
	case rec := <-e.recs:
		return rec
	case <-time.After(10 * time.Second):
		e.t.Fatal("no request log record")
		return nil
	}
}

// jsonAnswer answers every request with status and body as JSON.
func jsonAnswer(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

var uuidV7 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// usageFields are the fields of a record this file checks, less those
// that vary from run to run (id, time, latency, ttfb).
type usageFields struct {
	VirtualKey, ConfigID, Provider, Model   string
	Status, Attempts, FallbackIndex         int
	Prompt, Completion, Total, CachedPrompt int64
	Cost                                    float64
	CostUnknown, Rescued                    bool
	CacheStatus                             CacheStatus
}

func fieldsOf(r *RequestLog) usageFields {
	return usageFields{r.VirtualKey, r.ConfigID, r.Provider, r.Model, r.Status, r.Attempts, r.FallbackIndex,
		r.PromptTokens, r.CompletionTokens, r.TotalTokens, r.CachedPromptTokens, r.Cost, r.CostUnknown, r.Rescued, r.CacheStatus}
}

// checkFields compares got with want, costs to a billionth of a cent.
func checkFields(t *testing.T, rec *RequestLog, want usageFields) {
	t.Helper()
	got := fieldsOf(rec)
	if math.Abs(got.Cost-want.Cost) < 1e-11 {
		got.Cost = want.Cost
	}
	if got != want {
		t.Errorf("record:\n got %+v\nwant %+v", got, want)
	}
	if !uuidV7.MatchString(rec.ID) {
		t.Errorf("id %q is not a UUIDv7", rec.ID)
	}
	if rec.TTFB < 0 || rec.TTFB > rec.Latency {
		t.Errorf("ttfb %v, latency %v", rec.TTFB, rec.Latency)
	}
}

// gpt4oAnswer is an OpenAI answer of 100 prompt tokens (40 of them from
// the prompt cache) and 20 completion tokens.
const gpt4oAnswer = `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-2024-08-06",
	"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],
	"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120,
		"prompt_tokens_details":{"cached_tokens":40,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}`

// gpt4oCost is what gpt4oAnswer costs at gpt-4o's list price.
const gpt4oCost = (60*2.50 + 40*1.25 + 20*10.0) / 1e6

func TestLogFieldsJSONAnswer(t *testing.T) {
	e := newFieldsEnv(t, newCoreUpstream(t, jsonAnswer(200, gpt4oAnswer)), nil)
	before := time.Now()
	res, _ := e.post(`{"messages":[{"role":"user","content":"hi"}],"model":"gpt-4o"}`, "x-gateway-virtual-key: vk-up")
	if res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	rec := e.next()
	checkFields(t, rec, usageFields{CacheStatus: CacheDisabled, VirtualKey: "vk-up", Provider: "openai", Model: "gpt-4o", Status: 200,
		Prompt: 100, Completion: 20, Total: 120, CachedPrompt: 40, Cost: gpt4oCost})
	if rec.TTFB <= 0 {
		t.Errorf("ttfb %v, want the time to the answer's first byte", rec.TTFB)
	}
	// The id's first 48 bits are the arrival time in milliseconds.
	ms, _ := fmtHexMillis(rec.ID)
	if ms < before.UnixMilli() || ms > time.Now().UnixMilli() {
		t.Errorf("id %s holds the time %d, not between %d and now", rec.ID, ms, before.UnixMilli())
	}
}

func fmtHexMillis(id string) (int64, error) {
	var ms int64
	_, err := fmt.Sscanf(strings.ReplaceAll(id[:13], "-", ""), "%x", &ms)
	return ms, err
}

// TestLogFieldsCompressedAnswer: an answer the caller takes gzipped (its
// Accept-Encoding is forwarded) reaches it unchanged and its usage is
// still logged.
func TestLogFieldsCompressedAnswer(t *testing.T) {
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	io.WriteString(zw, gpt4oAnswer)
	zw.Close()
	e := newFieldsEnv(t, newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(zipped.Bytes())
	}), nil)
	res, body := e.post(`{"model":"gpt-4o"}`, "x-gateway-virtual-key: vk-up", "Accept-Encoding: gzip")
	if res.Header.Get("Content-Encoding") != "gzip" || body != zipped.String() {
		t.Fatalf("the caller got %q encoded %q, want the provider's gzipped answer", body, res.Header.Get("Content-Encoding"))
	}
	checkFields(t, e.next(), usageFields{CacheStatus: CacheDisabled, VirtualKey: "vk-up", Provider: "openai", Model: "gpt-4o", Status: 200,
		Prompt: 100, Completion: 20, Total: 120, CachedPrompt: 40, Cost: gpt4oCost})
}

// sseAnswer writes events as a text/event-stream, flushing each.
func sseAnswer(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range events {
			io.WriteString(w, "data: "+ev+"\n\n")
			w.(http.Flusher).Flush()
		}
	}
}

// TestLogFieldsStream: a streamed answer's usage chunk is logged; a
// request that names no model is logged with the answer's, priced by its
// family's price.
func TestLogFieldsStream(t *testing.T) {
	e := newFieldsEnv(t, newCoreUpstream(t, sseAnswer(
		`{"id":"c1","object":"chat.completion.chunk","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"content":"Hi \"there\""}}]}`,
		`{"id":"c1","object":"chat.completion.chunk","model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`,
		`[DONE]`)), nil)
	res, body := e.post(`{"stream":true,"stream_options":{"include_usage":true},"messages":[]}`, "x-gateway-virtual-key: vk-up")
	if res.StatusCode != 200 || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Fatalf("status %d body %q", res.StatusCode, body)
	}
	checkFields(t, e.next(), usageFields{CacheStatus: CacheDisabled, VirtualKey: "vk-up", Provider: "openai", Model: "gpt-4o-mini-2024-07-18", Status: 200,
		Prompt: 9, Completion: 3, Total: 12, Cost: (9*0.15 + 3*0.60) / 1e6})
}

// TestLogFieldsSlowStreamTTFB: the time to first byte is the wait for the
// first byte of the answer's body, not for its headers.
func TestLogFieldsSlowStreamTTFB(t *testing.T) {
	const wait = 100 * time.Millisecond
	arrived, gate := make(chan struct{}), make(chan struct{})
	e := newFieldsEnv(t, newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		close(arrived)
		<-gate
		sseAnswer(`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`, `[DONE]`)(w, r)
	}), nil)
	done := make(chan string)
	go func() {
		_, body := e.post(`{"model":"gpt-4o","stream":true}`, "x-gateway-virtual-key: vk-up")
		done <- body
	}()
	<-arrived
	<-time.After(wait) // the provider thinks before its first event: what TTFB measures
	close(gate)
	if body := <-done; !strings.Contains(body, "[DONE]") {
		t.Fatalf("body %q", body)
	}
	rec := e.next()
	if rec.TTFB < wait || rec.TTFB > rec.Latency {
		t.Errorf("ttfb %v, latency %v; want at least the provider's %v wait, at most the latency", rec.TTFB, rec.Latency, wait)
	}
	if rec.TotalTokens != 6 {
		t.Errorf("total tokens %d, want 6", rec.TotalTokens)
	}
}

// TestLogFieldsCacheHit: a hit is logged with the stored answer's tokens,
// no cost and no time to a provider's first byte.
func TestLogFieldsCacheHit(t *testing.T) {
	e := newFieldsEnv(t, newCoreUpstream(t, jsonAnswer(200, gpt4oAnswer)), nil)
	cfg := `x-gateway-config: {"virtual_key":"vk-up","cache":{"mode":"simple"}}`
	want := usageFields{VirtualKey: "vk-up", Provider: "openai", Model: "gpt-4o", Status: 200,
		Prompt: 100, Completion: 20, Total: 120, CachedPrompt: 40, Cost: gpt4oCost, CacheStatus: CacheMiss}
	e.post(`{"model":"gpt-4o"}`, cfg)
	checkFields(t, e.next(), want)
	e.post(`{"model":"gpt-4o"}`, cfg)
	hit := e.next()
	want.Cost, want.CacheStatus = 0, CacheHit
	checkFields(t, hit, want)
	if hit.TTFB != 0 {
		t.Errorf("hit ttfb %v, want 0: no provider answered", hit.TTFB)
	}
}

// TestLogFieldsRetryRescued: a 503 retried into a 200 is rescued.
func TestLogFieldsRetryRescued(t *testing.T) {
	var calls atomic.Int32
	e := newFieldsEnv(t, newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			jsonAnswer(503, `{"error":{"message":"busy"}}`)(w, r)
			return
		}
		jsonAnswer(200, gpt4oAnswer)(w, r)
	}), nil)
	res, _ := e.post(`{"model":"gpt-4o"}`, `x-gateway-config: {"virtual_key":"vk-up","retry":{"attempts":2}}`)
	if res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	checkFields(t, e.next(), usageFields{CacheStatus: CacheDisabled, VirtualKey: "vk-up", Provider: "openai", Model: "gpt-4o", Status: 200, Attempts: 1,
		Prompt: 100, Completion: 20, Total: 120, CachedPrompt: 40, Cost: gpt4oCost, Rescued: true})
}

// TestLogFieldsFallbackSavedConfig: a saved config's fallback to its
// second target logs the config, the virtual key that answered and its
// index; when the last target cannot be reached, the first one's error
// answer goes out and is logged as that target's.
func TestLogFieldsFallbackSavedConfig(t *testing.T) {
	bad := newCoreUpstream(t, jsonAnswer(500, `{"error":{"message":"down"}}`))
	gone := newCoreUpstream(t, nil)
	gone.Close()
	e := newFieldsEnv(t, newCoreUpstream(t, jsonAnswer(200, gpt4oAnswer)), nil)
	e.store.AddVirtualKey(VirtualKey{Slug: "vk-bad", Provider: "openai", APIKey: "sk-b", BaseURL: bad.URL + "/v1", WorkspaceID: "ws-1"})
	e.store.AddVirtualKey(VirtualKey{Slug: "vk-gone", Provider: "openai", APIKey: "sk-g", BaseURL: gone.URL + "/v1", WorkspaceID: "ws-1"})
	e.store.AddConfig(SavedConfig{ID: "cfg-fallback", WorkspaceID: "ws-1",
		Config: json.RawMessage(`{"strategy":{"mode":"fallback"},"targets":[{"virtual_key":"vk-bad"},{"virtual_key":"vk-up"}]}`)})
	e.store.AddConfig(SavedConfig{ID: "cfg-none", WorkspaceID: "ws-1",
		Config: json.RawMessage(`{"strategy":{"mode":"fallback"},"targets":[{"virtual_key":"vk-bad"},{"virtual_key":"vk-gone"}]}`)})

	res, _ := e.post(`{"model":"gpt-4o"}`, "x-gateway-config: cfg-fallback")
	if res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	checkFields(t, e.next(), usageFields{CacheStatus: CacheDisabled, VirtualKey: "vk-up", ConfigID: "cfg-fallback", Provider: "openai", Model: "gpt-4o", Status: 200,
		FallbackIndex: 1, Prompt: 100, Completion: 20, Total: 120, CachedPrompt: 40, Cost: gpt4oCost, Rescued: true})

	res, _ = e.post(`{"model":"gpt-4o"}`, "x-gateway-config: cfg-none")
	if res.StatusCode != 500 {
		t.Fatalf("status %d, want the first target's 500", res.StatusCode)
	}
	checkFields(t, e.next(), usageFields{CacheStatus: CacheDisabled, VirtualKey: "vk-bad", ConfigID: "cfg-none", Provider: "openai", Model: "gpt-4o", Status: 500})
}

// TestLogFieldsInlineConfig: an inline config is no saved config.
func TestLogFieldsInlineConfig(t *testing.T) {
	e := newFieldsEnv(t, newCoreUpstream(t, jsonAnswer(200, gpt4oAnswer)), nil)
	e.post(`{"model":"gpt-4o"}`, `x-gateway-config: {"virtual_key":"vk-up"}`)
	if rec := e.next(); rec.ConfigID != "" || rec.VirtualKey != "vk-up" {
		t.Errorf("config %q virtual key %q, want no config and vk-up", rec.ConfigID, rec.VirtualKey)
	}
}

// TestLogFieldsAnthropic: a translated Anthropic answer is counted in
// OpenAI's terms (cache reads are prompt tokens) and priced at Claude's
// price, cache reads at the cache-hit price.
func TestLogFieldsAnthropic(t *testing.T) {
	t.Run("json", func(t *testing.T) {
		up := newCoreUpstream(t, jsonAnswer(200, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-3-5-sonnet-20241022",
			"content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn",
			"usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":7}}`))
		e := newFieldsEnv(t, up, nil)
		e.store.AddVirtualKey(VirtualKey{Slug: "vk-anth", Provider: ProviderAnthropic, APIKey: "sk-ant", BaseURL: up.URL + "/v1", WorkspaceID: "ws-1"})
		res, body := e.post(`{"model":"claude-3-5-sonnet-20241022","max_tokens":50,"messages":[{"role":"user","content":"Hi"}]}`, "x-gateway-virtual-key: vk-anth")
		if res.StatusCode != 200 || !strings.Contains(body, `"prompt_tokens":15`) {
			t.Fatalf("status %d body %s", res.StatusCode, body)
		}
		checkFields(t, e.next(), usageFields{CacheStatus: CacheDisabled, VirtualKey: "vk-anth", Provider: "anthropic", Model: "claude-3-5-sonnet-20241022", Status: 200,
			Prompt: 15, Completion: 7, Total: 22, CachedPrompt: 5, Cost: (10*3 + 5*0.30 + 7*15.0) / 1e6})
	})
	t.Run("stream", func(t *testing.T) {
		up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, anthropicEvents)
		})
		e := newFieldsEnv(t, up, nil)
		e.store.AddVirtualKey(VirtualKey{Slug: "vk-anth", Provider: ProviderAnthropic, APIKey: "sk-ant", BaseURL: up.URL + "/v1", WorkspaceID: "ws-1"})
		res, body := e.post(`{"model":"claude-sonnet-4-20250514","max_tokens":50,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hi"}]}`,
			"x-gateway-virtual-key: vk-anth")
		if res.StatusCode != 200 {
			t.Fatalf("status %d body %s", res.StatusCode, body)
		}
		rec := e.next()
		var usage struct {
			PromptTokens     int64 `json:"prompt_tokens"`
			CompletionTokens int64 `json:"completion_tokens"`
		}
		for _, line := range strings.Split(body, "\n") {
			var chunk struct {
				Usage *json.RawMessage `json:"usage"`
			}
			if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &chunk) == nil && chunk.Usage != nil {
				json.Unmarshal(*chunk.Usage, &usage)
			}
		}
		if usage.PromptTokens == 0 {
			t.Fatalf("the translated stream has no usage chunk: %s", body)
		}
		checkFields(t, rec, usageFields{CacheStatus: CacheDisabled, VirtualKey: "vk-anth", Provider: "anthropic", Model: "claude-sonnet-4-20250514", Status: 200,
			Prompt: usage.PromptTokens, Completion: usage.CompletionTokens, Total: usage.PromptTokens + usage.CompletionTokens,
			Cost: (float64(usage.PromptTokens)*3 + float64(usage.CompletionTokens)*15) / 1e6})
	})
}

// TestLogFieldsGeminiFallback: one OpenAI body falls back from the Gemini
// API (503) to Vertex AI; the translated answer's usage (thinking tokens
// are completion tokens, cached content is cached prompt) is logged and
// priced at Vertex AI's price of the model.
func TestLogFieldsGeminiFallback(t *testing.T) {
	up := newCoreUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Goog-Api-Key") != "" {
			jsonAnswer(503, `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`)(w, r)
			return
		}
		jsonAnswer(200, `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi!"}]},"finishReason":"STOP"}],
			"usageMetadata":{"promptTokenCount":1000,"cachedContentTokenCount":600,"candidatesTokenCount":100,"thoughtsTokenCount":50,"totalTokenCount":1150},
			"modelVersion":"gemini-2.5-flash"}`)(w, r)
	})
	e := newFieldsEnv(t, up, nil)
	e.store.AddVirtualKey(VirtualKey{Slug: "vk-google", Provider: ProviderGoogle, APIKey: "gk", BaseURL: up.URL + "/v1beta", WorkspaceID: "ws-1"})
	e.store.AddVirtualKey(VirtualKey{Slug: "vk-vertex", Provider: ProviderVertexAI, APIKey: "ya29.t", BaseURL: up.URL, WorkspaceID: "ws-1",
		HostSettings: HostSettings{ProjectID: "my-proj", Region: "us-central1"}})
	res, body := e.post(`{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"Hi"}]}`,
		`x-gateway-config: {"strategy":{"mode":"fallback"},"targets":[{"virtual_key":"vk-google"},{"virtual_key":"vk-vertex"}]}`)
	if res.StatusCode != 200 {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	checkFields(t, e.next(), usageFields{CacheStatus: CacheDisabled, VirtualKey: "vk-vertex", Provider: "vertex-ai", Model: "gemini-2.5-flash", Status: 200,
		FallbackIndex: 1, Rescued: true, Prompt: 1000, Completion: 150, Total: 1150, CachedPrompt: 600,
		Cost: (400*0.30 + 600*0.03 + 150*2.50) / 1e6})
}

// TestLogFieldsPrices: a model without a price costs 0 and says so; an
// empty table prices nothing; a table of the host's own is used.
func TestLogFieldsPrices(t *testing.T) {
	up := newCoreUpstream(t, jsonAnswer(200, `{"usage":{"prompt_tokens":1000,"completion_tokens":500,"total_tokens":1500}}`))
	cases := []struct {
		name   string
		prices PriceTable
		model  string
		want   usageFields
	}{
		{"unknown model", nil, "acme-llm-1",
			usageFields{Model: "acme-llm-1", CostUnknown: true}},
		{"empty table", PriceTable{}, "gpt-4o",
			usageFields{Model: "gpt-4o", CostUnknown: true}},
		{"own table", PriceTable{"openai/gpt-4o": {Input: 1, Output: 2}, "acme-llm": {Input: 10, Output: 20}}, "acme-llm-1",
			usageFields{Model: "acme-llm-1", Cost: (1000*10 + 500*20.0) / 1e6}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newFieldsEnv(t, up, func(o *Options) { o.Prices = tc.prices })
			e.post(`{"model":"`+tc.model+`"}`, "x-gateway-virtual-key: vk-up")
			want := tc.want
			want.VirtualKey, want.Provider, want.Status, want.Prompt, want.Completion, want.Total = "vk-up", "openai", 200, 1000, 500, 1500
			want.CacheStatus = CacheDisabled
			checkFields(t, e.next(), want)
		})
	}
}

// TestLogFieldsPricesCopied: changing the table after New does not reach
// the gateway.
func TestLogFieldsPricesCopied(t *testing.T) {
	prices := PriceTable{"openai/gpt-4o": {Input: 1, Output: 1}}
	e := newFieldsEnv(t, newCoreUpstream(t, jsonAnswer(200, `{"usage":{"prompt_tokens":1000000,"completion_tokens":0}}`)),
		func(o *Options) { o.Prices = prices })
	prices["openai/gpt-4o"] = ModelPrice{Input: 100}
	e.post(`{"model":"gpt-4o"}`, "x-gateway-virtual-key: vk-up")
	if rec := e.next(); rec.Cost != 1 {
		t.Errorf("cost %v, want 1 (the table as New got it)", rec.Cost)
	}
}

// TestLogFieldsSlogLine: the request log line carries the new fields.
func TestLogFieldsSlogLine(t *testing.T) {
	var out syncBuffer
	up := newCoreUpstream(t, jsonAnswer(200, gpt4oAnswer))
	e := newCoreEnv(t, up, func(o *Options) {
		o.LogSink = SlogSink{Logger: slog.New(slog.NewJSONHandler(&out, nil))}
	})
	e.do("POST", "/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o"}`), vkHeaders...)
	e.gw.Close()
	var rec map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(out.String())), &rec); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	for k, want := range map[string]any{"virtual_key": "vk-up", "model": "gpt-4o", "prompt_tokens": 100.0,
		"completion_tokens": 20.0, "total_tokens": 120.0, "cached_prompt_tokens": 40.0, "cost": gpt4oCost} {
		if got := rec[k]; !jsonEqual(got, want) {
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
	if id, _ := rec["id"].(string); !uuidV7.MatchString(id) {
		t.Errorf("id = %v, want a UUIDv7", rec["id"])
	}
	if _, ok := rec["ttfb"]; !ok {
		t.Error("no ttfb")
	}
}

func TestUUIDGenOrdered(t *testing.T) {
	var g uuidGen
	now := time.Now()
	prev := ""
	for i := range 10000 {
		// Ten thousand ids of one instant, then one of an earlier one:
		// each sorts after the one before.
		at := now
		if i == 9999 {
			at = now.Add(-time.Hour)
		}
		id := g.next(at)
		if !uuidV7.MatchString(id) || id <= prev {
			t.Fatalf("id %d %q after %q: want a UUIDv7 that sorts after it", i, id, prev)
		}
		prev = id
	}
}

func TestRequestModel(t *testing.T) {
	for body, want := range map[string]string{
		`{"model":"gpt-4o"}`: "gpt-4o",
		`{"messages":[{"role":"user","content":"{\"model\":\"x\"}"}],"model" : "gpt-4o-mini"}`: "gpt-4o-mini",
		` { "n":1, "model":"a\u002fb"}`: "a/b",
		`{"input":{"model":"inner"}}`:   "",
		`{"model":5}`:                   "",
		`{"model":"unterminated`:        "",
		`{"a":1 "model":"x"}`:           "",
		`["model","x"]`:                 "",
		`hello`:                         "",
		``:                              "",
	} {
		if got := requestModel([]byte(body)); got != want {
			t.Errorf("requestModel(%s) = %q, want %q", body, got, want)
		}
	}
}

func FuzzRequestModel(f *testing.F) {
	f.Add([]byte(`{"model":"gpt-4o"}`))
	f.Add([]byte(`{"a":[1,{"b":"\""}],"model":"x\\y"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m := requestModel(b)
		var v struct {
			Model *string `json:"model"`
		}
		if m != "" && json.Valid(b) && (json.Unmarshal(b, &v) != nil || v.Model == nil || *v.Model != m) {
			t.Fatalf("requestModel(%s) = %q; encoding/json reads %v", b, m, v.Model)
		}
	})
}

func TestUsageCounts(t *testing.T) {
	type counts struct {
		Prompt, Completion, Total, Cached int64
		Model                             string
	}
	tests := []struct {
		name string
		sse  bool
		body string
		want counts
	}{
		{name: "openai", body: gpt4oAnswer, want: counts{100, 20, 120, 40, "gpt-4o-2024-08-06"}},
		{name: "details outside usage ignored", body: `{"prompt_tokens_details":{"cached_tokens":4},"usage":{"prompt_tokens":5,"completion_tokens":1}}`,
			want: counts{5, 1, 6, 0, ""}},
		{name: "cached deeper ignored", body: `{"usage":{"prompt_tokens":5,"x":{"prompt_tokens_details":{"cached_tokens":4}}}}`,
			want: counts{5, 0, 5, 0, ""}},
		{name: "anthropic", body: `{"model":"claude-x","usage":{"input_tokens":10,"cache_creation_input_tokens":2,"cache_read_input_tokens":3,"output_tokens":5}}`,
			want: counts{15, 5, 20, 3, "claude-x"}},
		{name: "gemini thinking and cache", body: `{"usageMetadata":{"promptTokenCount":8,"cachedContentTokenCount":6,"candidatesTokenCount":5,"thoughtsTokenCount":4,"totalTokenCount":17},"modelVersion":"gemini-2.5-flash"}`,
			want: counts{8, 9, 17, 6, "gemini-2.5-flash"}},
		{name: "responses api stream", sse: true,
			body: "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"model\":\"gpt-4.1\",\"usage\":null}}\n\n" +
				"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"usage\":{\"input_tokens\":9,\"input_tokens_details\":{\"cached_tokens\":4},\"output_tokens\":2,\"total_tokens\":11}}}\n\n",
			want: counts{9, 2, 11, 4, "gpt-4.1"}},
		{name: "model with escape not kept", body: `{"model":"a\"b","usage":{"total_tokens":1}}`, want: counts{0, 0, 1, 0, ""}},
		{name: "model in a string ignored", body: `{"text":"\"model\":\"x\"","model":"y"}`, want: counts{0, 0, 0, 0, "y"}},
		{name: "model too long not kept", body: `{"model":"` + strings.Repeat("m", 65) + `"}`, want: counts{}},
		{name: "escaped quotes in content", sse: true,
			body: "data: {\"choices\":[{\"delta\":{\"content\":\"a\\\\\\\"b\\\\\"}}],\"model\":\"m1\"}\n\ndata: {\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":1}}\n\n",
			want: counts{2, 1, 3, 0, "m1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, cut := range []int{len(tt.body), 1, 3, 7} {
				s := usageScanner{sse: tt.sse}
				for b := []byte(tt.body); len(b) > 0; {
					n := min(cut, len(b))
					s.write(b[:n])
					b = b[n:]
				}
				var got counts
				got.Prompt, got.Completion, got.Total, got.Cached, _ = s.counts()
				got.Model = s.answerModel()
				if got != tt.want {
					t.Fatalf("in pieces of %d: %+v, want %+v", cut, got, tt.want)
				}
			}
		})
	}
}

// FuzzUsageCounts: what the scanner reads does not depend on how the
// answer was cut into writes, nor on what json skips and reads a run at
// a time.
func FuzzUsageCounts(f *testing.F) {
	f.Add(gpt4oAnswer, false, 5)
	f.Add("data: {\"model\":\"m\",\"usage\":{\"prompt_tokens_details\":{\"cached_tokens\":3},\"prompt_tokens\":4}}\n\n", true, 2)
	f.Add("data: {\"a\":\"\\\\\\\"\"}\r\n\r\n", true, 1)
	f.Fuzz(func(t *testing.T, body string, sse bool, cut int) {
		whole := usageScanner{sse: sse}
		whole.write([]byte(body))
		parts := usageScanner{sse: sse}
		cut = max(cut, 1)
		for b := []byte(body); len(b) > 0; {
			n := min(cut, len(b))
			parts.write(b[:n])
			b = b[n:]
		}
		p1, c1, t1, k1, ok1 := whole.counts()
		p2, c2, t2, k2, ok2 := parts.counts()
		if p1 != p2 || c1 != c2 || t1 != t2 || k1 != k2 || ok1 != ok2 || whole.answerModel() != parts.answerModel() {
			t.Fatalf("whole %v %v %v %v %v %q; in parts of %d: %v %v %v %v %v %q",
				p1, c1, t1, k1, ok1, whole.answerModel(), cut, p2, c2, t2, k2, ok2, parts.answerModel())
		}
		if !sse {
			// jsonByte alone, a byte at a time, is what json's skipping
			// and runs must agree with.
			ref := usageScanner{}
			for _, c := range []byte(body) {
				ref.jsonByte(c)
			}
			p3, c3, t3, k3, ok3 := ref.counts()
			if p1 != p3 || c1 != c3 || t1 != t3 || k1 != k3 || ok1 != ok3 || whole.answerModel() != ref.answerModel() {
				t.Fatalf("whole %v %v %v %v %v %q; a byte at a time: %v %v %v %v %v %q",
					p1, c1, t1, k1, ok1, whole.answerModel(), p3, c3, t3, k3, ok3, ref.answerModel())
			}
		}
		if p1 < 0 || c1 < 0 || k1 < 0 || k1 > p1 || t1 < p1+c1 {
			t.Fatalf("counts %d %d %d %d", p1, c1, t1, k1)
		}
	})
}

// BenchmarkRequestLogFields measures what filling the request log's
// fields adds to a request, apart from the network: the id, the request's
// model, reading the answer's usage and pricing it; for BenchmarkPassThrough's
// answer and for BenchmarkStream's.
func BenchmarkRequestLogFields(b *testing.B) {
	prices := DefaultPrices()
	body := []byte(benchBody)
	for _, tc := range []struct {
		name   string
		sse    bool
		answer []byte
	}{{"json", false, []byte(gpt4oAnswer)}, {"stream", true, []byte(benchStreamAnswer)}} {
		b.Run(tc.name, func(b *testing.B) {
			var ids uuidGen
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.answer)))
			for b.Loop() {
				_ = ids.next(time.Now())
				model := requestModel(body)
				u := usageScanner{sse: tc.sse}
				u.write(tc.answer)
				p, c, _, k, _ := u.counts()
				if _, ok := prices.Cost("openai", model, p, c, k); !ok {
					b.Fatal("no price")
				}
			}
		})
	}
}

// TestLogFieldsSharedFill: callers served one cache fill's answer are all
// logged with its tokens, and only the one who led the fill with its cost.
func TestLogFieldsSharedFill(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			<-release
			jsonAnswer(200, gpt4oAnswer)(w, r)
		})
		logs := &LogBuffer{}
		g := bubbleGateway(t, func(o *Options) { o.LogSink = logs }, pipeTransport{"up": up})
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() { serve(t.Context(), g, `{"virtual_key":"up","cache":{"mode":"simple"}}`, `{"model":"gpt-4o"}`) })
			synctest.Wait()
		}
		close(release)
		wg.Wait()
		g.Close()
		var costs []float64
		for _, rec := range logs.Query(LogFilter{}) {
			if rec.TotalTokens != 120 || rec.CacheStatus != CacheMiss || rec.CostUnknown {
				t.Errorf("record %+v, want 120 tokens of a MISS", rec)
			}
			costs = append(costs, rec.Cost)
		}
		slices.Sort(costs)
		if len(costs) != 3 || costs[0] != 0 || costs[1] != 0 || math.Abs(costs[2]-gpt4oCost) > 1e-12 {
			t.Errorf("costs %v, want 0, 0 and %v", costs, gpt4oCost)
		}
	})
}
