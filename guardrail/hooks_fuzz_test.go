package guardrail

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzStreamAnswer: whatever events a provider streams, the answer
// output checks read is a JSON object ResponseTexts reads, with a choice
// for each index the deltas named.
func FuzzStreamAnswer(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: {\"choices\":[{\"index\":1,\"text\":\" there\"}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("event: x\ndata: {\"choices\":[{\"index\":-1}]}\r\n\r\ndata: {\"choices\":[{\"index\":500}]}\n"))
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\\u00e9\\n\\\"\"}}]}\n\n"))
	f.Fuzz(func(t *testing.T, events []byte) {
		answer := streamAnswer(events)
		if !json.Valid(answer) {
			t.Fatalf("not JSON: %s", answer)
		}
		if _, err := ResponseTexts(answer); err != nil {
			t.Fatalf("ResponseTexts(%s): %v", answer, err)
		}
	})
}

// FuzzActions: actions decode or are refused with an *Error naming the
// action; what decodes encodes to actions that decode the same.
func FuzzActions(f *testing.F) {
	for _, s := range []string{`{"deny":true,"async":false,"on_success":{"feedback":{"value":5,"weight":1,"metadata":""}},"on_fail":{"feedback":{"value":-5,"weight":1,"metadata":"x"}}}`,
		`{"onFail":"block","message":"no"}`, `{"on_fail":"log","on_success":"continue"}`, `{"on_fail":{"feedback":{"value":11}}}`, `null`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, e := decodeActions(data)
		if e != nil {
			if e.Param == "" || e.Code != CodeInvalidParameter {
				t.Fatalf("refusal %+v names no action", e)
			}
			return
		}
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		var back Actions
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !reflect.DeepEqual(a, back) {
			t.Fatalf("%s decodes to %+v, encodes to %s, decodes to %+v", data, a, b, back)
		}
	})
}
