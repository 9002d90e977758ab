package responses

import (
	"io"
	"syscall"
	"testing"
)

// cpuTime reports, as cpu-ns/op, the CPU time the process spent per
// operation until the benchmark's end: on a shared machine, ns/op also
// counts the time other work held the CPU.
func cpuTime(b *testing.B) {
	var start syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &start)
	b.Cleanup(func() {
		var end syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &end)
		if b.N > 0 {
			ns := end.Utime.Nano() + end.Stime.Nano() - start.Utime.Nano() - start.Stime.Nano()
			b.ReportMetric(float64(ns)/float64(b.N), "cpu-ns/op")
		}
	})
}

// BenchmarkChatCodex: a Codex request (7 KB, 10 items, 3 tools) parsed
// and written as a chat completion request.
func BenchmarkChatCodex(b *testing.B) {
	body := fixture(b, "codex_request.json")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpuTime(b)
	for b.Loop() {
		r, err := Parse(body)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Chat(Options{ReasoningField: "reasoning_content"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnswer: a chat completion with reasoning, text and two tool
// calls turned into a Response object and encoded.
func BenchmarkAnswer(b *testing.B) {
	r := codexRequest(b)
	body := fixture(b, "chat_answer_tools.json")
	b.ReportAllocs()
	cpuTime(b)
	for b.Loop() {
		if _, err := r.Answer(body, "resp_1"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamTextDelta: the cost of one chat text chunk, the bulk of
// a stream, turned into one response.output_text.delta event.
func BenchmarkStreamTextDelta(b *testing.B) {
	r, _ := Parse([]byte(`{"model":"m","input":"Hi","stream":true}`))
	s := r.NewStream(io.Discard, "resp_1", 1)
	s.Chunk([]byte(`{"id":"chatcmpl-9f2c1e7a","object":"chat.completion.chunk","created":1757586000,"model":"qwen3-coder-480b","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"logprobs":null,"finish_reason":null}]}`))
	chunk := []byte(`{"id":"chatcmpl-9f2c1e7a","object":"chat.completion.chunk","created":1757586000,"model":"qwen3-coder-480b","choices":[{"index":0,"delta":{"content":" trims the trailing"},"logprobs":null,"finish_reason":null}]}`)
	b.ReportAllocs()
	cpuTime(b)
	for b.Loop() {
		if err := s.Chunk(chunk); err != nil {
			b.Fatal(err)
		}
		s.acc = s.acc[:0] // keep the accumulated text from growing without end
	}
}

// BenchmarkStreamCodex: the whole Codex tool-call stream, per chat event.
func BenchmarkStreamCodex(b *testing.B) {
	r := codexRequest(b)
	stream := fixture(b, "chat_stream_tools.txt")
	b.ReportAllocs()
	cpuTime(b)
	for b.Loop() {
		feed(b, r, stream)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/13, "ns/event")
}
