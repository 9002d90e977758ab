package gateway

import (
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
