package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
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

// writeJSON answers w with status and the JSON encoding of v, ended by a
// newline, with its Content-Type and Content-Length: the one way the
// gateway writes a JSON body of its own (control-plane answers, errors).
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		body, status = []byte(`{"error":{"message":"internal gateway error","type":"gateway_error","param":null,"code":"internal_error"}}`), http.StatusInternalServerError
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}
