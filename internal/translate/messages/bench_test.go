package messages

import (
	"bytes"
	"io"
	"syscall"
	"testing"

	"github.com/modelgateway/gateway/internal/sse"
)

// cpuTime reports, as cpu-ns/op, the CPU time the process spent per
// operation from now to the benchmark's end: on a machine shared with
// other work, ns/op counts the time others held the CPU too.
func cpuTime(b *testing.B) {
	start := rusage()
	b.Cleanup(func() {
		if b.N > 0 {
			b.ReportMetric(float64(rusage()-start)/float64(b.N), "cpu-ns/op")
		}
	})
}

func rusage() int64 {
	var u syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	return u.Utime.Nano() + u.Stime.Nano()
}

// BenchmarkRequest translates the Claude Code fixture (6 KB: system with
// cache_control, four tools, thinking, tool results, an image).
func BenchmarkRequest(b *testing.B) {
	body := readFile(b, "claude_code.request.json")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpuTime(b)
	for b.Loop() {
		if _, err := Request(body, Dialect{Reasoning: "reasoning_content"}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCountTokens(b *testing.B) {
	body := readFile(b, "claude_code.request.json")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpuTime(b)
	for b.Loop() {
		if _, err := CountTokens(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAnswer(b *testing.B) {
	body := readFile(b, "tools_reasoning.chat.json")
	b.ReportAllocs()
	cpuTime(b)
	for b.Loop() {
		if _, err := Answer(body, "", nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamEvent is the cost of one chat chunk, a text delta as
// most of a stream's chunks are, translated and written.
func BenchmarkStreamEvent(b *testing.B) {
	chunk := []byte(`{"id":"chatcmpl-9xQk2","object":"chat.completion.chunk","created":1767225600,"model":"deepseek-reasoner","choices":[{"index":0,"delta":{"content":" the parser splits on"},"logprobs":null,"finish_reason":null}]}`)
	s := NewStream(io.Discard, StreamOptions{})
	s.Chunk(chunk)
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	cpuTime(b)
	for b.Loop() {
		if err := s.Chunk(chunk); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamFixture translates the tools_reasoning stream whole and
// reports the cost per chat event.
func BenchmarkStreamFixture(b *testing.B) {
	in := readFile(b, "tools_reasoning.chat.sse")
	var datas [][]byte
	r := sse.NewReader(bytes.NewReader(in), 1<<20)
	for {
		_, d, err := r.Next()
		if err != nil {
			break
		}
		datas = append(datas, bytes.Clone(d))
	}
	b.ReportAllocs()
	cpuTime(b)
	for b.Loop() {
		s := NewStream(io.Discard, StreamOptions{})
		for _, d := range datas {
			s.Chunk(d)
		}
		s.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(datas)), "ns/event")
}
