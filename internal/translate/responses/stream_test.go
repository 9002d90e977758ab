package responses

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelgateway/gateway/internal/sse"
)

// event is one written Responses stream event.
type event struct {
	typ  string
	data map[string]any
}

// feed runs the chat stream of fixture name through a Stream of r and
// returns what it wrote. It calls Finish at the end of the chat stream.
func feed(t testing.TB, r *Request, chatStream []byte) ([]byte, *Stream) {
	t.Helper()
	var out bytes.Buffer
	s := r.NewStream(&out, "resp_1", 1757586000)
	events := sse.NewReader(bytes.NewReader(chatStream), 1<<20)
	for {
		_, data, err := events.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Chunk(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Finish(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), s
}

// parseEvents splits written bytes into events, checking each is
// "event: X\ndata: {json}\n\n" with data.type X and sequence numbers
// counting from 0.
func parseEvents(t testing.TB, b []byte) []event {
	t.Helper()
	var out []event
	for _, block := range strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n") {
		typ, data, ok := strings.Cut(block, "\ndata: ")
		if !ok || !strings.HasPrefix(typ, "event: ") || strings.Contains(data, "\n") {
			t.Fatalf("malformed event %q", block)
		}
		typ = strings.TrimPrefix(typ, "event: ")
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("event %s: data is not JSON: %v\n%s", typ, err, data)
		}
		if m["type"] != typ {
			t.Fatalf("event %s carries type %v", typ, m["type"])
		}
		if n, _ := m["sequence_number"].(float64); int(n) != len(out) {
			t.Fatalf("event %d (%s) has sequence_number %v", len(out), typ, m["sequence_number"])
		}
		out = append(out, event{typ, m})
	}
	return out
}

func types(evs []event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.typ)
	}
	return out
}

func TestStreamTools(t *testing.T) {
	r := codexRequest(t)
	b, s := feed(t, r, fixture(t, "chat_stream_tools.txt"))
	path := filepath.Join("testdata", "responses_stream_tools.txt")
	if *update {
		os.WriteFile(path, b, 0o644)
	}
	if want := fixture(t, "responses_stream_tools.txt"); !bytes.Equal(b, want) {
		t.Errorf("stream differs from %s:\n%s", path, b)
	}
	want := []string{
		"response.created", "response.in_progress",
		"response.output_item.added", "response.reasoning_summary_part.added",
		"response.reasoning_summary_text.delta", "response.reasoning_summary_text.delta",
		"response.reasoning_summary_text.done", "response.reasoning_summary_part.done", "response.output_item.done",
		"response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done",
		"response.completed",
	}
	evs := parseEvents(t, b)
	if diff := cmp.Diff(want, types(evs)); diff != "" {
		t.Errorf("event types (-want +got):\n%s", diff)
	}
	// The stream's response is the whole answer's: same output, usage.
	whole, err := codexRequest(t).Answer(fixture(t, "chat_answer_tools.json"), "resp_1")
	if err != nil {
		t.Fatal(err)
	}
	streamed, _ := json.Marshal(s.Response())
	answered, _ := json.Marshal(whole)
	if string(streamed) != string(answered) {
		t.Errorf("streamed response\n%s\ndiffers from the answered one\n%s", streamed, answered)
	}
	last := evs[len(evs)-1].data["response"].(map[string]any)
	if last["status"] != "completed" || last["usage"].(map[string]any)["input_tokens_details"].(map[string]any)["cached_tokens"] != 1920.0 {
		t.Errorf("response.completed carries %v", last)
	}
}

// chunks writes chat stream events of the given deltas (JSON objects),
// then a finish reason, then [DONE].
func chunks(finish string, deltas ...string) []byte {
	var b strings.Builder
	for _, d := range deltas {
		b.WriteString(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + d + `,"finish_reason":null}]}` + "\n\n")
	}
	if finish != "" {
		b.WriteString(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"` + finish + `"}]}` + "\n\n")
	}
	return []byte(b.String())
}

func TestStream(t *testing.T) {
	done := "data: [DONE]\n\n"
	tests := []struct {
		name   string
		stream string
		want   []string
		status string
	}{
		{"text", string(chunks("stop", `{"role":"assistant","content":""}`, `{"content":"Hel"}`, `{"content":"lo"}`)) + done,
			[]string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
				"response.output_text.delta", "response.output_text.delta", "response.output_text.done", "response.content_part.done",
				"response.output_item.done", "response.completed"}, "completed"},
		{"cut by max tokens", string(chunks("length", `{"content":"Hel"}`)) + done,
			[]string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
				"response.output_text.delta", "response.output_text.done", "response.content_part.done",
				"response.output_item.done", "response.incomplete"}, "incomplete"},
		{"refusal after text", string(chunks("stop", `{"content":"I"}`, `{"refusal":"can't"}`)) + done,
			[]string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
				"response.output_text.delta", "response.output_text.done", "response.content_part.done",
				"response.content_part.added", "response.refusal.delta", "response.refusal.done", "response.content_part.done",
				"response.output_item.done", "response.completed"}, "completed"},
		{"cut before finish", string(chunks("", `{"content":"Hel"}`)),
			[]string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
				"response.output_text.delta", "error", "response.failed"}, "failed"},
		{"error mid-stream", string(chunks("", `{"content":"Hel"}`)) + `data: {"error":{"message":"overloaded","type":"server_error"}}` + "\n\n",
			[]string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
				"response.output_text.delta", "error", "response.failed"}, "failed"},
		{"finish without [DONE]", string(chunks("stop", `{"content":"Hi"}`)),
			[]string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
				"response.output_text.delta", "response.output_text.done", "response.content_part.done",
				"response.output_item.done", "response.completed"}, "completed"},
		{"whole tool call in one chunk", string(chunks("tool_calls", `{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]}`)) + done,
			[]string{"response.created", "response.in_progress", "response.output_item.added", "response.function_call_arguments.delta",
				"response.function_call_arguments.done", "response.output_item.done", "response.completed"}, "completed"},
		{"interleaved tool calls", string(chunks("tool_calls",
			`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{"}}]}`,
			`{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"g","arguments":"{}"}}]}`,
			`{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]}`)) + done,
			[]string{"response.created", "response.in_progress",
				"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done",
				"response.output_item.added", "response.function_call_arguments.delta", "error", "response.failed"}, "failed"},
		{"event not JSON", "data: {oops\n\n",
			[]string{"response.created", "response.in_progress", "error", "response.failed"}, "failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse([]byte(`{"model":"m","input":"Hi","stream":true}`))
			if err != nil {
				t.Fatal(err)
			}
			b, s := feed(t, r, []byte(tt.stream))
			evs := parseEvents(t, b)
			if diff := cmp.Diff(tt.want, types(evs)); diff != "" {
				t.Errorf("event types (-want +got):\n%s", diff)
			}
			if s.Response().Status != tt.status {
				t.Errorf("status %q, want %q", s.Response().Status, tt.status)
			}
			if got := evs[len(evs)-1].data["response"].(map[string]any)["status"]; got != tt.status {
				t.Errorf("last event's status %v, want %q", got, tt.status)
			}
		})
	}
}

func TestStreamFail(t *testing.T) {
	r, _ := Parse([]byte(`{"model":"m","input":"Hi","stream":true}`))
	var out bytes.Buffer
	s := r.NewStream(&out, "resp_1", 7)
	if err := s.Chunk(chunks("", `{"content":"Hi"}`)[len("data: "):]); err != nil {
		t.Fatal(err)
	}
	if err := s.Fail(FailureCode(429), "rate limited upstream"); err != nil {
		t.Fatal(err)
	}
	s.Chunk([]byte("[DONE]")) // after the end: ignored
	evs := parseEvents(t, out.Bytes())
	errEv := evs[len(evs)-2]
	want := map[string]any{"type": "error", "sequence_number": 5.0, "code": "rate_limit_exceeded", "message": "rate limited upstream", "param": nil}
	if diff := cmp.Diff(want, errEv.data); diff != "" {
		t.Errorf("error event (-want +got):\n%s", diff)
	}
	failed := evs[len(evs)-1].data["response"].(map[string]any)
	if diff := cmp.Diff(map[string]any{"code": "rate_limit_exceeded", "message": "rate limited upstream"}, failed["error"]); diff != "" {
		t.Errorf("failed response's error (-want +got):\n%s", diff)
	}
	if len(evs) != 7 {
		t.Errorf("%d events, want 7: nothing after response.failed", len(evs))
	}
}

// errWriter fails every write, as a gone client does.
type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestStreamWriteError(t *testing.T) {
	r, _ := Parse([]byte(`{"model":"m","input":"Hi","stream":true}`))
	s := r.NewStream(errWriter{}, "resp_1", 7)
	if err := s.Chunk([]byte(`{"choices":[{"delta":{"content":"x"}}]}`)); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("Chunk = %v, want the writer's error", err)
	}
}

func TestFailureCode(t *testing.T) {
	for status, want := range map[int]string{429: "rate_limit_exceeded", 400: "invalid_prompt", 413: "invalid_prompt", 500: "server_error", 502: "server_error", 504: "server_error"} {
		if got := FailureCode(status); got != want {
			t.Errorf("FailureCode(%d) = %q, want %q", status, got, want)
		}
	}
}
