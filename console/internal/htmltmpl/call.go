// Parts of this file are adapted from the Go standard library's
// text/template (exec.go), Copyright 2011 The Go Authors, used under its
// BSD-style licence
// (the LICENSE file beside this one).

package htmltmpl

import (
	"errors"
	"fmt"
	"reflect"
	"text/template/parse"
)

// evalFunction calls a builtin or a function of the FuncMap with args
// (the command's words after the name) and final.
func (s *executor) evalFunction(dot reflect.Value, n *parse.IdentifierNode, args []parse.Node, final reflect.Value) reflect.Value {
	if b := lookupBuiltin(n.Ident); b != nil {
		return b(s, dot, n, args, final)
	}
	fn, ok := s.t.funcs[n.Ident]
	if !ok {
		s.errorf(n, "%q is not a defined function", n.Ident)
	}
	return s.evalCall(dot, fn, n, args, final)
}

// evalCall calls fn with args and final, converting each to its parameter
// as text/template does.
func (s *executor) evalCall(dot, fn reflect.Value, n *parse.IdentifierNode, args []parse.Node, final reflect.Value) reflect.Value {
	name := n.Ident
	typ := fn.Type()
	numIn := len(args)
	if !isMissing(final) {
		numIn++
	}
	numFixed := len(args)
	if typ.IsVariadic() {
		numFixed = typ.NumIn() - 1
		if numIn < numFixed {
			s.errorf(n, "wrong number of args for %s: want at least %d got %d", name, typ.NumIn()-1, len(args))
		}
	} else if numIn != typ.NumIn() {
		s.errorf(n, "wrong number of args for %s: want %d got %d", name, typ.NumIn(), numIn)
	}
	argv := make([]reflect.Value, numIn)
	i := 0
	for ; i < numFixed && i < len(args); i++ {
		argv[i] = s.evalArg(dot, typ.In(i), args[i])
	}
	if typ.IsVariadic() {
		t := typ.In(typ.NumIn() - 1).Elem()
		for ; i < len(args); i++ {
			argv[i] = s.evalArg(dot, t, args[i])
		}
	}
	if !isMissing(final) {
		t := typ.In(typ.NumIn() - 1)
		if typ.IsVariadic() {
			if numIn-1 < numFixed {
				t = typ.In(numIn - 1)
			} else {
				t = t.Elem()
			}
		}
		argv[i] = s.validateType(n, final, t)
	}
	v, err := safeCall(fn, argv)
	if err != nil {
		s.errorf(n, "error calling %s: %v", name, err)
	}
	return v
}

// safeCall calls fn, turning a panic or a returned error into an error.
func safeCall(fn reflect.Value, args []reflect.Value) (v reflect.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = e
			} else {
				err = fmt.Errorf("%v", r)
			}
		}
	}()
	ret := fn.Call(args)
	if len(ret) == 2 && !ret[1].IsNil() {
		return ret[0], ret[1].Interface().(error)
	}
	return ret[0], nil
}

// evalArg returns the value of argument n for a parameter of type typ (nil
// for no conversion).
func (s *executor) evalArg(dot reflect.Value, typ reflect.Type, n parse.Node) reflect.Value {
	switch arg := n.(type) {
	case *parse.DotNode:
		return s.validateType(n, dot, typ)
	case *parse.NilNode:
		if typ != nil && canBeNil(typ) {
			return reflect.Zero(typ)
		}
		s.errorf(n, "cannot assign nil to %s", typ)
	case *parse.FieldNode:
		return s.validateType(n, s.evalFieldChain(dot, dot, arg, arg.Ident, nil, missingVal), typ)
	case *parse.VariableNode:
		return s.validateType(n, s.evalVariableNode(dot, arg, nil, missingVal), typ)
	case *parse.PipeNode:
		return s.validateType(n, s.evalPipeline(dot, arg), typ)
	case *parse.IdentifierNode:
		return s.validateType(n, s.evalFunction(dot, arg, nil, missingVal), typ)
	case *parse.ChainNode:
		return s.validateType(n, s.evalChainNode(dot, arg, nil, missingVal), typ)
	}
	if typ == nil || typ.Kind() == reflect.Interface && typ.NumMethod() == 0 {
		return s.constant(n)
	}
	v := reflect.New(typ).Elem()
	switch typ.Kind() {
	case reflect.Bool:
		if b, ok := n.(*parse.BoolNode); ok {
			v.SetBool(b.True)
			return v
		}
		s.errorf(n, "expected bool; found %s", n)
	case reflect.String:
		if str, ok := n.(*parse.StringNode); ok {
			v.SetString(str.Text)
			return v
		}
		s.errorf(n, "expected string; found %s", n)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if num, ok := n.(*parse.NumberNode); ok && num.IsInt {
			v.SetInt(num.Int64)
			return v
		}
		s.errorf(n, "expected integer; found %s", n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if num, ok := n.(*parse.NumberNode); ok && num.IsUint {
			v.SetUint(num.Uint64)
			return v
		}
		s.errorf(n, "expected unsigned integer; found %s", n)
	case reflect.Float32, reflect.Float64:
		if num, ok := n.(*parse.NumberNode); ok && num.IsFloat {
			v.SetFloat(num.Float64)
			return v
		}
		s.errorf(n, "expected float; found %s", n)
	}
	s.errorf(n, "can't handle %s for arg of type %s", n, typ)
	return reflect.Value{}
}

// constant returns the value of a literal argument with no type to give
// it.
func (s *executor) constant(n parse.Node) reflect.Value {
	switch n := n.(type) {
	case *parse.BoolNode:
		return reflect.ValueOf(n.True)
	case *parse.NumberNode:
		return s.idealConstant(n)
	case *parse.StringNode:
		return reflect.ValueOf(n.Text)
	}
	s.errorf(n, "can't handle argument %s", n)
	return reflect.Value{}
}

// validateType returns v as a value of type typ (nil: any), dereferencing
// or taking its address once if that makes it fit.
func (s *executor) validateType(n parse.Node, v reflect.Value, typ reflect.Type) reflect.Value {
	if !v.IsValid() {
		if typ == nil {
			return reflect.ValueOf(nil)
		}
		if canBeNil(typ) {
			return reflect.Zero(typ)
		}
		s.errorf(n, "invalid value; expected %s", typ)
	}
	if typ == nil || v.Type().AssignableTo(typ) {
		return v
	}
	if v.Kind() == reflect.Interface && !v.IsNil() {
		v = v.Elem()
		if v.Type().AssignableTo(typ) {
			return v
		}
	}
	switch {
	case v.Kind() == reflect.Pointer && v.Type().Elem().AssignableTo(typ):
		if v.IsNil() {
			s.errorf(n, "dereference of nil pointer of type %s", typ)
		}
		return v.Elem()
	case reflect.PointerTo(v.Type()).AssignableTo(typ) && v.CanAddr():
		return v.Addr()
	}
	s.errorf(n, "wrong type for value; expected %s; got %s", typ, v.Type())
	return reflect.Value{}
}

func canBeNil(typ reflect.Type) bool {
	switch typ.Kind() {
	case reflect.Chan, reflect.Func, reflect.Interface, reflect.Map, reflect.Pointer, reflect.Slice:
		return true
	case reflect.Struct:
		return typ == reflectValueType
	}
	return false
}

// checkFunc returns why fn cannot be a template function, or nil.
func checkFunc(name string, fn any) error {
	t := reflect.TypeOf(fn)
	if t == nil || t.Kind() != reflect.Func {
		return fmt.Errorf("htmltmpl: function %q is not a function", name)
	}
	switch {
	case t.NumOut() == 1:
	case t.NumOut() == 2 && t.Out(1) == errorType:
	default:
		return errors.New("htmltmpl: function " + name + " must return one value, or a value and an error")
	}
	return nil
}
