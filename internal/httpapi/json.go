package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// WriteJSON answers w with status and the JSON encoding of v, ended by a
// newline, with its Content-Type and Content-Length: the one way the
// gateway and its products write a JSON body of their own (control-plane
// answers, errors). A v that cannot be encoded is answered as a 500
// internal_error in the gateway's error shape.
func WriteJSON(w http.ResponseWriter, status int, v any) {
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
