package guardrail

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"unicode/utf8"
)

// Schema is a compiled JSON Schema of the subset the jsonSchema check
// takes: type, properties, required, additionalProperties, items, enum,
// const, minLength, maxLength, pattern, minItems, maxItems, minimum,
// maximum, exclusiveMinimum, exclusiveMaximum, anyOf, oneOf, allOf and
// not; the annotations title, description, default, examples, format,
// $schema, $id and $comment are ignored. Any other keyword ($ref,
// patternProperties, uniqueItems, multipleOf, if/then/else, …) is refused
// when compiling, so a schema is never half applied. A Schema is
// immutable and safe for concurrent use.
type Schema struct {
	always    *bool // the schema true (always) or false (never)
	types     []string
	props     map[string]*Schema
	propOrder []string
	required  []string
	addl      *Schema
	items     *Schema
	enum      []any
	hasConst  bool
	constV    any
	minLen    int
	maxLen    int // -1: none
	pattern   *regexp.Regexp
	minItems  int
	maxItems  int // -1: none
	min, max  *float64
	xmin      *float64
	xmax      *float64
	anyOf     []*Schema
	oneOf     []*Schema
	allOf     []*Schema
	not       *Schema
}

// maxSchemaDepth bounds how deeply a schema nests.
const maxSchemaDepth = 64

var annotations = map[string]bool{"title": true, "description": true, "default": true, "examples": true,
	"format": true, "$schema": true, "$id": true, "$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true}

var schemaTypes = []string{"object", "array", "string", "number", "integer", "boolean", "null"}

// CompileSchema compiles a JSON Schema. An unsupported keyword or a bad
// value is an error naming its place in the schema ("properties.age.minimum").
func CompileSchema(data json.RawMessage) (*Schema, error) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, &schemaError{"", "the schema is not valid JSON"}
	}
	return compileSchema(v, "", 0)
}

type schemaError struct{ at, msg string }

func (e *schemaError) Error() string {
	if e.at == "" {
		return e.msg
	}
	return e.at + ": " + e.msg
}

func join(at, k string) string {
	if at == "" {
		return k
	}
	return at + "." + k
}

func compileSchema(v any, at string, depth int) (*Schema, error) {
	if depth > maxSchemaDepth {
		return nil, &schemaError{at, "the schema nests too deeply"}
	}
	if b, ok := v.(bool); ok {
		return &Schema{always: &b}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &schemaError{at, "a schema must be an object or a boolean"}
	}
	s := &Schema{maxLen: -1, maxItems: -1}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	bad := func(k, msg string) error { return &schemaError{join(at, k), msg} }
	sub := func(k string, x any) (*Schema, error) { return compileSchema(x, join(at, k), depth+1) }
	subs := func(k string, x any) ([]*Schema, error) {
		l, ok := x.([]any)
		if !ok || len(l) == 0 {
			return nil, bad(k, "must be a non-empty array of schemas")
		}
		out := make([]*Schema, len(l))
		for i, e := range l {
			var err error
			if out[i], err = sub(k+"["+strconv.Itoa(i)+"]", e); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	count := func(k string, x any) (int, error) {
		f, ok := x.(float64)
		if !ok || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
			return 0, bad(k, "must be a non-negative integer")
		}
		return int(f), nil
	}
	number := func(k string, x any) (*float64, error) {
		f, ok := x.(float64)
		if !ok {
			return nil, bad(k, "must be a number")
		}
		return &f, nil
	}
	var err error
	for _, k := range keys {
		x := m[k]
		switch k {
		case "type":
			switch t := x.(type) {
			case string:
				s.types = []string{t}
			case []any:
				for _, e := range t {
					n, _ := e.(string)
					s.types = append(s.types, n)
				}
			}
			if len(s.types) == 0 {
				return nil, bad(k, "must be a type name or an array of them")
			}
			for _, t := range s.types {
				if !slices.Contains(schemaTypes, t) {
					return nil, bad(k, "names an unknown type "+quote(t))
				}
			}
		case "properties":
			pm, ok := x.(map[string]any)
			if !ok {
				return nil, bad(k, "must be an object of schemas")
			}
			s.props = make(map[string]*Schema, len(pm))
			for name, ps := range pm {
				if s.props[name], err = compileSchema(ps, join(join(at, k), name), depth+1); err != nil {
					return nil, err
				}
				s.propOrder = append(s.propOrder, name)
			}
			sort.Strings(s.propOrder)
		case "required":
			l, ok := x.([]any)
			if !ok {
				return nil, bad(k, "must be an array of names")
			}
			for _, e := range l {
				n, ok := e.(string)
				if !ok {
					return nil, bad(k, "must be an array of names")
				}
				s.required = append(s.required, n)
			}
		case "additionalProperties":
			s.addl, err = sub(k, x)
		case "items":
			s.items, err = sub(k, x)
		case "not":
			s.not, err = sub(k, x)
		case "enum":
			l, ok := x.([]any)
			if !ok {
				return nil, bad(k, "must be an array")
			}
			s.enum = l
		case "const":
			s.hasConst, s.constV = true, x
		case "minLength":
			s.minLen, err = count(k, x)
		case "maxLength":
			s.maxLen, err = count(k, x)
		case "minItems":
			s.minItems, err = count(k, x)
		case "maxItems":
			s.maxItems, err = count(k, x)
		case "minimum":
			s.min, err = number(k, x)
		case "maximum":
			s.max, err = number(k, x)
		case "exclusiveMinimum":
			s.xmin, err = number(k, x)
		case "exclusiveMaximum":
			s.xmax, err = number(k, x)
		case "pattern":
			p, ok := x.(string)
			if !ok || len(p) > maxRule {
				return nil, bad(k, "must be a regular expression of at most 4096 bytes")
			}
			if s.pattern, err = regexp.Compile(p); err != nil {
				return nil, bad(k, "is not a regular expression this gateway takes (RE2 syntax)")
			}
		case "anyOf":
			s.anyOf, err = subs(k, x)
		case "oneOf":
			s.oneOf, err = subs(k, x)
		case "allOf":
			s.allOf, err = subs(k, x)
		default:
			if !annotations[k] {
				return nil, bad(k, "is not a supported JSON Schema keyword")
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Validate returns where and how v, a value as encoding/json decodes
// into an any, breaks the schema; none when it conforms. At most a few
// problems are reported.
func (s *Schema) Validate(v any) []string {
	var errs []string
	s.validate(v, "", &errs)
	return errs
}

const maxSchemaErrors = 8

func typeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

func (s *Schema) validate(v any, at string, errs *[]string) {
	if len(*errs) >= maxSchemaErrors {
		return
	}
	fail := func(format string, a ...any) {
		where := at
		if where == "" {
			where = "/"
		}
		if len(*errs) < maxSchemaErrors {
			*errs = append(*errs, where+": "+fmt.Sprintf(format, a...))
		}
	}
	if s.always != nil {
		if !*s.always {
			fail("no value is allowed here")
		}
		return
	}
	t := typeOf(v)
	if len(s.types) > 0 && !slices.Contains(s.types, t) && (t != "integer" || !slices.Contains(s.types, "number")) {
		fail("is %s, not %v", t, s.types)
		return
	}
	if s.enum != nil && !slices.ContainsFunc(s.enum, func(e any) bool { return reflect.DeepEqual(e, v) }) {
		fail("is not one of the allowed values")
	}
	if s.hasConst && !reflect.DeepEqual(s.constV, v) {
		fail("is not the constant value")
	}
	switch x := v.(type) {
	case string:
		n := utf8.RuneCountInString(x)
		if n < s.minLen {
			fail("is shorter than %d characters", s.minLen)
		}
		if s.maxLen >= 0 && n > s.maxLen {
			fail("is longer than %d characters", s.maxLen)
		}
		if s.pattern != nil && !s.pattern.MatchString(x) {
			fail("does not match the pattern")
		}
	case float64:
		if s.min != nil && x < *s.min {
			fail("is less than %v", *s.min)
		}
		if s.max != nil && x > *s.max {
			fail("is more than %v", *s.max)
		}
		if s.xmin != nil && x <= *s.xmin {
			fail("is not more than %v", *s.xmin)
		}
		if s.xmax != nil && x >= *s.xmax {
			fail("is not less than %v", *s.xmax)
		}
	case []any:
		if len(x) < s.minItems {
			fail("has fewer than %d items", s.minItems)
		}
		if s.maxItems >= 0 && len(x) > s.maxItems {
			fail("has more than %d items", s.maxItems)
		}
		if s.items != nil {
			for i, e := range x {
				s.items.validate(e, at+"/"+strconv.Itoa(i), errs)
			}
		}
	case map[string]any:
		for _, r := range s.required {
			if _, ok := x[r]; !ok {
				fail("lacks the required property %s", quote(r))
			}
		}
		for _, name := range s.propOrder {
			if e, ok := x[name]; ok {
				s.props[name].validate(e, at+"/"+name, errs)
			}
		}
		if s.addl != nil {
			names := make([]string, 0, len(x))
			for name := range x {
				if _, ok := s.props[name]; !ok {
					names = append(names, name)
				}
			}
			sort.Strings(names)
			for _, name := range names {
				s.addl.validate(x[name], at+"/"+name, errs)
			}
		}
	}
	for _, a := range s.allOf {
		a.validate(v, at, errs)
	}
	if s.anyOf != nil && countValid(s.anyOf, v) == 0 {
		fail("matches none of anyOf")
	}
	if s.oneOf != nil {
		if n := countValid(s.oneOf, v); n != 1 {
			fail("matches %d of oneOf, not exactly one", n)
		}
	}
	if s.not != nil && len(s.not.Validate(v)) == 0 {
		fail("matches the schema of not")
	}
}

func countValid(l []*Schema, v any) int {
	n := 0
	for _, s := range l {
		if len(s.Validate(v)) == 0 {
			n++
		}
	}
	return n
}

func newJSONSchema(params json.RawMessage) (Check, error) {
	var p struct {
		Schema json.RawMessage `json:"schema"`
		Not    bool            `json:"not"`
	}
	if err := DecodeParameters(params, &p); err != nil {
		return nil, err
	}
	if len(p.Schema) == 0 || p.Schema[0] != '{' {
		return nil, paramError("schema", "must be a JSON Schema object")
	}
	s, err := CompileSchema(p.Schema)
	if err != nil {
		se := err.(*schemaError)
		return nil, &Error{Code: CodeInvalidParameter, Param: join("parameters.schema", se.at), Message: "schema: " + se.Error()}
	}
	return CheckFunc(func(_ context.Context, in *Input) (Verdict, error) {
		vals := extractJSON(in.Text)
		if len(vals) == 0 {
			return Verdict{Explanation: "The text holds no JSON."}, nil
		}
		var first []string
		for i, v := range vals {
			errs := s.Validate(v)
			if len(errs) == 0 {
				return verdict(true, p.Not, "The JSON conforms to the schema.", ""), nil
			}
			if i == 0 {
				first = errs
			}
		}
		return verdict(false, p.Not, "", "The JSON does not conform to the schema: "+first[0]+"."), nil
	}), nil
}
