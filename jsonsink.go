package gateway

import (
	"io"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/modelgateway/gateway/internal/wire"
)

// JSONLineSink writes each request log as one line of JSON to W: the line
// SlogSink writes through slog.NewJSONHandler (the time, "level":"INFO",
// "msg":"request", then the record's fields in the same order and
// encoding), with the metadata's keys sorted. It is a BatchLogSink: the
// lines of a batch go to W in one Write, so that a busy gateway pays one
// system call per batch rather than one per request, and it encodes
// without reflection. W is written from the log queue's one goroutine;
// a W shared with other writers must be safe for concurrent use.
type JSONLineSink struct {
	W io.Writer

	// Now returns the time of a line; nil means time.Now. The time is
	// when the line is written, as slog's is, not the request's (the
	// record's own time is not on the line).
	Now func() time.Time
}

// Log implements LogSink.
func (s JSONLineSink) Log(rec *RequestLog) { s.LogBatch([]*RequestLog{rec}) }

// LogBatch implements BatchLogSink: it returns W's error.
func (s JSONLineSink) LogBatch(recs []*RequestLog) error {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	bp := lineBuffers.Get().(*[]byte)
	buf := (*bp)[:0]
	for _, rec := range recs {
		buf = appendLogLine(buf, rec, now())
	}
	_, err := s.W.Write(buf)
	if cap(buf) <= maxLineBuffer {
		*bp = buf
		lineBuffers.Put(bp)
	}
	return err
}

// lineBuffers are the buffers JSONLineSink writes batches from, so that a
// busy gateway does not allocate one a batch; one that grew past
// maxLineBuffer (a batch of thousands of lines) is left to the collector.
var lineBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxLineBuffer = 1 << 20

// appendLogLine appends rec's line, with time t, and a newline.
func appendLogLine(b []byte, rec *RequestLog, t time.Time) []byte {
	b = append(b, `{"time":"`...)
	b = t.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"INFO","msg":"request"`...)
	if rec.ID != "" {
		b = appendTextField(b, "id", rec.ID)
	}
	b = appendTextField(b, "trace_id", rec.TraceID)
	b = appendTextField(b, "key_id", rec.KeyID)
	b = appendTextField(b, "workspace_id", rec.WorkspaceID)
	b = appendTextField(b, "provider", rec.Provider)
	b = appendTextField(b, "method", rec.Method)
	b = appendTextField(b, "path", rec.Path)
	b = appendIntField(b, "status", int64(rec.Status))
	b = appendIntField(b, "latency", int64(rec.Latency))
	b = appendIntField(b, "bytes_in", rec.BytesIn)
	b = appendIntField(b, "bytes_out", rec.BytesOut)
	b = appendIntField(b, "attempts", int64(rec.Attempts))
	if rec.VirtualKey != "" {
		b = appendTextField(b, "virtual_key", rec.VirtualKey)
	}
	if rec.ConfigID != "" {
		b = appendTextField(b, "config_id", rec.ConfigID)
	}
	if rec.Model != "" {
		b = appendTextField(b, "model", rec.Model)
	}
	if rec.TTFB > 0 {
		b = appendIntField(b, "ttfb", int64(rec.TTFB))
	}
	if rec.PromptTokens != 0 || rec.CompletionTokens != 0 || rec.TotalTokens != 0 {
		b = appendIntField(b, "prompt_tokens", rec.PromptTokens)
		b = appendIntField(b, "completion_tokens", rec.CompletionTokens)
		b = appendIntField(b, "total_tokens", rec.TotalTokens)
		if rec.CachedPromptTokens != 0 {
			b = appendIntField(b, "cached_prompt_tokens", rec.CachedPromptTokens)
		}
		b = append(b, `,"cost":`...)
		b = appendJSONFloat(b, rec.Cost)
	}
	if rec.CostUnknown {
		b = append(b, `,"cost_unknown":true`...)
	}
	if rec.FallbackIndex != 0 {
		b = appendIntField(b, "fallback_index", int64(rec.FallbackIndex))
	}
	if rec.Rescued {
		b = append(b, `,"rescued":true`...)
	}
	if rec.Query != "" {
		b = appendTextField(b, "query", rec.Query)
	}
	if rec.CacheStatus != "" {
		b = appendTextField(b, "cache_status", string(rec.CacheStatus))
	}
	if rec.ErrorCode != "" {
		b = appendTextField(b, "error_code", rec.ErrorCode)
	}
	if rec.Aborted {
		b = append(b, `,"aborted":true`...)
	}
	b = appendTextList(b, "skipped_targets", rec.SkippedTargets)
	b = appendTextList(b, "tripped_targets", rec.TrippedTargets)
	if len(rec.Metadata) > 0 {
		keys := make([]string, 0, len(rec.Metadata))
		for k := range rec.Metadata {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, `,"metadata":{`...)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = wire.AppendText(b, k)
			b = append(b, ':')
			b = wire.AppendText(b, rec.Metadata[k])
		}
		b = append(b, '}')
	}
	return append(b, "}\n"...)
}

// appendTextField appends ,"name":"v".
func appendTextField(b []byte, name, v string) []byte {
	b = append(b, `,"`...)
	b = append(b, name...)
	b = append(b, `":`...)
	return wire.AppendText(b, v)
}

// appendIntField appends ,"name":v.
func appendIntField(b []byte, name string, v int64) []byte {
	b = append(b, `,"`...)
	b = append(b, name...)
	b = append(b, `":`...)
	return strconv.AppendInt(b, v, 10)
}

// appendTextList appends ,"name":[…] for a list that is not empty.
func appendTextList(b []byte, name string, vs []string) []byte {
	if len(vs) == 0 {
		return b
	}
	b = append(b, `,"`...)
	b = append(b, name...)
	b = append(b, `":[`...)
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = wire.AppendUnescaped(b, v)
	}
	return append(b, ']')
}

// appendJSONFloat appends f as json.Marshal writes a float64; a value
// JSON cannot hold (NaN, an infinity) as slog writes a value it cannot
// marshal, a string saying so.
func appendJSONFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return wire.AppendText(b, "!ERROR:json: unsupported value: "+strconv.FormatFloat(f, 'g', -1, 64))
	}
	return wire.AppendFloat(b, f)
}
