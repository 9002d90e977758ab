package gateway

import (
	"io"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
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
	buf := make([]byte, 0, 512*len(recs))
	for _, rec := range recs {
		buf = appendLogLine(buf, rec, now())
	}
	_, err := s.W.Write(buf)
	return err
}

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
			b = appendJSONText(b, k)
			b = append(b, ':')
			b = appendJSONText(b, rec.Metadata[k])
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
	return appendJSONText(b, v)
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
		b = appendJSONString(b, v, true)
	}
	return append(b, ']')
}

// appendJSONFloat appends f as json.Marshal writes a float64; a value
// JSON cannot hold (NaN, an infinity) is written as slog writes a value it
// cannot marshal, as a string saying so.
func appendJSONFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return appendJSONText(b, "!ERROR:json: unsupported value: "+strconv.FormatFloat(f, 'g', -1, 64))
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-07 is e-7, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendJSONText appends s as a JSON string, escaped as slog's JSON
// handler escapes a string value: quotes, backslashes and control
// characters, invalid UTF-8 as U+FFFD, U+2028 and U+2029; <, > and & are
// left as they are.
func appendJSONText(b []byte, s string) []byte { return appendJSONString(b, s, false) }

// appendJSONString appends s as appendJSONText does, or, marshalled,
// as encoding/json without HTML escaping writes it (slog's JSON handler
// marshals values that are not strings, such as a list of them): the
// same but for \b and \f.
func appendJSONString(b []byte, s string, marshalled bool) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b', '\f':
				switch {
				case !marshalled:
					b = append(b, '\\', 'u', '0', '0', '0', hex[c])
				case c == '\b':
					b = append(b, '\\', 'b')
				default:
					b = append(b, '\\', 'f')
				}
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
