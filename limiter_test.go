package gateway

import (
	"context"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// limiterTake is a Take that fails the test on error.
func limiterTake(t *testing.T, l Limiter, key string, lim Limit, cost float64) LimitDecision {
	t.Helper()
	d, err := l.Take(context.Background(), key, lim, cost)
	if err != nil {
		t.Fatalf("Take(%q): %v", key, err)
	}
	return d
}

func TestMemoryLimiterWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &MemoryLimiter{}
		lim := Limit{Value: 3, Per: time.Hour}
		var got []LimitDecision
		for range 4 {
			got = append(got, limiterTake(t, l, "k", lim, 1))
		}
		want := []LimitDecision{
			{Allowed: true, Remaining: 2},
			{Allowed: true, Remaining: 1},
			{Allowed: true, Remaining: 0},
			{Remaining: 0, RetryAfter: 20 * time.Minute}, // one request drains in an hour / 3
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("decisions within the hour (-want +got):\n%s", diff)
		}

		// Just before the retry time there is still no room; at it, one
		// request, and only one.
		time.Sleep(20*time.Minute - time.Second)
		if d := limiterTake(t, l, "k", lim, 1); d.Allowed || d.RetryAfter != time.Second {
			t.Fatalf("one second early: %+v, want refused with RetryAfter 1s", d)
		}
		time.Sleep(time.Second)
		if d := limiterTake(t, l, "k", lim, 1); !d.Allowed {
			t.Fatalf("after RetryAfter: %+v, want allowed", d)
		}
		if d := limiterTake(t, l, "k", lim, 1); d.Allowed {
			t.Fatalf("second request after RetryAfter: %+v, want refused", d)
		}

		// A full idle hour drains everything: the whole value is available.
		time.Sleep(time.Hour)
		for i := range 3 {
			if d := limiterTake(t, l, "k", lim, 1); !d.Allowed {
				t.Fatalf("request %d after an idle hour refused: %+v", i+1, d)
			}
		}
		if d := limiterTake(t, l, "k", lim, 1); d.Allowed {
			t.Fatal("fourth request after an idle hour allowed")
		}
		if d := limiterTake(t, l, "other", lim, 1); !d.Allowed {
			t.Fatal("another bucket was refused")
		}
	})
}

func TestMemoryLimiterChangedLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &MemoryLimiter{}
		for range 3 {
			limiterTake(t, l, "k", Limit{Value: 3, Per: time.Hour}, 1)
		}
		// Lowered below what was consumed: refused at once.
		if d := limiterTake(t, l, "k", Limit{Value: 2, Per: time.Hour}, 1); d.Allowed {
			t.Fatalf("lowered limit: %+v, want refused", d)
		}
		// Raised: exactly the difference re-opens.
		allowed := 0
		for range 5 {
			if limiterTake(t, l, "k", Limit{Value: 5, Per: time.Hour}, 1).Allowed {
				allowed++
			}
		}
		if allowed != 2 {
			t.Fatalf("after raising 3 to 5 with 3 used: %d allowed, want 2", allowed)
		}
		// A longer unit drains more slowly: 5 per day needs 24h/5 for one.
		d := limiterTake(t, l, "k", Limit{Value: 5, Per: 24 * time.Hour}, 1)
		if d.Allowed || d.RetryAfter != 24*time.Hour/5 {
			t.Fatalf("unit changed to a day: %+v, want refused with RetryAfter %v", d, 24*time.Hour/5)
		}
	})
}

// TestMemoryLimiterChangedLimitDrain: a bucket drains at the limit of its
// latest call until the next call, so a decision after a limit change is
// the same whether or not other buckets' traffic swept or evicted it
// meanwhile.
func TestMemoryLimiterChangedLimitDrain(t *testing.T) {
	perMinute := Limit{Value: 3, Per: time.Minute}
	perDay := Limit{Value: 3, Per: 24 * time.Hour}
	tests := []struct {
		name   string
		before Limit // the limit of the three requests that fill the bucket
		idle   time.Duration
		after  Limit // the changed limit of the next request
		want   LimitDecision
	}{
		{
			// Drained at 3 per minute before the change: empty.
			name: "slower unit after the bucket drained", before: perMinute, idle: 2 * time.Minute, after: perDay,
			want: LimitDecision{Allowed: true, Remaining: 2},
		},
		{
			// A minute at 3 per day drains 1/480 of a request; the
			// request at 3 per minute then needs the rest of one
			// request's 20 seconds.
			name: "faster unit while the bucket is full", before: perDay, idle: time.Minute, after: perMinute,
			want: LimitDecision{Remaining: 3 - (3 - 1.0/480), RetryAfter: time.Duration(math.Round((3 - 1.0/480 + 1 - 3) * float64(time.Minute) / 3))},
		},
	}
	for _, tt := range tests {
		for _, busy := range []bool{false, true} {
			name := tt.name + "/quiet"
			if busy {
				name = tt.name + "/other buckets busy"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					l := &MemoryLimiter{MaxBuckets: 64 * limiterShards}
					for range 3 {
						limiterTake(t, l, "k", tt.before, 1)
					}
					time.Sleep(tt.idle)
					if busy {
						// Fill k's shard past its cap, sweeping and
						// evicting whatever drained.
						s := l.shard("k")
						for i, n := 0, 0; n < 4*64; i++ {
							if key := "other-" + strconv.Itoa(i); l.shard(key) == s {
								limiterTake(t, l, key, Limit{Value: 1e6, Per: time.Hour}, 1)
								n++
							}
						}
					}
					got := limiterTake(t, l, "k", tt.after, 1)
					if diff := cmp.Diff(tt.want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
						t.Fatalf("decision after the change (-want +got):\n%s", diff)
					}
				})
			})
		}
	}
}

func TestMemoryLimiterTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &MemoryLimiter{}
		ctx := context.Background()
		lim := Limit{Value: 100, Per: time.Minute}
		if d := limiterTake(t, l, "k", lim, 0); !d.Allowed || d.Remaining != 100 {
			t.Fatalf("empty bucket: %+v, want allowed with 100 left", d)
		}
		if err := l.Charge(ctx, "k", lim, 60); err != nil {
			t.Fatal(err)
		}
		if d := limiterTake(t, l, "k", lim, 0); !d.Allowed || d.Remaining != 40 {
			t.Fatalf("60 used: %+v, want allowed with 40 left", d)
		}
		// Usage is charged past the limit; the bucket then refuses until
		// it drains below the limit.
		if err := l.Charge(ctx, "k", lim, 90); err != nil {
			t.Fatal(err)
		}
		d := limiterTake(t, l, "k", lim, 0)
		if d.Allowed || d.Remaining != -50 || d.RetryAfter != 30*time.Second {
			t.Fatalf("150 used of 100/min: %+v, want refused, -50 left, RetryAfter 30s", d)
		}
		time.Sleep(30 * time.Second)
		if d := limiterTake(t, l, "k", lim, 0); d.Allowed {
			t.Fatalf("exactly at the limit: %+v, want refused (no tokens left)", d)
		}
		time.Sleep(time.Second)
		if d := limiterTake(t, l, "k", lim, 0); !d.Allowed {
			t.Fatalf("below the limit: %+v, want allowed", d)
		}
		// A refund never goes below zero.
		if err := l.Charge(ctx, "k", lim, -1000); err != nil {
			t.Fatal(err)
		}
		if d := limiterTake(t, l, "k", lim, 1); d.Remaining != 99 {
			t.Fatalf("after a large refund: %+v, want 99 left", d)
		}
	})
}

func TestMemoryLimiterInvalidLimit(t *testing.T) {
	l := &MemoryLimiter{}
	for _, lim := range []Limit{{Value: 0, Per: time.Hour}, {Value: 1, Per: 0}, {Value: -1, Per: time.Hour}} {
		if _, err := l.Take(context.Background(), "k", lim, 1); err == nil {
			t.Errorf("Take with %+v: no error", lim)
		}
		if err := l.Charge(context.Background(), "k", lim, 1); err == nil {
			t.Errorf("Charge with %+v: no error", lim)
		}
	}
}

// TestMemoryLimiterConcurrent fires 1,000 requests from 64 goroutines at a
// limit of 100, many times over: exactly 100 are admitted each time. Fake
// time keeps the bucket from draining while the goroutines run.
func TestMemoryLimiterConcurrent(t *testing.T) {
	for round := range 20 {
		synctest.Test(t, func(t *testing.T) {
			l := &MemoryLimiter{}
			lim := Limit{Value: 100, Per: time.Minute}
			var admitted atomic.Int64
			var wg sync.WaitGroup
			next := make(chan struct{}, 1000)
			for range 1000 {
				next <- struct{}{}
			}
			close(next)
			for range 64 {
				wg.Go(func() {
					for range next {
						d, err := l.Take(context.Background(), "shared", lim, 1)
						if err != nil {
							t.Error(err)
							return
						}
						if d.Allowed {
							admitted.Add(1)
						}
					}
				})
			}
			wg.Wait()
			if n := admitted.Load(); n != 100 {
				t.Fatalf("round %d: %d of 1000 admitted, want 100", round, n)
			}
		})
	}
}

func TestMemoryLimiterBounded(t *testing.T) {
	t.Run("cap", func(t *testing.T) {
		now := time.Unix(1_700_000_000, 0)
		l := &MemoryLimiter{MaxBuckets: 1024, Now: func() time.Time { return now }}
		lim := Limit{Value: 10, Per: time.Hour}
		for i := range 50_000 {
			limiterTake(t, l, strconv.Itoa(i), lim, 1)
		}
		if n := l.len(); n > 1024 {
			t.Fatalf("%d buckets kept, want at most 1024", n)
		}
		// The newest bucket is kept and remembers its consumption.
		if d := limiterTake(t, l, "49999", lim, 1); d.Remaining != 8 {
			t.Fatalf("newest bucket: %+v, want 8 left", d)
		}
	})
	t.Run("drained buckets are swept", func(t *testing.T) {
		now := time.Unix(1_700_000_000, 0)
		l := &MemoryLimiter{Now: func() time.Time { return now }}
		lim := Limit{Value: 10, Per: time.Minute}
		const n = 64 * 256
		for i := range n {
			limiterTake(t, l, "a"+strconv.Itoa(i), lim, 1)
		}
		now = now.Add(time.Minute) // everything drained
		for i := range 2 * n {
			limiterTake(t, l, "b"+strconv.Itoa(i), lim, 1)
		}
		if got := l.len(); got > 2*n+n/4 {
			t.Fatalf("%d buckets kept after %d drained and %d live, want drained ones swept", got, n, 2*n)
		}
	})
	t.Run("zero cost keeps no bucket", func(t *testing.T) {
		l := &MemoryLimiter{}
		for i := range 100 {
			limiterTake(t, l, strconv.Itoa(i), Limit{Value: 10, Per: time.Hour}, 0)
		}
		if n := l.len(); n != 0 {
			t.Fatalf("%d buckets kept for admission checks alone, want 0", n)
		}
	})
}

// BenchmarkMemoryLimiterTake measures one admission decision.
func BenchmarkMemoryLimiterTake(b *testing.B) {
	l := &MemoryLimiter{}
	ctx := context.Background()
	lim := Limit{Value: 1e15, Per: time.Hour}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Take(ctx, "0123e4567-e89b-12d3-a456-426614174000\x006:key-01", lim, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMemoryLimiterTakeParallel measures admission decisions on many
// buckets from every CPU.
func BenchmarkMemoryLimiterTakeParallel(b *testing.B) {
	l := &MemoryLimiter{}
	ctx := context.Background()
	lim := Limit{Value: 1e15, Per: time.Hour}
	keys := make([]string, 256)
	for i := range keys {
		keys[i] = "policy\x00" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := l.Take(ctx, keys[i%len(keys)], lim, 1); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

func TestUsageScanner(t *testing.T) {
	tests := []struct {
		name  string
		sse   bool
		body  string
		want  float64
		found bool
	}{
		{name: "completion", body: `{"id":"cmpl-1","object":"text_completion","choices":[{"text":"hi","index":0}],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}`, want: 12, found: true},
		{name: "usage first", body: `{"usage": {"total_tokens": 3, "prompt_tokens": 1}, "id": "x"}`, want: 3, found: true},
		{name: "pretty", body: "{\n  \"usage\" : {\n    \"total_tokens\" : 42\n  }\n}\n", want: 42, found: true},
		{name: "usage in an array ignored", body: `{"choices":[{"usage":{"total_tokens":9}}]}`},
		{name: "usage one object down", body: `{"type":"response.completed","response":{"id":"r","usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}}`, want: 8, found: true},
		{name: "usage two objects down ignored", body: `{"a":{"b":{"usage":{"total_tokens":8}}}}`},
		{name: "usage inside usage ignored", body: `{"usage":{"details":{"usage":{"total_tokens":8}}}}`},
		{name: "total outside usage ignored", body: `{"total_tokens":7,"usage":{"prompt_tokens":1}}`, want: 1, found: true},
		{name: "prompt and completion without total", body: `{"usage":{"prompt_tokens":4,"completion_tokens":6}}`, want: 10, found: true},
		{
			name: "anthropic message",
			body: `{"id":"msg_1","type":"message","usage":{"input_tokens":10,"cache_creation_input_tokens":2,"cache_read_input_tokens":3,"output_tokens":5}}`,
			want: 20, found: true,
		},
		{
			name: "anthropic stream", sse: true,
			body: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n" +
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n" +
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":15}}\n\n" +
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
			want: 40, found: true,
		},
		{
			name: "responses api stream", sse: true,
			body: "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"usage\":null}}\n\n" +
				"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n" +
				"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"usage\":{\"input_tokens\":9,\"input_tokens_details\":{\"cached_tokens\":4},\"output_tokens\":2,\"total_tokens\":11}}}\n\n",
			want: 11, found: true,
		},
		{name: "deeper total ignored", body: `{"usage":{"details":{"total_tokens":7}}}`},
		{name: "keys in strings", body: `{"text":"\"usage\":{\"total_tokens\":5}","usage":{"total_tokens":6}}`, want: 6, found: true},
		{name: "string value", body: `{"usage":{"total_tokens":"12"}}`},
		{name: "null usage", body: `{"usage":null}`},
		{name: "negative", body: `{"usage":{"total_tokens":-4}}`},
		{name: "exponent", body: `{"usage":{"total_tokens":1.5e3}}`, want: 1500, found: true},
		{name: "top-level array", body: `[{"usage":{"total_tokens":7}}]`},
		{name: "not json", body: `<html>usage total_tokens 5</html>`},
		{
			name: "stream with final usage chunk", sse: true,
			body: "data: {\"choices\":[{\"text\":\"a\"}],\"usage\":null}\n\n" +
				": keep-alive\n\n" +
				"event: message\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":3,\"total_tokens\":5}}\n\n" +
				"data: [DONE]\n\n",
			want: 5, found: true,
		},
		{
			name: "stream CRLF and no space", sse: true,
			body: "data:{\"usage\":{\"total_tokens\":1}}\r\n\r\ndata:{\"usage\":{\"total_tokens\":21}}\r\n\r\n",
			want: 21, found: true,
		},
		{
			name: "stream data over two lines", sse: true,
			body: "data: {\"usage\":\ndata: {\"total_tokens\":17}}\n\n",
			want: 17, found: true,
		},
		{name: "stream without usage", sse: true, body: "data: {\"choices\":[]}\n\ndata: [DONE]\n\n"},
		{name: "stream ignores other fields", sse: true, body: "id: {\"usage\":{\"total_tokens\":4}}\n\n"},
		{name: "stream cut mid-event", sse: true, body: "data: {\"usage\":{\"total_tokens\":33", want: 33, found: true},
		{
			name: "bedrock converse",
			body: `{"output":{"message":{"role":"assistant","content":[{"text":"Hi"}]}},"stopReason":"end_turn","usage":{"inputTokens":30,"outputTokens":12,"totalTokens":42},"metrics":{"latencyMs":310}}`,
			want: 42, found: true,
		},
		{name: "bedrock converse without total", body: `{"usage":{"inputTokens":30,"outputTokens":12}}`, want: 42, found: true},
		{
			name: "vertex generateContent",
			body: `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":5,"totalTokenCount":13},"modelVersion":"gemini-2.0-flash"}`,
			want: 13, found: true,
		},
		{name: "vertex without total", body: `{"usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":5}}`, want: 13, found: true},
		{
			name: "vertex stream sse", sse: true,
			body: "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"H\"}]}}],\"usageMetadata\":{\"promptTokenCount\":8,\"totalTokenCount\":8}}\r\n\r\n" +
				"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"i\"}]},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":8,\"candidatesTokenCount\":9,\"totalTokenCount\":17}}\r\n\r\n",
			want: 17, found: true,
		},
		{
			name: "vertex stream json array",
			body: `[{"candidates":[{"content":{"parts":[{"text":"H"}]}}],"usageMetadata":{"promptTokenCount":8,"totalTokenCount":8}},` + "\n" +
				`{"candidates":[{"content":{"parts":[{"text":"i"}]}}],"usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":9,"totalTokenCount":17}}]`,
			want: 17, found: true,
		},
		{name: "usageMetadata two objects down ignored", body: `{"a":{"b":{"usageMetadata":{"totalTokenCount":8}}}}`},
		{name: "usageMetadata in a nested array ignored", body: `[[{"usageMetadata":{"totalTokenCount":8}}]]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Whole, and one byte at a time: the result must not depend
			// on how the body was split.
			whole := usageScanner{sse: tt.sse}
			whole.write([]byte(tt.body))
			split := usageScanner{sse: tt.sse}
			for i := range len(tt.body) {
				split.write([]byte{tt.body[i]})
			}
			for _, s := range []*usageScanner{&whole, &split} {
				got, found := s.total()
				if got != tt.want || found != tt.found {
					t.Fatalf("total = %v, %v; want %v, %v", got, found, tt.want, tt.found)
				}
			}
		})
	}
}

func FuzzUsageScanner(f *testing.F) {
	f.Add(`{"usage":{"total_tokens":12}}`, false, 3)
	f.Add("data: {\"usage\":{\"total_tokens\":5}}\n\ndata: [DONE]\n\n", true, 7)
	f.Add("data: {\"a\":[{\"b\":\"\\\"}\"}]}\r\n\r\n", true, 1)
	f.Add("data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":25,\"cache_read_input_tokens\":3}}}\n\n", true, 5)
	f.Add(`[{"usageMetadata":{"promptTokenCount":8,"totalTokenCount":8}},{"usageMetadata":{"totalTokenCount":17}}]`, false, 4)
	f.Add(`{"usage":{"inputTokens":30,"outputTokens":12,"totalTokens":42}}`, false, 2)
	f.Fuzz(func(t *testing.T, body string, sse bool, cut int) {
		whole := usageScanner{sse: sse}
		whole.write([]byte(body))
		parts := usageScanner{sse: sse}
		if cut <= 0 {
			cut = 1
		}
		for b := []byte(body); len(b) > 0; {
			n := min(cut, len(b))
			parts.write(b[:n])
			b = b[n:]
		}
		w, wok := whole.total()
		p, pok := parts.total()
		if w != p || wok != pok {
			t.Fatalf("whole: %v %v; in parts of %d: %v %v", w, wok, cut, p, pok)
		}
		if wok && !(w >= 0) {
			t.Fatalf("negative or NaN total %v", w)
		}
		if we, pe := whole.estimate(), parts.estimate(); we != pe || !(we >= 0) {
			t.Fatalf("estimate whole: %v; in parts of %d: %v", we, cut, pe)
		}
	})
}

// BenchmarkUsageScanner scans a streamed chat completion of 100 chunks and
// a final usage chunk, as a tokens policy does with every streamed answer.
func BenchmarkUsageScanner(b *testing.B) {
	var sb strings.Builder
	for range 100 {
		sb.WriteString("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"token\"},\"finish_reason\":null}],\"usage\":null}\n\n")
	}
	sb.WriteString("data: {\"id\":\"chatcmpl-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":100,\"total_tokens\":109}}\n\ndata: [DONE]\n\n")
	stream := []byte(sb.String())
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		s := usageScanner{sse: true}
		s.write(stream)
		if total, ok := s.total(); !ok || total != 109 {
			b.Fatalf("total %v, %v", total, ok)
		}
	}
}

// BenchmarkUsageScannerAnswer scans a small chat completion, as the
// request state does with every answer for its log.
func BenchmarkUsageScannerAnswer(b *testing.B) {
	answer := []byte(`{"id":"chatcmpl-mock","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hello from mock"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8,"prompt_tokens_details":{"cached_tokens":0}},"system_fingerprint":null}`)
	b.SetBytes(int64(len(answer)))
	b.ReportAllocs()
	for b.Loop() {
		var s usageScanner
		s.write(answer)
		if p, c, total, _, ok := s.counts(); !ok || p != 5 || c != 3 || total != 8 || s.answerModel() != "gpt-4o-mini" {
			b.Fatalf("counts %v %v %v %v, model %q", p, c, total, ok, s.answerModel())
		}
	}
}
