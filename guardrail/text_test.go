package guardrail

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestRequestTexts(t *testing.T) {
	tests := []struct {
		body string
		want []string
	}{
		{`{"model":"m","messages":[{"role":"user","content":"first"},{"role":"assistant","content":"a"},{"role":"user","content":"last \u00e9"}]}`, []string{"last é"}},
		{`{"messages":[{"role":"user","content":[{"type":"text","text":"one"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"two"}]}]}`, []string{"one", "two"}},
		{`{"messages":[{"role":"system","content":"s"}]}`, []string{}},
		{`{"messages":[{"role":"\u0075ser","content":"escaped role"}]}`, []string{"escaped role"}},
		{`{"prompt":"complete me"}`, []string{"complete me"}},
		{`{"prompt":["a","b"]}`, []string{"a", "b"}},
	}
	for _, tc := range tests {
		got, err := RequestTexts([]byte(tc.body))
		if err != nil || !slices.Equal(got.Parts, tc.want) {
			t.Errorf("RequestTexts(%s) = %q, %v, want %q", tc.body, got, err, tc.want)
		}
	}
	for _, bad := range []string{`[]`, `{`, `"x"`, ``} {
		if _, err := RequestTexts([]byte(bad)); err == nil {
			t.Errorf("RequestTexts(%s) accepted", bad)
		}
	}
}

func TestTextsReplace(t *testing.T) {
	body := `{"model":"m", "messages":[{"role":"user","content":[{"type":"text","text":"mail x@y.example"},{"type":"text","text":"b"}]}],"z":1}`
	texts, err := RequestTexts([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	out, err := texts.Replace([]string{"mail [EMAIL_ADDRESS] <&>", "b2"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m", "messages":[{"role":"user","content":[{"type":"text","text":"mail [EMAIL_ADDRESS] <&>"},{"type":"text","text":"b2"}]}],"z":1}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	if _, err := texts.Replace([]string{"one"}); err == nil {
		t.Error("a part count mismatch was accepted")
	}
	answer := `{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"hi \"there\""}},{"index":1,"message":{"role":"assistant","content":null}},{"index":2,"text":"legacy"}]}`
	rt, err := ResponseTexts([]byte(answer))
	if err != nil || !slices.Equal(rt.Parts, []string{`hi "there"`, "legacy"}) {
		t.Fatalf("ResponseTexts = %+v, %v", rt, err)
	}
	out, err = rt.Replace([]string{"A\n", "B"})
	if err != nil || !json.Valid(out) {
		t.Fatalf("Replace: %s, %v", out, err)
	}
	if rt, _ = ResponseTexts(out); !slices.Equal(rt.Parts, []string{"A\n", "B"}) {
		t.Errorf("after replacing: %q", rt.Parts)
	}
}
