// Parts of this file are adapted from the Go standard library's
// text/template (funcs.go), Copyright 2011 The Go Authors, used under its
// BSD-style licence
// (the LICENSE file beside this one).

package htmltmpl

import (
	"errors"
	"fmt"
	"reflect"
	"text/template/parse"
)

// builtin is a function every template has. It gets its arguments
// unevaluated, as and and or must not evaluate all of theirs.
type builtin func(s *executor, dot reflect.Value, n *parse.IdentifierNode, args []parse.Node, final reflect.Value) reflect.Value

// builtinNames are text/template's builtins that this package supports.
// html, js, urlquery, call and slice are not among them.
var builtinNames = []string{"and", "or", "not", "len", "index", "print", "printf", "eq", "ne", "lt", "le", "gt", "ge"}

// lookupBuiltin returns the builtin name, or nil.
func lookupBuiltin(name string) builtin {
	switch name {
	case "and", "or":
		return andOr
	case "not":
		return not
	case "len":
		return length
	case "index":
		return index
	case "print", "printf":
		return printf
	case "eq", "ne", "lt", "le", "gt", "ge":
		return compare
	}
	return nil
}

// valueArgs evaluates args, and final if there is one, as text/template
// evaluates the reflect.Value parameters of its builtins: a missing value
// stays invalid.
func (s *executor) valueArgs(dot reflect.Value, args []parse.Node, final reflect.Value) []reflect.Value {
	vs := make([]reflect.Value, 0, len(args)+1)
	for _, a := range args {
		vs = append(vs, s.valueArg(dot, a))
	}
	if !isMissing(final) {
		vs = append(vs, final)
	}
	return vs
}

// valueArg evaluates one argument for a reflect.Value parameter.
func (s *executor) valueArg(dot reflect.Value, n parse.Node) reflect.Value {
	switch n.(type) {
	case *parse.BoolNode, *parse.NumberNode, *parse.StringNode:
		return s.constant(n)
	case *parse.NilNode:
		return reflect.Value{}
	}
	return s.evalArg(dot, nil, n)
}

// wantArgs fails a builtin called with fewer than min or more than max
// (when max >= 0) arguments.
func (s *executor) wantArgs(n *parse.IdentifierNode, got, min, max int) {
	switch {
	case max >= 0 && min == max && got != min:
		s.errorf(n, "wrong number of args for %s: want %d got %d", n.Ident, min, got)
	case got < min:
		s.errorf(n, "wrong number of args for %s: want at least %d got %d", n.Ident, min, got)
	case max >= 0 && got > max:
		s.errorf(n, "wrong number of args for %s: want at most %d got %d", n.Ident, max, got)
	}
}

// nargs is how many arguments a builtin gets, final included.
func nargs(args []parse.Node, final reflect.Value) int {
	if isMissing(final) {
		return len(args)
	}
	return len(args) + 1
}

// andOr returns the first argument that is false (and) or true (or), or
// the last, evaluating no further than it must.
func andOr(s *executor, dot reflect.Value, n *parse.IdentifierNode, args []parse.Node, final reflect.Value) reflect.Value {
	s.wantArgs(n, nargs(args, final), 1, -1)
	or := n.Ident == "or"
	var v reflect.Value
	for _, a := range args {
		v = s.valueArg(dot, a)
		if truth(v) == or {
			return v
		}
	}
	if !isMissing(final) {
		v = final
	}
	return v
}

func truth(v reflect.Value) bool {
	t, _ := isTrue(indirectInterface(v))
	return t
}

// not returns the negation of its argument's truth.
func not(s *executor, dot reflect.Value, n *parse.IdentifierNode, args []parse.Node, final reflect.Value) reflect.Value {
	s.wantArgs(n, nargs(args, final), 1, 1)
	return reflect.ValueOf(!truth(s.valueArgs(dot, args, final)[0]))
}

// length returns the length of an array, a map, a slice or a string.
func length(s *executor, dot reflect.Value, n *parse.IdentifierNode, args []parse.Node, final reflect.Value) reflect.Value {
	s.wantArgs(n, nargs(args, final), 1, 1)
	item, isNil := indirect(s.valueArgs(dot, args, final)[0])
	if isNil {
		s.errorf(n, "error calling len: len of nil pointer")
	}
	switch item.Kind() {
	case reflect.Array, reflect.Chan, reflect.Map, reflect.Slice, reflect.String:
		return reflect.ValueOf(item.Len())
	case reflect.Invalid:
		s.errorf(n, "error calling len: len of untyped nil")
	}
	s.errorf(n, "error calling len: len of type %s", item.Type())
	return reflect.Value{}
}

// index returns its first argument indexed by the others: a map's value
// (its zero value for a missing key) or an element of an array, a slice or
// a string.
func index(s *executor, dot reflect.Value, n *parse.IdentifierNode, args []parse.Node, final reflect.Value) reflect.Value {
	s.wantArgs(n, nargs(args, final), 1, -1)
	vs := s.valueArgs(dot, args, final)
	item := indirectInterface(vs[0])
	if !item.IsValid() {
		s.errorf(n, "error calling index: index of untyped nil")
	}
	for _, x := range vs[1:] {
		x = indirectInterface(x)
		var isNil bool
		if item, isNil = indirect(item); isNil {
			s.errorf(n, "error calling index: index of nil pointer")
		}
		switch item.Kind() {
		case reflect.Array, reflect.Slice, reflect.String:
			i, err := indexArg(x, item.Len())
			if err != nil {
				s.errorf(n, "error calling index: %v", err)
			}
			item = item.Index(i)
		case reflect.Map:
			k, err := prepareArg(x, item.Type().Key())
			if err != nil {
				s.errorf(n, "error calling index: %v", err)
			}
			if v := item.MapIndex(k); v.IsValid() {
				item = v
			} else {
				item = reflect.Zero(item.Type().Elem())
			}
		default:
			s.errorf(n, "error calling index: can't index item of type %s", item.Type())
		}
	}
	return item
}

// indexArg returns x as an index below size.
func indexArg(x reflect.Value, size int) (int, error) {
	var i int64
	switch x.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i = x.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		i = int64(x.Uint())
	case reflect.Invalid:
		return 0, errors.New("cannot index slice/array with nil")
	default:
		return 0, fmt.Errorf("cannot index slice/array with type %s", x.Type())
	}
	if i < 0 || int(i) < 0 || int(i) > size {
		return 0, fmt.Errorf("index out of range: %d", i)
	}
	return int(i), nil
}

// prepareArg returns v as a map key of type t.
func prepareArg(v reflect.Value, t reflect.Type) (reflect.Value, error) {
	if !v.IsValid() {
		if !canBeNil(t) {
			return reflect.Value{}, fmt.Errorf("value is nil; should be of type %s", t)
		}
		v = reflect.Zero(t)
	}
	if v.Type().AssignableTo(t) {
		return v, nil
	}
	if intLike(v.Kind()) && intLike(t.Kind()) && v.Type().ConvertibleTo(t) {
		return v.Convert(t), nil
	}
	return reflect.Value{}, fmt.Errorf("value has type %s; should be %s", v.Type(), t)
}

func intLike(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
}

// printf returns fmt.Sprint, or for printf fmt.Sprintf, of its arguments.
func printf(s *executor, dot reflect.Value, n *parse.IdentifierNode, args []parse.Node, final reflect.Value) reflect.Value {
	vs := make([]any, 0, nargs(args, final))
	for _, a := range args {
		v := s.evalArg(dot, anyType, a)
		vs = append(vs, anyOf(v))
	}
	if !isMissing(final) {
		vs = append(vs, anyOf(final))
	}
	if n.Ident == "print" {
		return reflect.ValueOf(fmt.Sprint(vs...))
	}
	s.wantArgs(n, len(vs), 1, -1)
	format, ok := vs[0].(string)
	if !ok {
		s.errorf(n, "wrong type for value; expected string; got %T", vs[0])
	}
	return reflect.ValueOf(fmt.Sprintf(format, vs[1:]...))
}

var anyType = reflect.TypeFor[any]()

// anyOf returns v's value as an interface value, nil for an invalid one.
func anyOf(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	return v.Interface()
}

// kind is a class of basic values the comparisons compare.
type kind int

const (
	invalidKind kind = iota
	boolKind
	complexKind
	intKind
	floatKind
	stringKind
	uintKind
)

var errBadComparisonType = errors.New("invalid type for comparison")

func basicKind(v reflect.Value) (kind, error) {
	switch v.Kind() {
	case reflect.Bool:
		return boolKind, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return intKind, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return uintKind, nil
	case reflect.Float32, reflect.Float64:
		return floatKind, nil
	case reflect.Complex64, reflect.Complex128:
		return complexKind, nil
	case reflect.String:
		return stringKind, nil
	}
	return invalidKind, errBadComparisonType
}

// compare runs eq, ne, lt, le, gt or ge.
func compare(s *executor, dot reflect.Value, n *parse.IdentifierNode, args []parse.Node, final reflect.Value) reflect.Value {
	vs := s.valueArgs(dot, args, final)
	if n.Ident == "eq" {
		s.wantArgs(n, len(vs), 2, -1)
	} else {
		s.wantArgs(n, len(vs), 2, 2)
	}
	var (
		r   bool
		err error
	)
	switch n.Ident {
	case "eq":
		r, err = eq(vs[0], vs[1:]...)
	case "ne":
		r, err = eq(vs[0], vs[1])
		r = !r
	case "lt":
		r, err = lt(vs[0], vs[1])
	case "ge":
		r, err = lt(vs[0], vs[1])
		r = !r
	case "le", "gt":
		if r, err = lt(vs[0], vs[1]); err == nil && !r {
			r, err = eq(vs[0], vs[1])
		}
		if n.Ident == "gt" {
			r = !r
		}
	}
	if err != nil {
		s.errorf(n, "error calling %s: %v", n.Ident, err)
	}
	return reflect.ValueOf(r)
}

// eq reports whether arg1 equals any of arg2.
func eq(arg1 reflect.Value, arg2 ...reflect.Value) (bool, error) {
	arg1 = indirectInterface(arg1)
	k1, _ := basicKind(arg1)
	for _, arg := range arg2 {
		arg = indirectInterface(arg)
		k2, _ := basicKind(arg)
		truth := false
		if k1 != k2 {
			switch {
			case k1 == intKind && k2 == uintKind:
				truth = arg1.Int() >= 0 && uint64(arg1.Int()) == arg.Uint()
			case k1 == uintKind && k2 == intKind:
				truth = arg.Int() >= 0 && arg1.Uint() == uint64(arg.Int())
			default:
				if arg1.IsValid() && arg.IsValid() {
					return false, fmt.Errorf("incompatible types for comparison: %v and %v", arg1.Type(), arg.Type())
				}
			}
		} else {
			switch k1 {
			case boolKind:
				truth = arg1.Bool() == arg.Bool()
			case complexKind:
				truth = arg1.Complex() == arg.Complex()
			case floatKind:
				truth = arg1.Float() == arg.Float()
			case intKind:
				truth = arg1.Int() == arg.Int()
			case stringKind:
				truth = arg1.String() == arg.String()
			case uintKind:
				truth = arg1.Uint() == arg.Uint()
			default:
				if !arg1.IsValid() || !arg.IsValid() {
					truth = !arg1.IsValid() && !arg.IsValid()
				} else if arg1.Type() != arg.Type() || !arg.Type().Comparable() {
					return false, fmt.Errorf("non-comparable types %v and %v", arg1.Type(), arg.Type())
				} else {
					truth = arg1.Interface() == arg.Interface()
				}
			}
		}
		if truth {
			return true, nil
		}
	}
	return false, nil
}

// lt reports whether arg1 < arg2.
func lt(arg1, arg2 reflect.Value) (bool, error) {
	arg1 = indirectInterface(arg1)
	k1, err := basicKind(arg1)
	if err != nil {
		return false, err
	}
	arg2 = indirectInterface(arg2)
	k2, err := basicKind(arg2)
	if err != nil {
		return false, err
	}
	if k1 != k2 {
		switch {
		case k1 == intKind && k2 == uintKind:
			return arg1.Int() < 0 || uint64(arg1.Int()) < arg2.Uint(), nil
		case k1 == uintKind && k2 == intKind:
			return arg2.Int() >= 0 && arg1.Uint() < uint64(arg2.Int()), nil
		}
		return false, fmt.Errorf("incompatible types for comparison: %v and %v", arg1.Type(), arg2.Type())
	}
	switch k1 {
	case floatKind:
		return arg1.Float() < arg2.Float(), nil
	case intKind:
		return arg1.Int() < arg2.Int(), nil
	case stringKind:
		return arg1.String() < arg2.String(), nil
	case uintKind:
		return arg1.Uint() < arg2.Uint(), nil
	}
	return false, errBadComparisonType
}
