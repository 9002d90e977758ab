package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelgateway/gateway/internal/jsonscan"
)

// plainValue returns a copy of a query operand with its json.Numbers (kept
// by ParseConfig so that numbers marshal back as written) turned into
// float64, as request bodies decode. A number that does not fit a float64
// is an error.
func plainValue(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return nil, fmt.Errorf("number %s is out of range", quoteShort(string(x)))
		}
		return f, nil
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			n, err := plainValue(e)
			if err != nil {
				return nil, err
			}
			m[k] = n
		}
		return m, nil
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			n, err := plainValue(e)
			if err != nil {
				return nil, err
			}
			l[i] = n
		}
		return l, nil
	}
	return v, nil
}

// Bounds on the work one request's conditions cost (docs/architecture.md, Trust): a
// config holds at most maxConditions tests of a field, its $regex patterns
// compile to at most maxRegexInsts instructions in all, and a $regex is
// only matched against values of at most maxRegexValue bytes. Go's regexp
// runs in time proportional to the pattern's program times the input, so
// the worst case of a request is about maxRegexInsts × maxRegexValue steps
// (see BenchmarkConditionsWorstCase).
const (
	maxConditions  = 32
	maxRegexInsts  = 1024
	maxRegexValue  = 4 << 10
	maxRegexValueS = "4 KiB"
)

// matchInput is what conditions look at: the request's metadata and the
// top-level fields of its JSON body. A field is decoded the first time a
// test looks at it, once per request whatever the number of conditions;
// the members of the body are found, not copied, in one pass (fields).
type matchInput struct {
	ctx      context.Context
	metadata map[string]string
	body     []byte // the request body; nil or not a JSON object: no params

	scanned bool
	fields  map[string][]byte // the body's top-level members, raw (slices of body)
	decoded map[string]any    // the members decoded so far

	// err stops the matching: the caller went away (ctx's error), or a
	// value is too long for a $regex (a 400 naming the field).
	err error
}

// param returns the body field key, decoded as encoding/json decodes into
// an any.
func (in *matchInput) param(key string) (any, bool) {
	if !in.scanned {
		in.scanned = true
		if len(in.body) > 0 && json.Valid(in.body) {
			if i := jsonscan.SkipSpace(in.body, 0); in.body[i] == '{' {
				in.fields = make(map[string][]byte)
				jsonscan.EachMember(in.body[i:], func(name, v []byte) bool {
					k := string(name)
					if bytes.IndexByte(name, '\\') >= 0 || !utf8.Valid(name) {
						// Decoded as encoding/json would: escapes, and
						// invalid UTF-8 replaced.
						json.Unmarshal(append(append([]byte{'"'}, name...), '"'), &k)
					}
					in.fields[k] = v // the last of duplicate names wins, as in encoding/json
					return true
				})
			}
		}
	}
	if v, ok := in.decoded[key]; ok {
		return v, true
	}
	raw, ok := in.fields[key]
	if !ok {
		return nil, false
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil, false // not reached: the body is valid JSON
	}
	if in.decoded == nil {
		in.decoded = make(map[string]any)
	}
	in.decoded[key] = v
	return v, true
}

// stopped reports whether matching must stop, noting in err that the
// caller went away.
func (in *matchInput) stopped() bool {
	if in.err == nil && in.ctx != nil {
		in.err = in.ctx.Err()
	}
	return in.err != nil
}

// matcher is a compiled query. match reports false once in.err is set.
type matcher interface {
	match(in *matchInput) bool
}

type allOf []matcher

func (m allOf) match(in *matchInput) bool {
	for _, s := range m {
		if !s.match(in) {
			return false
		}
	}
	return true
}

type anyOf []matcher

func (m anyOf) match(in *matchInput) bool {
	for _, s := range m {
		if s.match(in) {
			return true
		}
		if in.err != nil {
			return false
		}
	}
	return false
}

// fieldTest is one operator applied to one field.
type fieldTest struct {
	params bool   // params.* rather than metadata.*
	key    string // the metadata key or body field
	op     string
	arg    any
	re     *regexp.Regexp
}

func (f *fieldTest) match(in *matchInput) bool {
	if in.stopped() {
		return false
	}
	var v any
	var ok bool
	if f.params {
		v, ok = in.param(f.key)
	} else {
		var s string
		s, ok = in.metadata[f.key]
		v = s
	}
	switch f.op {
	case "$eq":
		return ok && equalValue(v, f.arg)
	case "$ne":
		return !ok || !equalValue(v, f.arg)
	case "$in", "$nin":
		found := false
		if ok {
			for _, a := range f.arg.([]any) {
				if equalValue(v, a) {
					found = true
					break
				}
			}
		}
		return found == (f.op == "$in")
	case "$regex":
		s, isString := v.(string)
		if !ok || !isString {
			return false
		}
		if len(s) > maxRegexValue {
			in.err = f.tooLong()
			return false
		}
		return f.re.MatchString(s)
	}
	if !ok {
		return false
	}
	c, comparable := compareValue(v, f.arg)
	if !comparable {
		return false
	}
	switch f.op {
	case "$gt":
		return c > 0
	case "$gte":
		return c >= 0
	case "$lt":
		return c < 0
	default: // $lte
		return c <= 0
	}
}

// tooLong is the 400 of a value too long for f's $regex: it names the body
// field, or x-gateway-metadata for a metadata key.
func (f *fieldTest) tooLong() error {
	if f.params {
		return badRequest(CodeInvalidValue, f.key, f.key+" is longer than "+maxRegexValueS+
			", the longest value a $regex condition of the config is matched against")
	}
	return badRequest(CodeInvalidValue, HeaderMetadata, "metadata "+quoteShort(f.key)+" is longer than "+
		maxRegexValueS+", the longest value a $regex condition of the config is matched against")
}

// equalValue compares a field's value with a query's operand. Metadata
// values are strings, so a numeric or boolean operand compares with the
// string's meaning (see stringNumber).
func equalValue(v, arg any) bool {
	if s, ok := v.(string); ok {
		switch a := arg.(type) {
		case string:
			return s == a
		case float64:
			f, ok := stringNumber(s)
			return ok && f == a
		case bool:
			return s == strconv.FormatBool(a)
		}
		return false
	}
	return reflect.DeepEqual(v, arg)
}

// stringNumber reads a string compared with a numeric operand as its
// number. A string over maxRegexValue bytes is no number: parsing reads
// every digit, and each test would read a body field of megabytes again.
func stringNumber(s string) (float64, bool) {
	if len(s) > maxRegexValue {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

// compareValue orders a field's value against an operand: numbers
// numerically (a numeric metadata string counts as its number), strings
// lexically. Other pairs do not compare.
func compareValue(v, arg any) (int, bool) {
	switch a := arg.(type) {
	case float64:
		var f float64
		switch x := v.(type) {
		case float64:
			f = x
		case string:
			var ok bool
			if f, ok = stringNumber(x); !ok {
				return 0, false
			}
		default:
			return 0, false
		}
		switch {
		case f < a:
			return -1, true
		case f > a:
			return 1, true
		case f == a:
			return 0, true
		}
		return 0, false // NaN
	case string:
		s, ok := v.(string)
		if !ok {
			return 0, false
		}
		return strings.Compare(s, a), true
	}
	return 0, false
}

// usesParams reports whether a valid query looks at a params.* field.
func usesParams(q map[string]any) bool {
	for k, v := range q {
		if strings.HasPrefix(k, "params.") {
			return true
		}
		if list, ok := v.([]any); ok && (k == "$and" || k == "$or") {
			for _, e := range list {
				if sq, ok := e.(map[string]any); ok && usesParams(sq) {
					return true
				}
			}
		}
	}
	return false
}

// queryBudget counts what the queries of one config hold, against
// maxConditions and maxRegexInsts.
type queryBudget struct {
	tests int // operators applied to a field
	insts int // instructions of the compiled $regex patterns
}

// compileQuery validates a query object and compiles it, counting its
// tests and regular expressions in b.
func compileQuery(q map[string]any, path string, depth int, b *queryBudget) (matcher, error) {
	if depth > maxConditionDepth {
		return nil, configError(path, "$and and $or nest more than "+strconv.Itoa(maxConditionDepth)+" levels deep")
	}
	if len(q) == 0 {
		return nil, configError(path, "must be a non-empty object")
	}
	var out allOf
	for _, k := range sortedKeys(q) {
		v := q[k]
		kp := join(path, k)
		switch {
		case k == "$and" || k == "$or":
			list, ok := v.([]any)
			if !ok || len(list) == 0 {
				return nil, configError(kp, "must be a non-empty array of queries")
			}
			subs := make([]matcher, len(list))
			for i, e := range list {
				sq, ok := e.(map[string]any)
				if !ok {
					return nil, configError(index(kp, i), "must be a query object")
				}
				m, err := compileQuery(sq, index(kp, i), depth+1, b)
				if err != nil {
					return nil, err
				}
				subs[i] = m
			}
			if k == "$and" {
				out = append(out, allOf(subs))
			} else {
				out = append(out, anyOf(subs))
			}
		case strings.HasPrefix(k, "$"):
			return nil, configError(kp, "unknown operator; use $and or $or, or a metadata.* or params.* field")
		default:
			tests, err := compileField(k, v, kp, b)
			if err != nil {
				return nil, err
			}
			out = append(out, tests...)
		}
	}
	if len(out) == 1 {
		return out[0], nil
	}
	return out, nil
}

func compileField(k string, v any, path string, b *queryBudget) ([]matcher, error) {
	f := fieldTest{}
	switch {
	case strings.HasPrefix(k, "metadata.") && len(k) > len("metadata."):
		f.key = k[len("metadata."):]
	case strings.HasPrefix(k, "params.") && len(k) > len("params."):
		f.params, f.key = true, k[len("params."):]
	default:
		return nil, configError(path, "field must be metadata.<key> or params.<field>")
	}
	// An object all of whose keys start with $ is a set of operators; one
	// without such keys is a value to compare for equality. An object with
	// both is refused: read as a value it would never match.
	ops, _ := v.(map[string]any)
	var named []string
	for _, k := range sortedKeys(ops) {
		if strings.HasPrefix(k, "$") {
			named = append(named, k)
		}
	}
	if len(named) > 0 && len(named) < len(ops) {
		return nil, configError(path, "cannot mix operators ("+strings.Join(named, ", ")+") with other keys")
	}
	if len(named) == 0 {
		arg, err := plainValue(v)
		if err != nil {
			return nil, configError(path, err.Error())
		}
		if err := b.test(path); err != nil {
			return nil, err
		}
		f.op, f.arg = "$eq", arg
		return []matcher{&f}, nil
	}
	var out []matcher
	for _, op := range sortedKeys(ops) {
		t := f
		arg, err := plainValue(ops[op])
		if err != nil {
			return nil, configError(join(path, op), err.Error())
		}
		t.op, t.arg = op, arg
		op := join(path, op)
		if err := b.test(op); err != nil {
			return nil, err
		}
		switch t.op {
		case "$eq", "$ne":
		case "$gt", "$gte", "$lt", "$lte":
			switch t.arg.(type) {
			case float64, string:
			default:
				return nil, configError(op, "must be a number or a string")
			}
		case "$in", "$nin":
			if _, ok := t.arg.([]any); !ok {
				return nil, configError(op, "must be an array")
			}
		case "$regex":
			s, ok := t.arg.(string)
			if !ok || len(s) > maxRegexLen {
				return nil, configError(op, "must be a regular expression of at most "+strconv.Itoa(maxRegexLen)+" bytes")
			}
			re, err := regexp.Compile(s)
			if err != nil {
				return nil, configError(op, "must be a valid regular expression (RE2 syntax)")
			}
			if b.insts += regexInsts(s); b.insts > maxRegexInsts {
				return nil, configError(op, "is too complex: the $regex patterns of a config compile to at most "+
					strconv.Itoa(maxRegexInsts)+" instructions in all (a{100} counts 100)")
			}
			t.re = re
		default:
			return nil, configError(op, "unknown operator; use $eq $ne $gt $gte $lt $lte $in $nin $regex")
		}
		out = append(out, &t)
	}
	return out, nil
}

// test counts one test of a field, at path, against maxConditions.
func (b *queryBudget) test(path string) error {
	if b.tests++; b.tests > maxConditions {
		return configError(path, "a config holds at most "+strconv.Itoa(maxConditions)+
			" conditions, counting each operator applied to a field, over all its strategies")
	}
	return nil
}

// regexInsts returns the size of the program a valid pattern compiles to,
// which with the input's length bounds the time a match takes.
func regexInsts(pattern string) int {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 0 // not reached: regexp.Compile accepted it
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0
	}
	return len(prog.Inst)
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
