package gateway

import (
	"github.com/modelgateway/gateway/internal/httpapi"
	"io"
	"net/http"
)

// readBody reads the whole request body, at most limit bytes; a longer
// body is an *http.MaxBytesError, which errorFor maps to 413.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return []byte{}, nil
	}
	if r.ContentLength > limit {
		return nil, &http.MaxBytesError{Limit: limit}
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
}

// writeJSON answers w with status and the JSON encoding of v (see
// httpapi.WriteJSON).
func writeJSON(w http.ResponseWriter, status int, v any) { httpapi.WriteJSON(w, status, v) }

// readAll reads r to its end, at most limit bytes. A declared length n
// (-1: unknown) sizes the buffer, so that a body of known length is read
// into one allocation.
func readAll(r io.Reader, n, limit int64) ([]byte, error) {
	if n < 0 || n >= limit {
		return io.ReadAll(io.LimitReader(r, limit))
	}
	b := make([]byte, 0, n+1) // +1: room to see the end without growing
	for {
		m, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+m]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			// Longer than declared (a body that lies): read the rest the
			// general way, within the limit.
			rest, err := io.ReadAll(io.LimitReader(r, limit-int64(len(b))))
			return append(b, rest...), err
		}
	}
}
