package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"testing"
)

// FuzzConditions parses random configs and matches their conditions
// against random bodies and metadata: no panic; every config accepted
// keeps the bounds of the trust model (32 tests of a field, 1,024 $regex
// instructions, 10 upstream attempts), which bound the work of matching;
// matching stops only with a 400 naming a field or when the caller left;
// and the body fields conditions read are those encoding/json decodes.
func FuzzConditions(f *testing.F) {
	for _, s := range []struct{ cfg, body, md string }{
		{`{"strategy":{"mode":"conditional","conditions":[{"query":{"params.model":{"$regex":"^gpt-"}},"then":"a"}],"default":"b"},"targets":[{"name":"a"},{"name":"b"}]}`,
			`{"model":"gpt-4o","n":2}`, ``},
		{`{"strategy":{"mode":"conditional","conditions":[{"query":{"$or":[{"metadata.u":{"$regex":"(?:a?){40}b"}},{"params.n":{"$gte":2,"$lt":5}}]},"then":"a"}]},"targets":[{"name":"a"}]}`,
			`{"n":3,"n":7,"m\u006fdel":"x"}`, `{"u":"aaaa"}`},
		{`{"strategy":{"mode":"conditional","conditions":[{"query":{"params.messages":{"$in":[[{"role":"user"}],"x"]},"params.t":{"$ne":null}},"then":"a"}]},"targets":[{"name":"a"}]}`,
			`{"messages":[{"role":"user"}],"t":true,"\xff":1}`, `{"a":"1"}`},
		{`{"strategy":{"mode":"conditional","conditions":[{"query":{"params.user":{"$regex":"a+"}},"then":"a"}]},"targets":[{"name":"a"}]}`,
			`{"user":"` + string(make([]byte, 0)) + `aaaa"}`, ``},
		{`{"strategy":{"mode":"fallback"},"targets":[{"retry":{"attempts":4}},{"retry":{"attempts":4}}]}`, `[1]`, ``},
	} {
		f.Add([]byte(s.cfg), []byte(s.body), s.md)
	}
	f.Fuzz(func(t *testing.T, cfg, body []byte, md string) {
		c, err := ParseConfig(cfg)
		if err != nil {
			return
		}
		if n, err := c.attempts("", 0); err != nil || n > maxAttempts {
			t.Fatalf("an accepted config makes up to %d attempts (%v)", n, err)
		}
		var tests, insts int
		var conds []Condition
		var walk func(c *Config)
		walk = func(c *Config) {
			if c.Strategy != nil {
				conds = append(conds, c.Strategy.Conditions...)
			}
			for _, t := range c.Targets {
				walk(t)
			}
		}
		walk(c)
		for _, cond := range conds {
			countTests(cond.match, &tests, &insts)
		}
		if tests > maxConditions || insts > maxRegexInsts {
			t.Fatalf("an accepted config holds %d tests and %d $regex instructions", tests, insts)
		}
		metadata, err := parseMetadata(md)
		if err != nil {
			metadata = nil
		}

		in := &matchInput{ctx: t.Context(), metadata: metadata, body: body}
		for _, cond := range conds {
			cond.match.match(in)
			if in.err != nil {
				var ge *Error
				if !errors.As(in.err, &ge) || ge.Status != http.StatusBadRequest || ge.Code != CodeInvalidValue || ge.Param == "" {
					t.Fatalf("matching stopped with %v, want a 400 invalid_value naming a field", in.err)
				}
				break
			}
		}

		var whole map[string]any
		full := json.Unmarshal(body, &whole) == nil
		in = &matchInput{ctx: t.Context(), body: body}
		for k, want := range whole {
			got, ok := in.param(k)
			if !ok || !reflect.DeepEqual(got, want) {
				t.Fatalf("params.%s = %#v, %v; encoding/json decodes %#v", k, got, ok, want)
			}
		}
		if !full || whole == nil {
			for _, k := range []string{"model", "n", "user", ""} {
				if v, ok := in.param(k); ok {
					t.Fatalf("params.%s = %#v in a body that is not a JSON object", k, v)
				}
			}
		}

		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		in = &matchInput{ctx: ctx, metadata: metadata, body: body}
		for _, cond := range conds {
			if cond.match.match(in) || !errors.Is(in.err, context.Canceled) {
				t.Fatalf("a condition matched after the caller left (err %v)", in.err)
			}
		}
	})
}

// countTests adds the field tests of m, and the instructions of their
// $regex programs, to tests and insts.
func countTests(m matcher, tests, insts *int) {
	switch x := m.(type) {
	case allOf:
		for _, s := range x {
			countTests(s, tests, insts)
		}
	case anyOf:
		for _, s := range x {
			countTests(s, tests, insts)
		}
	case *fieldTest:
		*tests++
		if x.re != nil {
			*insts += regexInsts(x.re.String())
		}
	}
}
