package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelgateway/gateway/gatewaytest"
)

// shellWords splits a command line as a POSIX shell would, for the subset
// the demo's curl command uses: blanks between words, single quotes, and
// double quotes in which $NAME expands from env. It fails the test on
// anything else.
func shellWords(t *testing.T, line string, env map[string]string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; c {
		case ' ', '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				t.Fatalf("unterminated single quote in %q", line)
			}
			w.WriteString(line[i+1 : i+1+j])
			i += 1 + j
			inWord = true
		case '"':
			j := strings.IndexByte(line[i+1:], '"')
			if j < 0 {
				t.Fatalf("unterminated double quote in %q", line)
			}
			s := line[i+1 : i+1+j]
			if strings.ContainsAny(s, "`\\") {
				t.Fatalf("unsupported shell syntax in %q", s)
			}
			w.WriteString(os.Expand(s, func(name string) string {
				v, ok := env[name]
				if !ok {
					t.Fatalf("the command refers to $%s, which the test did not set", name)
				}
				return v
			}))
			i += 1 + j
			inWord = true
		case '\\', '$', '`', ';', '&', '|', '<', '>', '(', ')':
			t.Fatalf("unsupported shell syntax %q in %q", c, line)
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// curlRequest turns a curl command of the form curl URL [-H HEADER]...
// [-d BODY] into the request curl would send.
func curlRequest(t *testing.T, words []string) *http.Request {
	t.Helper()
	if len(words) < 2 || words[0] != "curl" {
		t.Fatalf("not a curl command: %q", words)
	}
	var url, body string
	hasBody := false
	hdr := http.Header{}
	for i := 1; i < len(words); i++ {
		switch words[i] {
		case "-H", "-d":
			if i+1 == len(words) {
				t.Fatalf("%s without a value in %q", words[i], words)
			}
			if words[i] == "-d" {
				body, hasBody = words[i+1], true
			} else {
				name, value, ok := strings.Cut(words[i+1], ":")
				if !ok {
					t.Fatalf("header %q has no colon", words[i+1])
				}
				hdr.Add(strings.TrimSpace(name), strings.TrimSpace(value))
			}
			i++
		default:
			if strings.HasPrefix(words[i], "-") || url != "" {
				t.Fatalf("unexpected curl argument %q in %q", words[i], words)
			}
			url = words[i]
		}
	}
	method := http.MethodGet
	if hasBody {
		method = http.MethodPost // what curl -d does
		if hdr.Get("Content-Type") == "" {
			hdr.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	}
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatalf("curl URL %q: %v", url, err)
	}
	req.Header = hdr
	return req
}

// TestRunDemo: with -demo the server prints a curl command that, run as
// printed, gets a chat completion from the fake provider it started.
func TestRunDemo(t *testing.T) {
	for _, tc := range []struct {
		name   string
		envKey string // GATEWAY_API_KEY
		config bool   // with -config too
	}{
		{"generated key", "", false},
		{"key from GATEWAY_API_KEY", "gw-demo-from-env", false},
		{"beside a config file", "", true},
		{"beside a config file holding GATEWAY_API_KEY", "gw-demo-in-file", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GATEWAY_API_KEY", tc.envKey)
			args := []string{"-demo"}
			if tc.config {
				cfg := filepath.Join(t.TempDir(), "gateway.json")
				data := `{"api_keys": [{"id": "key-file", "key": "gw-file-only", "workspace_id": "ws-1"},
					{"id": "key-env", "key": "${GATEWAY_API_KEY}", "workspace_id": "ws-2"}],
					"virtual_keys": [{"slug": "other", "provider": "openai", "api_key": "sk-x", "workspace_id": "ws-1"}]}`
				if tc.envKey == "" {
					data = `{"api_keys": [{"id": "key-file", "key": "gw-file-only", "workspace_id": "ws-1"}]}`
				}
				if err := os.WriteFile(cfg, []byte(data), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append(args, "-config", cfg)
			}
			r := startRun(t, args...)
			line := r.stderr.wait(t, "curl command", r.done, func(s string) bool { return strings.HasPrefix(s, "curl ") })
			if tc.envKey != "" && strings.Contains(r.stderr.String(), tc.envKey) {
				t.Errorf("the key from GATEWAY_API_KEY was printed:\n%s", r.stderr)
			}

			req := curlRequest(t, shellWords(t, line, map[string]string{"GATEWAY_API_KEY": tc.envKey}))
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body := readAll(t, res)
			var c struct {
				Object  string
				Choices []struct{ Message struct{ Content string } }
			}
			if err := json.Unmarshal([]byte(body), &c); err != nil || res.StatusCode != http.StatusOK || c.Object != "chat.completion" ||
				len(c.Choices) != 1 || !strings.HasPrefix(c.Choices[0].Message.Content, gatewaytest.CompletionText("")) {
				t.Errorf("the printed command %s got %d %s, want 200 and a chat completion", line, res.StatusCode, body)
			}
			rec := logFor(t, r.stdout, r.done, res.Header.Get("x-gateway-trace-id"))
			wantKey := map[bool]string{false: "key-default", true: "key-demo"}[tc.config]
			if tc.config && tc.envKey != "" {
				wantKey = "key-env" // the file's key is reused, not replaced
			}
			if rec.KeyID != wantKey || rec.Provider != "openai" {
				t.Errorf("log line: key %q provider %q, want %q and openai", rec.KeyID, rec.Provider, wantKey)
			}
		})
	}
}
