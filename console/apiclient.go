package console

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// headerAPIKey is the header that carries a gateway API key
// (gateway.HeaderAPIKey; the console does not import the gateway, so that
// any handler speaking its API can stand behind it).
const headerAPIKey = "x-gateway-api-key"

// maxAPIAnswer bounds what the console reads of one API answer.
const maxAPIAnswer = 8 << 20

// memWriter is the http.ResponseWriter of an in-process API call: it
// keeps the status, the headers and the body in memory.
type memWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *memWriter) Header() http.Header { return w.header }

func (w *memWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *memWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.body.Len()+len(p) > maxAPIAnswer {
		return 0, errAnswerTooLarge
	}
	return w.body.Write(p)
}

// errAnswerTooLarge is what a write beyond maxAPIAnswer fails with.
var errAnswerTooLarge = &apiError{Status: http.StatusInternalServerError, Message: "the API's answer is too large to show"}

// apiError is the API's answer to a call that did not succeed, with the
// message of its OpenAI-shaped error.
type apiError struct {
	Status  int
	Message string
	Code    string
}

func (e *apiError) Error() string { return e.Message }

// call sends method path?query (path below the gateway's prefix) to the
// API in-process, as the signed-in key from the client address of the
// browser's request r, with body as its JSON body (nil: none), and
// decodes a 2xx answer into out (nil: ignored). Any other answer is an
// *apiError carrying the API's message.
func (c *console) call(r *http.Request, key, method, path string, query url.Values, body, out any) error {
	return c.callCtx(r.Context(), r.RemoteAddr, key, method, path, query, body, out)
}

func (c *console) callCtx(ctx context.Context, remote, key, method, path string, query url.Values, body, out any) error {
	var rd io.Reader = http.NoBody
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	u := &url.URL{Path: c.prefix + path, RawQuery: query.Encode()}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.RemoteAddr = remote // the audit log records the browser's address
	req.Header.Set(headerAPIKey, key)
	req.Header.Set("Accept", "application/json")
	w := &memWriter{header: make(http.Header)}
	c.api.ServeHTTP(w, req)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.status < 200 || w.status > 299 {
		return decodeAPIError(w.status, w.body.Bytes())
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(w.body.Bytes(), out); err != nil {
		return &apiError{Status: http.StatusBadGateway, Message: "the API's answer to " + method + " " + path + " could not be read: " + err.Error()}
	}
	return nil
}

// decodeAPIError reads the OpenAI-shaped error of a failed call.
func decodeAPIError(status int, body []byte) *apiError {
	var e struct {
		Error struct {
			Message string `json:"message"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	msg := http.StatusText(status)
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
	}
	return &apiError{Status: status, Message: msg, Code: e.Error.Code}
}

// statusOf returns the status of an *apiError, or 0.
func statusOf(err error) int {
	if e, ok := err.(*apiError); ok {
		return e.Status
	}
	return 0
}

// escape escapes one path segment of an API route.
func escape(s string) string { return url.PathEscape(strings.TrimSpace(s)) }
