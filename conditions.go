package gateway

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
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

// matchInput is what conditions look at: the request's metadata and the
// top-level fields of its JSON body (nil when the body is not a JSON
// object or was not read).
type matchInput struct {
	metadata map[string]string
	params   map[string]any
}

// matcher is a compiled query.
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
	var v any
	var ok bool
	if f.params {
		v, ok = in.params[f.key]
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
		return ok && isString && f.re.MatchString(s)
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

// equalValue compares a field's value with a query's operand. Metadata
// values are strings, so a numeric or boolean operand compares with the
// string's meaning.
func equalValue(v, arg any) bool {
	if s, ok := v.(string); ok {
		switch a := arg.(type) {
		case string:
			return s == a
		case float64:
			f, err := strconv.ParseFloat(s, 64)
			return err == nil && f == a
		case bool:
			return s == strconv.FormatBool(a)
		}
		return false
	}
	return reflect.DeepEqual(v, arg)
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
			var err error
			if f, err = strconv.ParseFloat(x, 64); err != nil {
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

// compileQuery validates a query object and compiles it.
func compileQuery(q map[string]any, path string, depth int) (matcher, error) {
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
				m, err := compileQuery(sq, index(kp, i), depth+1)
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
			tests, err := compileField(k, v, kp)
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

func compileField(k string, v any, path string) ([]matcher, error) {
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
			t.re = re
		default:
			return nil, configError(op, "unknown operator; use $eq $ne $gt $gte $lt $lte $in $nin $regex")
		}
		out = append(out, &t)
	}
	return out, nil
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
