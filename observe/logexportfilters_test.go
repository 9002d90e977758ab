package observe_test

import (
	"io"
	"strings"
	"testing"

	"github.com/modelgateway/gateway"
)

func TestLogExportBadInput(t *testing.T) {
	e := newExportsEnv(t, nil)
	id, _ := e.createExport(coreAdminKey, map[string]any{"filters": map[string]any{}, "requested_data": []string{"id"}})
	for _, c := range []struct {
		name, body, param string
		status            int
	}{
		{"no filters", `{"requested_data":["id"]}`, "filters", 400},
		{"null filters", `{"filters":null,"requested_data":["id"]}`, "filters", 400},
		{"filters not an object", `{"filters":[],"requested_data":["id"]}`, "filters", 400},
		{"no requested_data", `{"filters":{}}`, "requested_data", 400},
		{"empty requested_data", `{"filters":{},"requested_data":[]}`, "requested_data", 400},
		{"requested_data not strings", `{"filters":{},"requested_data":[1]}`, "requested_data", 400},
		{"unknown field", `{"filters":{},"requested_data":["id","password"]}`, "requested_data[1]", 400},
		{"object is not a field", `{"filters":{},"requested_data":["object"]}`, "requested_data[0]", 400},
		{"field twice", `{"filters":{},"requested_data":["id","id"]}`, "requested_data[1]", 400},
		{"unknown filter", `{"filters":{"colour":"red"},"requested_data":["id"]}`, "filters.colour", 400},
		{"bad date", `{"filters":{"time_of_generation_min":"yesterday"},"requested_data":["id"]}`, "filters.time_of_generation_min", 400},
		{"bad status", `{"filters":{"status_code":"20x"},"requested_data":["id"]}`, "filters.status_code", 400},
		{"status out of range", `{"filters":{"status_code":700},"requested_data":["id"]}`, "filters.status_code", 400},
		{"metadata not an object", `{"filters":{"metadata":"team"},"requested_data":["id"]}`, "filters.metadata", 400},
		{"metadata not strings", `{"filters":{"metadata":{"n":1}},"requested_data":["id"]}`, "filters.metadata", 400},
		{"negative tokens", `{"filters":{"prompt_token_min":-1},"requested_data":["id"]}`, "filters.prompt_token_min", 400},
		{"fractional tokens", `{"filters":{"total_units_max":1.5},"requested_data":["id"]}`, "filters.total_units_max", 400},
		{"tokens as a bool", `{"filters":{"total_units_max":true},"requested_data":["id"]}`, "filters.total_units_max", 400},
		{"negative cost", `{"filters":{"cost_min":"-3"},"requested_data":["id"]}`, "filters.cost_min", 400},
		{"bad model pair", `{"filters":{"ai_org_model":"gpt-4o"},"requested_data":["id"]}`, "filters.ai_org_model", 400},
		{"empty ai_model", `{"filters":{"ai_model":","},"requested_data":["id"]}`, "filters.ai_model", 400},
		{"page_size zero", `{"filters":{"page_size":0},"requested_data":["id"]}`, "filters.page_size", 400},
		{"page_size too big", `{"filters":{"page_size":50001},"requested_data":["id"]}`, "filters.page_size", 400},
		{"negative page", `{"filters":{"current_page":-1},"requested_data":["id"]}`, "filters.current_page", 400},
		{"page too far", `{"filters":{"current_page":100},"requested_data":["id"]}`, "filters.current_page", 400},
		{"empty workspace", `{"workspace_id":"","filters":{},"requested_data":["id"]}`, "workspace_id", 400},
		{"unknown body field", `{"filters":{},"requested_data":["id"],"format":"csv"}`, "format", 400},
		{"not JSON", `{"filters":`, "", 400},
		{"other workspace", `{"workspace_id":"ws-2","filters":{},"requested_data":["id"]}`, "workspace_id", 403},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, r := range []struct{ method, path string }{{"POST", "/v1/logs/exports"}, {"PUT", "/v1/logs/exports/" + id}} {
				if r.method == "PUT" && c.param == "requested_data" && !strings.Contains(c.body, "requested_data") {
					continue // a PUT may leave requested_data as it is
				}
				res := e.do(r.method, r.path, strings.NewReader(c.body), gateway.HeaderAPIKey+": "+coreAdminKey)
				if res.StatusCode != c.status {
					b, _ := io.ReadAll(res.Body)
					t.Fatalf("%s: %d %s, want %d", r.method, res.StatusCode, b, c.status)
				}
				eb := decodeError(t, res)
				if got := eb.Error.Param; c.param != "" && (got == nil || *got != c.param) {
					t.Errorf("%s: param %v, want %q (%s)", r.method, got, c.param, eb.Error.Message)
				}
			}
		})
	}
}
