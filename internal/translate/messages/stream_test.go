package messages

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelgateway/gateway/internal/sse"
)

// translateStream feeds the chat SSE stream in to a Stream, event by
// event, and returns what it wrote, the Write calls' count, and the
// errors of Chunk and Close.
func translateStream(t testing.TB, in []byte, o StreamOptions) (out []byte, writes int, err error) {
	t.Helper()
	w := &countingWriter{}
	s := NewStream(w, o)
	r := sse.NewReader(bytes.NewReader(in), 1<<20)
	for {
		_, data, rerr := r.Next()
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			t.Fatal(rerr)
		}
		before := w.writes
		if cerr := s.Chunk(data); cerr != nil && err == nil {
			err = cerr
		}
		if w.writes > before+1 {
			t.Fatalf("one chunk made %d writes", w.writes-before)
		}
	}
	if cerr := s.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return w.Bytes(), w.writes, err
}

type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// events splits a Messages stream into its events' names, checking each
// event's framing and that its data is a JSON object of the same type.
func events(t testing.TB, out []byte) []string {
	t.Helper()
	var names []string
	for _, ev := range strings.SplitAfter(string(out), "\n\n") {
		if ev == "" {
			continue
		}
		name, rest, ok := strings.Cut(ev, "\n")
		data, ok2 := strings.CutPrefix(rest, "data: ")
		if !ok || !ok2 || !strings.HasPrefix(name, "event: ") || !strings.HasSuffix(data, "}\n\n") {
			t.Fatalf("malformed event %q", ev)
		}
		name = strings.TrimPrefix(name, "event: ")
		var v struct{ Type string }
		if err := json.Unmarshal([]byte(data), &v); err != nil || v.Type != name {
			t.Fatalf("event %s has data %s (%v)", name, data, err)
		}
		names = append(names, name)
	}
	return names
}

func TestStream(t *testing.T) {
	const (
		start = "message_start"
		ping  = "ping"
		bs    = "content_block_start"
		bd    = "content_block_delta"
		bstop = "content_block_stop"
		md    = "message_delta"
		stop  = "message_stop"
	)
	for _, tc := range []struct {
		name   string
		opts   StreamOptions
		events []string
		err    error
	}{
		{"text", StreamOptions{Model: "claude-sonnet-4-5", InputTokens: 10}, []string{start, ping, bs, bd, bd, bstop, md, stop}, nil},
		{"tools_reasoning", StreamOptions{}, []string{start, ping, bs, bd, bd, bstop, bs, bd, bstop, bs, bd, bd, bstop, bs, bd, bstop, md, stop}, nil},
		{"interleaved", StreamOptions{}, []string{start, ping, bs, bd, bstop, bs, bd, bstop, bs, bd, bstop, bs, bd, bstop, bs, bd, bd, bstop, md, stop}, nil},
		{"stop_sequence", StreamOptions{StopSequences: []string{"3", "4"}}, []string{start, ping, bs, bd, bstop, md, stop}, nil},
		{"error", StreamOptions{}, []string{start, ping, bs, bd, "error"}, nil},
		{"truncated", StreamOptions{}, []string{start, ping, bs, bd, bstop, bs, bd, "error"}, ErrTruncated},
		{"length_no_done", StreamOptions{}, []string{start, ping, bs, bd, bstop, md, stop}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := translateStream(t, readFile(t, tc.name+".chat.sse"), tc.opts)
			if !errors.Is(err, tc.err) {
				t.Errorf("err = %v, want %v", err, tc.err)
			}
			if diff := cmp.Diff(tc.events, events(t, out)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			golden(t, tc.name+".messages.sse", out)
		})
	}
}

// TestStreamWritesAsItGoes checks that each chunk's events are written
// when the chunk is given, before the next arrives.
func TestStreamWritesAsItGoes(t *testing.T) {
	var w countingWriter
	s := NewStream(&w, StreamOptions{})
	if err := s.Chunk([]byte(`{"id":"a","model":"m","choices":[{"index":0,"delta":{"content":"Hi"}}]}`)); err != nil {
		t.Fatal(err)
	}
	if got := events(t, w.Bytes()); !cmp.Equal(got, []string{"message_start", "ping", "content_block_start", "content_block_delta"}) {
		t.Fatalf("after one chunk: %v", got)
	}
	w.Reset()
	if err := s.Chunk([]byte(`{"id":"a","model":"m","choices":[{"index":0,"delta":{"content":" there"}}]}`)); err != nil {
		t.Fatal(err)
	}
	if got := events(t, w.Bytes()); !cmp.Equal(got, []string{"content_block_delta"}) {
		t.Fatalf("after two chunks: %v", got)
	}
}

func TestStreamBadChunk(t *testing.T) {
	var w countingWriter
	s := NewStream(&w, StreamOptions{})
	if err := s.Chunk([]byte(`{"choices":`)); !errors.Is(err, ErrBadChunk) {
		t.Fatalf("err = %v", err)
	}
	if got := events(t, w.Bytes()); !cmp.Equal(got, []string{"error"}) {
		t.Fatalf("events %v", got)
	}
	n := w.Len()
	if err := s.Chunk([]byte(`[DONE]`)); err != nil || s.Close() != nil || w.Len() != n {
		t.Fatalf("the stream went on after its error: %v, %d bytes", err, w.Len()-n)
	}
}

func TestStreamFail(t *testing.T) {
	var w countingWriter
	s := NewStream(&w, StreamOptions{})
	s.Chunk([]byte(`{"id":"a","model":"m","choices":[{"index":0,"delta":{"content":"Hi"}}]}`))
	w.Reset()
	if err := s.Fail(529, "", "", "upstream overloaded"); err != nil {
		t.Fatal(err)
	}
	want := "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"upstream overloaded\"}}\n\n"
	if w.String() != want {
		t.Errorf("got %q\nwant %q", w.String(), want)
	}
}

// TestStreamMatchesAnswer checks that a streamed answer, put together as
// Anthropic's SDKs put it together, is the answer Answer gives for the
// same chat completion whole.
func TestStreamMatchesAnswer(t *testing.T) {
	for _, name := range []string{"text", "tools_reasoning"} {
		t.Run(name, func(t *testing.T) {
			out, _, err := translateStream(t, readFile(t, name+".chat.sse"), StreamOptions{})
			if err != nil {
				t.Fatal(err)
			}
			whole, err := Answer(readFile(t, name+".chat.json"), "", nil)
			if err != nil {
				t.Fatal(err)
			}
			var want map[string]any
			if err := json.Unmarshal(whole, &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, accumulate(t, out)); diff != "" {
				t.Errorf("streamed (+) and whole (-) answers differ:\n%s", diff)
			}
		})
	}
}

// accumulate puts a Messages stream together into the message it tells.
func accumulate(t *testing.T, out []byte) map[string]any {
	t.Helper()
	var msg map[string]any
	var blocks []map[string]any
	var inputs []string
	for _, ev := range strings.SplitAfter(string(out), "\n\n") {
		_, data, ok := strings.Cut(ev, "data: ")
		if !ok {
			continue
		}
		var e struct {
			Type         string
			Index        int
			Message      map[string]any
			ContentBlock map[string]any `json:"content_block"`
			Delta        map[string]any
			Usage        map[string]any
		}
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatal(err)
		}
		switch e.Type {
		case "message_start":
			msg = e.Message
		case "content_block_start":
			blocks = append(blocks, e.ContentBlock)
			inputs = append(inputs, "")
		case "content_block_delta":
			b := blocks[e.Index]
			switch e.Delta["type"] {
			case "text_delta":
				b["text"] = b["text"].(string) + e.Delta["text"].(string)
			case "thinking_delta":
				b["thinking"] = b["thinking"].(string) + e.Delta["thinking"].(string)
			case "input_json_delta":
				inputs[e.Index] += e.Delta["partial_json"].(string)
			}
		case "message_delta":
			for k, v := range e.Delta {
				msg[k] = v
			}
			msg["usage"] = e.Usage
		}
	}
	content := make([]any, len(blocks))
	for i, b := range blocks {
		if inputs[i] != "" {
			var in any
			if err := json.Unmarshal([]byte(inputs[i]), &in); err != nil {
				t.Fatalf("block %d input %q: %v", i, inputs[i], err)
			}
			b["input"] = in
		}
		content[i] = b
	}
	msg["content"] = content
	return msg
}
