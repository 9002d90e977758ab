package gatewaytest_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgateway/gateway/gatewaytest"
)

func newServer(t *testing.T) *gatewaytest.Server {
	t.Helper()
	s := gatewaytest.NewServer()
	t.Cleanup(s.Close)
	return s
}

// do sends a request to the fake provider; path is relative to URL (which
// ends in /v1). Header pairs are name, value, name, value...
func do(t *testing.T, s *gatewaytest.Server, method, path, body string, header ...string) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// readJSON decodes the whole body into a generic value, failing on a status
// other than want.
func readJSON(t *testing.T, res *http.Response, want int) map[string]any {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != want {
		t.Fatalf("status = %d, want %d; body %s", res.StatusCode, want, b)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	return v
}

// sse reads server-sent events one at a time.
type sse struct{ r *bufio.Reader }

func newSSE(r io.Reader) *sse { return &sse{bufio.NewReader(r)} }

// next returns the data of the next event, or an error (io.EOF at a clean end).
func (s *sse) next() (string, error) {
	var data []string
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if err == io.EOF && line != "" {
				return "", io.ErrUnexpectedEOF
			}
			return "", err
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			if data != nil {
				return strings.Join(data, "\n"), nil
			}
			continue
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			data = append(data, d)
		}
	}
}

// all reads every remaining event until EOF or an error.
func (s *sse) all() ([]string, error) {
	var out []string
	for {
		e, err := s.next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("event %q: %v", s, err)
	}
	return v
}

// errorBody is the OpenAI error shape, all four keys present.
func errorOf(t *testing.T, res *http.Response, want int) map[string]any {
	t.Helper()
	v := readJSON(t, res, want)
	e, ok := v["error"].(map[string]any)
	if !ok {
		t.Fatalf("no error object in %v", v)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := e[k]; !ok {
			t.Errorf("error body lacks key %q: %v", k, e)
		}
	}
	return e
}

// event is one server-sent event with its name.
type event struct {
	name string
	data map[string]any
}

// namedEvents reads a whole Anthropic or Responses stream: every event must
// carry an "event:" line equal to its data's "type", and the stream must end
// cleanly without "data: [DONE]".
func namedEvents(t *testing.T, res *http.Response) []event {
	t.Helper()
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("status %d: %s", res.StatusCode, b)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out []event
	for _, chunk := range strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n") {
		name, rest, ok := strings.Cut(chunk, "\n")
		name, ok2 := strings.CutPrefix(name, "event: ")
		data, ok3 := strings.CutPrefix(rest, "data: ")
		if !ok || !ok2 || !ok3 || strings.Contains(data, "\n") {
			t.Fatalf("malformed event %q in stream %q", chunk, b)
		}
		e := event{name: name, data: decode(t, data)}
		if e.data["type"] != name {
			t.Errorf("event named %q carries type %v", name, e.data["type"])
		}
		out = append(out, e)
	}
	return out
}

func names(events []event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.name
	}
	return out
}

// anthropicErrorOf checks an Anthropic error body and returns its inner error.
func anthropicErrorOf(t *testing.T, res *http.Response, want int) map[string]any {
	t.Helper()
	v := readJSON(t, res, want)
	e, ok := v["error"].(map[string]any)
	if v["type"] != "error" || !ok || len(v) != 2 || len(e) != 2 {
		t.Fatalf("not an Anthropic error body: %v", v)
	}
	return e
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
