package gatewaytest_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgateway/gateway/gatewaytest"
)

// serveFuzz sends body to path on an unstarted server and checks that the
// answer is a 200 or a 400 whose body is JSON of the path's shape.
func serveFuzz(t *testing.T, path, body string, anthropic bool) {
	s := gatewaytest.NewUnstartedServer()
	defer s.Close()
	req := httptest.NewRequest("POST", path, strings.NewReader(body))
	req.Header.Set("anthropic-version", "2023-06-01")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	switch rec.Code {
	case http.StatusOK:
		if rec.Header().Get("Content-Type") == "text/event-stream" {
			return
		}
	case http.StatusBadRequest:
	default:
		t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
	}
	var v map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("answer to %q is not JSON: %s", body, rec.Body)
	}
	if rec.Code == http.StatusBadRequest {
		if e, ok := v["error"].(map[string]any); !ok || (anthropic && v["type"] != "error") || (!anthropic && len(e) != 4) {
			t.Fatalf("error for %q has the wrong shape: %s", body, rec.Body)
		}
	}
}

func FuzzMessagesRequest(f *testing.F) {
	for _, seed := range []string{
		`{"model":"m","max_tokens":50,"messages":[{"role":"user","content":"hi get_weather"}],"tools":[` + weatherTool + `]}`,
		`{"model":"m","max_tokens":2000,"stream":true,"thinking":{"type":"enabled","budget_tokens":1024},"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"a b"}]}]}`,
		`{"model":"m","max_tokens":5,"stop_sequences":["b",""],"tool_choice":{"type":"any"},"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"r"}]}]}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"}]}]}`,
		`{`, `[]`, `null`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		serveFuzz(t, "/v1/messages", body, true)
		serveFuzz(t, "/v1/messages/count_tokens", body, true)
	})
}

func FuzzResponsesRequest(f *testing.F) {
	for _, seed := range []string{
		`{"model":"m","input":"use shell","tools":[` + shellTool + `]}`,
		`{"model":"m","stream":true,"max_output_tokens":1,"input":[{"role":"user","content":[{"type":"input_text","text":"a b"}]},{"type":"function_call","call_id":"c","name":"n","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"o"}]}`,
		`{"model":"m","input":"x","tool_choice":{"type":"function","name":"shell"},"tools":[` + shellTool + `],"store":false}`,
		`{"model":"m","input":[{"type":"reasoning","id":"rs_1","summary":[]},{"type":"item_reference","id":"x"}],"previous_response_id":"resp_1"}`,
		`{`, `[]`, `{"model":"m","input":[null]}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		serveFuzz(t, "/v1/responses", body, false)
	})
}
