package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
	"time"
)

// TraceIDFrom returns the request's trace id.
func TraceIDFrom(ctx context.Context) (string, bool) {
	st := stateFrom(ctx)
	if st == nil || st.traceID == "" {
		return "", false
	}
	return st.traceID, true
}

// Trace is the middleware that gives every request a trace id: the
// x-gateway-trace-id header when present (at most 128 visible ASCII
// characters, else 400), else the trace-id field of a W3C traceparent
// header, else a new time-ordered UUID (version 7). The id is echoed in the
// x-gateway-trace-id response header, errors included.
func Trace(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, st := withState(w, r)
		if err := st.trace(w, r); err != nil {
			WriteError(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (st *requestState) trace(w http.ResponseWriter, r *http.Request) error {
	if st.traceID != "" {
		return nil
	}
	id, err := traceID(r.Header)
	if err != nil {
		st.traceID = newTraceID()
		w.Header()[canonicalHeaders[HeaderTraceID]] = []string{st.traceID}
		st.log.TraceID = st.traceID
		return err
	}
	st.traceID = id
	st.log.TraceID = id
	w.Header()[canonicalHeaders[HeaderTraceID]] = []string{id}
	return nil
}

func traceID(h http.Header) (string, error) {
	if v, ok := singleHeader(h, HeaderTraceID); ok {
		if v == "" || len(v) > maxTraceIDLen || !visibleASCII(v) {
			return "", invalidHeader(HeaderTraceID, "must be 1 to 128 visible ASCII characters")
		}
		return v, nil
	} else if len(headerValues(h, HeaderTraceID)) > 1 {
		return "", invalidHeader(HeaderTraceID, "must be sent once")
	}
	if tp := h.Get("Traceparent"); tp != "" {
		if id, ok := parseTraceparent(tp); ok {
			return id, nil
		}
	}
	return newTraceID(), nil
}

// parseTraceparent returns the trace-id field of a W3C traceparent header:
// version "-" trace-id "-" parent-id "-" flags, all lower-case hex, the
// trace id not all zeros. An invalid header is ignored, as the W3C
// recommendation says.
func parseTraceparent(v string) (string, bool) {
	v = strings.TrimSpace(v)
	if len(v) < 55 || v[2] != '-' || v[35] != '-' || v[52] != '-' {
		return "", false
	}
	if v[:2] == "ff" || (v[:2] == "00" && len(v) != 55) || (len(v) > 55 && v[55] != '-') {
		return "", false
	}
	id := v[3:35]
	for _, part := range []string{v[:2], id, v[36:52], v[53:55]} {
		if !lowerHex(part) {
			return "", false
		}
	}
	if id == "00000000000000000000000000000000" || v[36:52] == "0000000000000000" {
		return "", false
	}
	return id, true
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// newTraceID returns a new trace id: a version 7 UUID, whose first 48
// bits are the Unix time in milliseconds and the other 74 random. Time
// order keeps a store's index of trace ids growing at its end, where
// random ids would land on a random page each (in SQLite, about 20 µs of
// CPU more per stored record past 200,000 records).
func newTraceID() string {
	var b [16]byte
	rand.Read(b[6:])
	ms := uint64(time.Now().UnixMilli())
	b[0], b[1], b[2], b[3], b[4], b[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	return formatUUID(&b)
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return formatUUID(&b)
}

// formatUUID returns b in the canonical form, 8-4-4-4-12 hex digits.
func formatUUID(b *[16]byte) string {
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:], b[10:])
	return string(out[:])
}
