package guardrail

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestRequestParts(t *testing.T) {
	tests := []struct {
		body string
		want []string
	}{
		{`{"model":"m","messages":[{"role":"user","content":"first"},{"role":"assistant","content":"a"},{"role":"user","content":"last \u00e9"}]}`, []string{"last é"}},
		{`{"messages":[{"role":"user","content":[{"type":"text","text":"one"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"two"}]}]}`, []string{"one", "two"}},
		{`{"messages":[{"role":"system","content":"s"}]}`, nil},
		{`{"prompt":"complete me"}`, []string{"complete me"}},
		{`{"prompt":["a","b"]}`, []string{"a", "b"}},
	}
	for _, tc := range tests {
		got, err := RequestParts([]byte(tc.body))
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("RequestParts(%s) = %q, %v, want %q", tc.body, got, err, tc.want)
		}
	}
	for _, bad := range []string{`[]`, `{`, `"x"`, ``} {
		if _, err := RequestParts([]byte(bad)); err == nil {
			t.Errorf("RequestParts(%s) accepted", bad)
		}
	}
}

func TestReplaceParts(t *testing.T) {
	body := `{"model":"m", "messages":[{"role":"user","content":[{"type":"text","text":"mail x@y.example"},{"type":"text","text":"b"}]}],"z":1}`
	out, err := ReplaceRequestParts([]byte(body), []string{"mail [EMAIL_ADDRESS] <&>", "b2"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m", "messages":[{"role":"user","content":[{"type":"text","text":"mail [EMAIL_ADDRESS] <&>"},{"type":"text","text":"b2"}]}],"z":1}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	if _, err := ReplaceRequestParts([]byte(body), []string{"one"}); err == nil {
		t.Error("a part count mismatch was accepted")
	}
	answer := `{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"hi \"there\""}},{"index":1,"message":{"role":"assistant","content":null}},{"index":2,"text":"legacy"}]}`
	parts, err := ResponseParts([]byte(answer))
	if err != nil || !slices.Equal(parts, []string{`hi "there"`, "legacy"}) {
		t.Fatalf("ResponseParts = %q, %v", parts, err)
	}
	out, err = ReplaceResponseParts([]byte(answer), []string{"A\n", "B"})
	if err != nil || !json.Valid(out) {
		t.Fatalf("ReplaceResponseParts: %s, %v", out, err)
	}
	if parts, _ = ResponseParts(out); !slices.Equal(parts, []string{"A\n", "B"}) {
		t.Errorf("after replacing: %q", parts)
	}
}
