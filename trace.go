package gateway

import (
	"context"
	"net/http"
	"strings"

	"github.com/modelgateway/gateway/internal/uuid"
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
func newTraceID() string { return uuid.NewV7() }
