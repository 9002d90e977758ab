package gateway

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

func TestErrorMapping(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		status int
		typ    string
		code   string
	}{
		{"gateway error", badRequest(CodeInvalidConfig, "x", "bad"), 400, TypeInvalidRequest, CodeInvalidConfig},
		{"wrapped gateway error", errors.Join(errors.New("ctx"), badRequest(CodeUnknownProvider, "x", "bad")), 400, TypeInvalidRequest, CodeUnknownProvider},
		{"timeout", errTimeout{1500e6}, 408, TypeTimeout, CodeTimeout},
		{"unreachable", errors.Join(ErrUpstreamUnreachable, errors.New("dial tcp 10.0.0.1:443: refused")), 502, TypeGateway, CodeUpstreamUnreachable},
		{"blocked address", &blockedAddrError{host: "x", addr: mustAddr("10.0.0.1")}, 400, TypeInvalidRequest, CodeInvalidCustomHost},
		{"anything else", errors.New("store down at 10.0.0.9"), 500, TypeGateway, CodeInternal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := errorFor(tc.err)
			if e.Status != tc.status || e.Type != tc.typ || e.Code != tc.code {
				t.Errorf("errorFor = %d %s %s; want %d %s %s", e.Status, e.Type, e.Code, tc.status, tc.typ, tc.code)
			}
			if strings.Contains(e.Message, "10.0.0") {
				t.Errorf("message leaks an internal address: %s", e.Message)
			}
		})
	}
	if got := errorFor(errTimeout{1500e6}).Message; got != "Request exceeded the timeout sent in the request: 1500ms" {
		t.Errorf("timeout message = %q", got)
	}
}

// TestConflictAnswers409: a store's ErrConflict is the 409 conflict.
func TestConflictAnswers409(t *testing.T) {
	if e := errorFor(ErrConflict); e.Status != http.StatusConflict || e.Code != CodeConflict {
		t.Errorf("ErrConflict answers %d %s, want 409 conflict", e.Status, e.Code)
	}
}
