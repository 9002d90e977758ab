package messages

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzCloudRequest: a body CloudRequest takes comes out a JSON object
// without model, with anthropic_version, its other members as sent; one
// CountRequest takes keeps its model too; and WithBetas keeps a body
// valid JSON.
func FuzzCloudRequest(f *testing.F) {
	f.Add([]byte(`{"model":"claude-sonnet-4-5","stream":true,"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`), "a,b")
	f.Add([]byte(`{"model":"m","anthropic_version":"x","anthropic_beta":["y"]}`), "")
	f.Add([]byte(`[1]`), "z")
	f.Fuzz(func(t *testing.T, body []byte, beta string) {
		for _, keep := range []bool{true, false} {
			c, err := CloudRequest(body, "vertex-2023-10-16", keep)
			if err != nil {
				if _, ok := err.(*Error); !ok {
					t.Fatalf("error %T, want *Error", err)
				}
				continue
			}
			var in, out map[string]json.RawMessage
			json.Unmarshal(body, &in)
			if err := json.Unmarshal(c.Body, &out); err != nil {
				t.Fatalf("body %q is not a JSON object: %v", c.Body, err)
			}
			if _, ok := out["model"]; ok || out["anthropic_version"] == nil {
				t.Fatalf("body %s", c.Body)
			}
			if _, ok := out["stream"]; ok != (keep && in["stream"] != nil) {
				t.Fatalf("stream kept %v, want %v: %s", ok, keep, c.Body)
			}
		}
		if c, err := CountRequest(body, "vertex-2023-10-16"); err == nil {
			var in, out map[string]json.RawMessage
			json.Unmarshal(body, &in)
			if err := json.Unmarshal(c.Body, &out); err != nil || out["anthropic_version"] == nil || len(out) != len(in)+1 && in["anthropic_version"] == nil {
				t.Fatalf("count body %s of %s", c.Body, body)
			}
			for k, v := range in {
				if k != "anthropic_version" && string(out[k]) != string(v) {
					var a, b any
					json.Unmarshal(v, &a)
					json.Unmarshal(out[k], &b)
					if !reflect.DeepEqual(a, b) {
						t.Fatalf("count body member %s = %s, want %s", k, out[k], v)
					}
				}
			}
		} else if _, ok := err.(*Error); !ok {
			t.Fatalf("error %T, want *Error", err)
		}
		if b := WithBetas(body, []string{beta}); json.Valid(body) && !json.Valid(b) {
			t.Fatalf("WithBetas made %q of %q", b, body)
		}
	})
}
