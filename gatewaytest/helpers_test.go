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
