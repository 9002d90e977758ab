package gateway

import (
	"net/http"
	"strings"
	"testing"
)

// TestReviewInlineConfigTrailingGarbage: an inline config followed by
// anything but white space is invalid JSON, refused before any provider is
// called.
func TestReviewInlineConfigTrailingGarbage(t *testing.T) {
	a := newFakeUp(t, "a")
	e := routeEnv(t, nil, a)
	for _, cfg := range []string{`{"virtual_key":"a"}}`, `{"virtual_key":"a"} x`, `{"virtual_key":"a"}]`} {
		res := e.do("POST", "/v1/chat/completions", strings.NewReader(`{}`),
			"x-gateway-api-key: "+coreKey, "content-type: application/json", "x-gateway-config: "+cfg)
		eb := decodeError(t, res)
		if res.StatusCode != http.StatusBadRequest || deref(eb.Error.Code) != CodeInvalidConfig {
			t.Errorf("config %s: got %d %+v, want 400 invalid_config", cfg, res.StatusCode, eb.Error)
		}
	}
	if n := a.calls.Load(); n != 0 {
		t.Errorf("%d upstream calls, want none", n)
	}
	if _, err := ParseConfig([]byte("{\"virtual_key\":\"a\"}\n\t ")); err != nil {
		t.Errorf("trailing white space: %v", err)
	}
}
