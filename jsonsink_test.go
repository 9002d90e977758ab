package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// lineTime is the time of the lines the tests compare.
var lineTime = time.Date(2026, 11, 28, 1, 2, 3, 456789012, time.UTC)

// slogLine is the line SlogSink writes for rec through slog's JSON
// handler, at lineTime.
func slogLine(rec *RequestLog) string {
	var out bytes.Buffer
	h := slog.NewJSONHandler(&out, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Time(slog.TimeKey, lineTime)
		}
		return a
	}})
	SlogSink{Logger: slog.New(h)}.Log(rec)
	return out.String()
}

// jsonLine is the line JSONLineSink writes for rec, at lineTime.
func jsonLine(t testing.TB, rec *RequestLog) string {
	var out bytes.Buffer
	if err := (JSONLineSink{W: &out, Now: func() time.Time { return lineTime }}).LogBatch([]*RequestLog{rec}); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// hostileText are strings every escape of a JSON string is asked for by.
var hostileText = []string{"", "plain", "\b\f", `q"uote`, `back\slash`, "line\nbreak\r\t", "\x00\x01\x1f\x7f", "<b>&amp;</b>",
	"é 漢字 🙂", "bad\xffutf8\xc3", "sep\u2028and\u2029", "\ufffd", "/v1/chat/completions"}

// randomLog returns a record with every field JSONLineSink writes drawn
// from hostile strings, numbers of every size and empty values.
func randomLog(r *rand.Rand) *RequestLog {
	text := func() string { return hostileText[r.IntN(len(hostileText))] }
	num := func() int64 {
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return r.Int64N(1000)
		case 2:
			return -r.Int64N(1 << 40)
		}
		return r.Int64()
	}
	costs := []float64{0, 0.00012, 1e-7, 3.5e-12, 1e21, 123456789.125, 2.5, -0.75, 1e20}
	rec := &RequestLog{ID: text(), TraceID: text(), KeyID: text(), WorkspaceID: text(), Provider: text(), Method: text(),
		Path: text(), Status: int(num()), Latency: time.Duration(num()), BytesIn: num(), BytesOut: num(), Attempts: int(num()),
		VirtualKey: text(), ConfigID: text(), Model: text(), TTFB: time.Duration(num()), PromptTokens: num(),
		CompletionTokens: num(), TotalTokens: num(), CachedPromptTokens: num(), Cost: costs[r.IntN(len(costs))],
		CostUnknown: r.IntN(2) == 0, FallbackIndex: int(num()), Rescued: r.IntN(2) == 0, Query: text(),
		CacheStatus: CacheStatus(text()), ErrorCode: text(), Aborted: r.IntN(2) == 0}
	for range r.IntN(3) {
		rec.SkippedTargets = append(rec.SkippedTargets, text())
	}
	for range r.IntN(3) {
		rec.TrippedTargets = append(rec.TrippedTargets, text())
	}
	if r.IntN(2) == 0 {
		// One key: slog writes a map in no set order.
		rec.Metadata = map[string]string{text(): text()}
	}
	return rec
}

func TestJSONLineSinkWritesSlogsLine(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		rec := randomLog(r)
		if got, want := jsonLine(t, rec), slogLine(rec); got != want {
			t.Fatalf("record %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

func TestJSONLineSinkSortsMetadata(t *testing.T) {
	rec := &RequestLog{Status: 200, Metadata: map[string]string{"zeta": "1", "alpha": "2", "_user": "u1", "mid": "3"}}
	line := jsonLine(t, rec)
	if !strings.Contains(line, `"metadata":{"_user":"u1","alpha":"2","mid":"3","zeta":"1"}}`) {
		t.Errorf("metadata not sorted by key: %s", line)
	}
	var got, want map[string]any
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(slogLine(rec)), &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("line differs from slog's (-slog +sink):\n%s", diff)
	}
}

func TestJSONLineSinkNaNCost(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		rec := &RequestLog{PromptTokens: 1, Cost: f}
		if got, want := jsonLine(t, rec), slogLine(rec); got != want {
			t.Errorf("cost %v:\n got %s\nwant %s", f, got, want)
		}
	}
}

// countingWriter counts its writes, and fails them with err.
type countingWriter struct {
	bytes.Buffer
	writes int
	err    error
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.err != nil {
		return 0, w.err
	}
	return w.Buffer.Write(p)
}

func TestJSONLineSinkBatchIsOneWrite(t *testing.T) {
	var w countingWriter
	recs := []*RequestLog{{TraceID: "a"}, {TraceID: "b"}, {TraceID: "c"}}
	if err := (JSONLineSink{W: &w}).LogBatch(recs); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSuffix(w.String(), "\n"), "\n"); w.writes != 1 || len(lines) != 3 {
		t.Fatalf("%d writes of %d lines, want 1 of 3:\n%s", w.writes, len(lines), w.String())
	}
	w.err = errors.New("disk full")
	if err := (JSONLineSink{W: &w}).LogBatch(recs); !errors.Is(err, w.err) {
		t.Errorf("LogBatch = %v, want the writer's error", err)
	}
}

// TestJSONLineSinkThroughGateway: a request's line comes out of a
// gateway whose LogSink is a JSONLineSink, without the caller's secrets.
func TestJSONLineSinkThroughGateway(t *testing.T) {
	up := newCoreUpstream(t, nil)
	var out syncBuffer
	e := newCoreEnv(t, up, func(o *Options) { o.LogSink = JSONLineSink{W: &out} })
	for range 3 {
		e.do("POST", "/v1/chat/completions?key=sk-query-secret", strings.NewReader("{}"),
			append(vkHeaders, "x-gateway-trace-id: tr-line", `x-gateway-metadata: {"_user":"u1"}`, "Authorization: Bearer sk-caller-secret")...)
	}
	e.gw.Close()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d log lines, want 3:\n%s", len(lines), out.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"level": "INFO", "msg": "request", "trace_id": "tr-line", "key_id": "key-member",
		"status": float64(200), "provider": "openai", "query": "key=REDACTED", "metadata": map[string]any{"_user": "u1"}} {
		if got := rec[k]; !jsonEqual(got, want) {
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
	for _, secret := range []string{"sk-query-secret", "sk-caller-secret", "sk-stored-secret", coreKey} {
		if strings.Contains(out.String(), secret) {
			t.Errorf("log line contains the secret %q", secret)
		}
	}
}

func FuzzJSONLineSink(f *testing.F) {
	for _, s := range hostileText {
		f.Add(s, s, 0.5)
	}
	f.Fuzz(func(t *testing.T, a, b string, cost float64) {
		rec := &RequestLog{TraceID: a, Path: b, Query: a, Model: b, PromptTokens: 1, Cost: cost,
			SkippedTargets: []string{a, b}, Metadata: map[string]string{a: b}}
		if got, want := jsonLine(t, rec), slogLine(rec); got != want {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
	})
}

// BenchmarkJSONLineSink is BenchmarkSlogSink's record through
// JSONLineSink, a batch of one; compare the two.
func BenchmarkJSONLineSink(b *testing.B) {
	sink := JSONLineSink{W: io.Discard}
	rec := benchLogRecord()
	b.ReportAllocs()
	for b.Loop() {
		sink.Log(rec)
	}
}

// BenchmarkJSONLineSinkBatch writes batches of 64 records, as the log
// queue hands them over under load; reported per record.
func BenchmarkJSONLineSinkBatch(b *testing.B) {
	sink := JSONLineSink{W: io.Discard}
	batch := make([]*RequestLog, 64)
	for i := range batch {
		batch[i] = benchLogRecord()
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := sink.LogBatch(batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/record")
}
