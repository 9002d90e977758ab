package guardrail

import (
	"encoding/json"
	"testing"
)

func TestSchema(t *testing.T) {
	tests := []struct {
		schema, value string
		valid         bool
	}{
		{`{"type":"string"}`, `"x"`, true},
		{`{"type":"string"}`, `1`, false},
		{`{"type":["string","null"]}`, `null`, true},
		{`{"type":"integer"}`, `2`, true},
		{`{"type":"integer"}`, `2.5`, false},
		{`{"type":"number"}`, `2`, true},
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, `{"a":"x"}`, true},
		{`{"type":"object","required":["a"]}`, `{}`, false},
		{`{"properties":{"a":{"type":"string"}},"additionalProperties":false}`, `{"a":"x","b":1}`, false},
		{`{"properties":{"a":{}},"additionalProperties":{"type":"number"}}`, `{"a":"x","b":1}`, true},
		{`{"items":{"type":"number"},"minItems":1,"maxItems":2}`, `[1,2]`, true},
		{`{"items":{"type":"number"}}`, `[1,"2"]`, false},
		{`{"maxItems":2}`, `[1,2,3]`, false},
		{`{"minItems":1}`, `[]`, false},
		{`{"enum":["a",1,{"x":[1]}]}`, `{"x":[1]}`, true},
		{`{"enum":["a",1]}`, `"b"`, false},
		{`{"const":1}`, `1.0`, true},
		{`{"minLength":2,"maxLength":3}`, `"héé"`, true},
		{`{"maxLength":2}`, `"abc"`, false},
		{`{"minLength":2}`, `"a"`, false},
		{`{"pattern":"^[a-z]+$"}`, `"abc"`, true},
		{`{"pattern":"^[a-z]+$"}`, `"aBc"`, false},
		{`{"minimum":1,"maximum":2}`, `1`, true},
		{`{"exclusiveMinimum":1}`, `1`, false},
		{`{"exclusiveMaximum":1}`, `0.5`, true},
		{`{"maximum":1}`, `"not a number"`, true},
		{`{"anyOf":[{"type":"string"},{"type":"number"}]}`, `true`, false},
		{`{"anyOf":[{"type":"string"},{"type":"number"}]}`, `1`, true},
		{`{"oneOf":[{"type":"integer"},{"type":"number"}]}`, `1`, false},
		{`{"oneOf":[{"type":"integer"},{"type":"string"}]}`, `1`, true},
		{`{"allOf":[{"minimum":1},{"maximum":3}]}`, `4`, false},
		{`{"not":{"type":"null"}}`, `null`, false},
		{`false`, `1`, false},
		{`true`, `1`, true},
		{`{"title":"t","description":"d","$schema":"https://json-schema.org/draft/2020-12/schema","format":"email"}`, `"x"`, true},
	}
	for _, tc := range tests {
		s, err := CompileSchema(json.RawMessage(tc.schema))
		if err != nil {
			t.Errorf("CompileSchema(%s): %v", tc.schema, err)
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(tc.value), &v); err != nil {
			t.Fatal(err)
		}
		if errs := s.Validate(v); (len(errs) == 0) != tc.valid {
			t.Errorf("%s on %s: errors %q, want valid %v", tc.schema, tc.value, errs, tc.valid)
		}
	}
}

func TestSchemaRefused(t *testing.T) {
	for _, s := range []string{`{"$ref":"#"}`, `{"uniqueItems":true}`, `{"type":"thing"}`, `{"minLength":-1}`,
		`{"minLength":1.5}`, `{"pattern":"(?<=a)"}`, `{"anyOf":[]}`, `{"required":[1]}`, `[]`, `{"properties":{"a":3}}`, `{`} {
		if _, err := CompileSchema(json.RawMessage(s)); err == nil {
			t.Errorf("CompileSchema(%s) accepted", s)
		}
	}
}
