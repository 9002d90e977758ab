package gateway

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzWithMember: a member is added to any JSON object and the result is
// the same object with it; any other JSON value is left as it is.
func FuzzWithMember(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, ` {"a":[1,2]} ` + "\n", `[1]`, `"x"`, `{`, ``, `{"hook_results":1}`} {
		f.Add([]byte(s))
	}
	v := []byte(`{"before_request_hooks":[],"after_request_hooks":[]}`)
	f.Fuzz(func(t *testing.T, obj []byte) {
		out := withMember(obj, "hook_results", v)
		if !json.Valid(obj) {
			return // held answers are the JSON their provider declared
		}
		var in map[string]json.RawMessage
		if json.Unmarshal(obj, &in) != nil || in == nil {
			if !bytes.Equal(out, obj) {
				t.Fatalf("%q is not an object, but became %q", obj, out)
			}
			return
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%q became %q: %v", obj, out, err)
		}
		if !bytes.Equal(got["hook_results"], v) {
			t.Fatalf("%q became %q without the member", obj, out)
		}
	})
}
