package messages

import "testing"

func TestErrorType(t *testing.T) {
	for _, tc := range []struct {
		status    int
		typ, code string
		want      string
	}{
		{400, "invalid_request_error", "unsupported_parameter", "invalid_request_error"},
		{401, "invalid_request_error", "invalid_api_key", "authentication_error"},
		{402, "", "", "billing_error"},
		{403, "permission_error", "permission_denied", "permission_error"},
		{404, "not_found_error", "", "not_found_error"},
		{408, "timeout_error", "timeout", "timeout_error"},
		{409, "invalid_request_error", "conflict", "invalid_request_error"},
		{412, "usage_limit_exceeded", "budget_exhausted", "billing_error"},
		{413, "invalid_request_error", "payload_too_large", "request_too_large"},
		{422, "", "", "invalid_request_error"},
		{429, "rate_limit_error", "rate_limit_exceeded", "rate_limit_error"},
		{429, "insufficient_quota", "insufficient_quota", "billing_error"},
		{446, "guardrail_error", "", "invalid_request_error"},
		{500, "gateway_error", "internal_error", "api_error"},
		{502, "gateway_error", "upstream_unreachable", "api_error"},
		{503, "", "", "overloaded_error"},
		{504, "", "", "timeout_error"},
		{529, "", "", "overloaded_error"},
		{0, "rate_limit_error", "", "rate_limit_error"},
		{0, "server_error", "", "api_error"},
	} {
		if got := ErrorType(tc.status, tc.typ, tc.code); got != tc.want {
			t.Errorf("ErrorType(%d, %q, %q) = %q, want %q", tc.status, tc.typ, tc.code, got, tc.want)
		}
	}
}

func TestErrorBody(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  []byte
		want string
	}{
		{"param named", ErrorBody(400, "invalid_request_error", "unsupported_parameter", "messages[1].content[0].type", "document blocks have no equivalent"),
			`{"type":"error","error":{"type":"invalid_request_error","message":"messages[1].content[0].type: document blocks have no equivalent"}}`},
		{"param already in message", ErrorBody(401, "invalid_request_error", "missing_api_key", "x-gateway-api-key", "x-gateway-api-key header is required"),
			`{"type":"error","error":{"type":"authentication_error","message":"x-gateway-api-key header is required"}}`},
		{"no message", ErrorBody(529, "", "", "", ""),
			`{"type":"error","error":{"type":"overloaded_error","message":"529"}}`},
		{"from chat", ErrorFromChat(429, []byte(`{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)),
			`{"type":"error","error":{"type":"rate_limit_error","message":"Rate limit reached"}}`},
		{"from a body that is not OpenAI's", ErrorFromChat(502, []byte(`<html>bad gateway</html>`)),
			`{"type":"error","error":{"type":"api_error","message":"502 Bad Gateway"}}`},
	} {
		if string(tc.got) != tc.want {
			t.Errorf("%s:\ngot  %s\nwant %s", tc.name, tc.got, tc.want)
		}
	}
}
