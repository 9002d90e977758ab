// Parts of this file are adapted from the Go standard library's
// text/template (exec.go), Copyright 2011 The Go Authors, used under its
// BSD-style licence
// (the LICENSE file beside this one).

package htmltmpl

import (
	"reflect"
	"sort"
	"strings"
	"text/template/parse"
)

// maxDepth bounds nested {{template}} calls, as text/template does, so
// that a recursive template fails instead of exhausting the stack.
const maxDepth = 10000

// executor is one execution of a template.
type executor struct {
	t     *Template
	tree  *parse.Tree // of the template running, for error positions
	buf   []byte
	vars  []variable
	base  int // vars[base] is the running template's $
	depth int
}

// variable is a template variable's name and value.
type variable struct {
	name  string
	value reflect.Value
}

// execError carries an execution error up through panics to Execute.
type execError struct{ err error }

// missingVal is the final argument of a command that has none, as in
// text/template.
var missingVal = reflect.ValueOf(missingType{})

type missingType struct{}

func isMissing(v reflect.Value) bool { return v.IsValid() && v.Type() == missingValType }

var (
	missingValType   = reflect.TypeFor[missingType]()
	reflectValueType = reflect.TypeFor[reflect.Value]()
	errorType        = reflect.TypeFor[error]()
)

// errorf stops the execution with an error located at n.
func (s *executor) errorf(n parse.Node, format string, args ...any) {
	panic(execError{errorAt(s.tree, n, format, args...)})
}

// walk runs nodes with dot.
func (s *executor) walk(dot reflect.Value, nodes []node) {
	for _, n := range nodes {
		switch n := n.(type) {
		case text:
			s.buf = append(s.buf, n...)
		case *action:
			v := s.evalPipeline(dot, n.n.Pipe)
			if n.esc != escNone {
				s.buf = appendEscaped(s.buf, n.esc, stringify(v))
			}
		case *branch:
			if n.typ == parse.NodeRange {
				s.walkRange(dot, n)
			} else {
				s.walkIfOrWith(dot, n)
			}
		case *call:
			s.walkCall(dot, n)
		}
	}
}

// walkIfOrWith runs an if or a with.
func (s *executor) walkIfOrWith(dot reflect.Value, b *branch) {
	mark := len(s.vars)
	val := s.evalPipeline(dot, b.n.Pipe)
	truth, ok := isTrue(indirectInterface(val))
	if !ok {
		s.errorf(b.n, "if/with can't use %v", val)
	}
	switch {
	case truth && b.typ == parse.NodeWith:
		s.walk(val, b.list)
	case truth:
		s.walk(dot, b.list)
	default:
		s.walk(dot, b.elseList)
	}
	s.vars = s.vars[:mark]
}

// walkRange runs a range over an array, a slice, a map (its keys in
// order) or an integer.
func (s *executor) walkRange(dot reflect.Value, b *branch) {
	outer := len(s.vars)
	pipe := b.n.Pipe
	val, _ := indirect(s.evalPipeline(dot, pipe))
	mark := len(s.vars)
	one := func(index, elem reflect.Value) {
		if len(pipe.Decl) > 0 {
			if pipe.IsAssign {
				if len(pipe.Decl) > 1 {
					s.setVar(b.n, pipe.Decl[0].Ident[0], index)
				} else {
					s.setVar(b.n, pipe.Decl[0].Ident[0], elem)
				}
			} else {
				s.vars[mark-1].value = elem
			}
		}
		if len(pipe.Decl) > 1 {
			if pipe.IsAssign {
				s.setVar(b.n, pipe.Decl[1].Ident[0], elem)
			} else {
				s.vars[mark-2].value = index
			}
		}
		s.walk(elem, b.list)
		s.vars = s.vars[:mark]
	}
	ran := false
	switch val.Kind() {
	case reflect.Array, reflect.Slice:
		for i := 0; i < val.Len(); i++ {
			one(reflect.ValueOf(i), val.Index(i))
			ran = true
		}
	case reflect.Map:
		for _, k := range sortedKeys(s, b.n, val) {
			one(k, val.MapIndex(k))
			ran = true
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if len(pipe.Decl) > 1 {
			s.errorf(b.n, "can't use %v to iterate over more than one variable", val)
		}
		for v := range val.Seq() {
			one(reflect.Value{}, v)
			ran = true
		}
	case reflect.Invalid:
		// A nil map or the like: nothing to range over.
	default:
		s.errorf(b.n, "range can't iterate over %v", val)
	}
	if !ran {
		s.walk(dot, b.elseList)
	}
	s.vars = s.vars[:outer]
}

// sortedKeys returns the keys of map m in order; the keys must be strings,
// integers or floats.
func sortedKeys(s *executor, n parse.Node, m reflect.Value) []reflect.Value {
	keys := m.MapKeys()
	var less func(a, b reflect.Value) bool
	switch m.Type().Key().Kind() {
	case reflect.String:
		less = func(a, b reflect.Value) bool { return a.String() < b.String() }
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		less = func(a, b reflect.Value) bool { return a.Int() < b.Int() }
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		less = func(a, b reflect.Value) bool { return a.Uint() < b.Uint() }
	default:
		s.errorf(n, "range over a map with keys of type %s is not supported", m.Type().Key())
	}
	sort.Slice(keys, func(i, j int) bool { return less(keys[i], keys[j]) })
	return keys
}

// walkCall runs a {{template}} call.
func (s *executor) walkCall(dot reflect.Value, c *call) {
	if s.depth >= maxDepth {
		s.errorf(c.n, "exceeded maximum template depth (%v)", maxDepth)
	}
	if c.n.Pipe != nil {
		dot = s.evalPipeline(dot, c.n.Pipe)
	} else {
		dot = reflect.Value{}
	}
	mark, base, tree := len(s.vars), s.base, s.tree
	s.base, s.tree = mark, c.t.tree
	s.depth++
	s.vars = append(s.vars, variable{"$", dot})
	s.walk(dot, c.t.nodes)
	s.depth--
	s.vars, s.base, s.tree = s.vars[:mark], base, tree
}

// setVar assigns to the visible variable name.
func (s *executor) setVar(n parse.Node, name string, value reflect.Value) {
	for i := len(s.vars) - 1; i >= s.base; i-- {
		if s.vars[i].name == name {
			s.vars[i].value = value
			return
		}
	}
	s.errorf(n, "undefined variable: %s", name)
}

// varValue returns the value of the visible variable name.
func (s *executor) varValue(n parse.Node, name string) reflect.Value {
	for i := len(s.vars) - 1; i >= s.base; i-- {
		if s.vars[i].name == name {
			return s.vars[i].value
		}
	}
	s.errorf(n, "undefined variable: %s", name)
	return reflect.Value{}
}

// evalPipeline returns the value of a pipeline and declares or assigns its
// variables.
func (s *executor) evalPipeline(dot reflect.Value, pipe *parse.PipeNode) reflect.Value {
	if pipe == nil {
		return reflect.Value{}
	}
	value := missingVal
	for _, cmd := range pipe.Cmds {
		value = s.evalCommand(dot, cmd, value)
		// Dig into an empty interface, as text/template does.
		if value.Kind() == reflect.Interface && value.Type().NumMethod() == 0 {
			value = reflect.ValueOf(value.Interface())
		}
	}
	for _, v := range pipe.Decl {
		if pipe.IsAssign {
			s.setVar(v, v.Ident[0], value)
		} else {
			s.vars = append(s.vars, variable{v.Ident[0], value})
		}
	}
	return value
}

// evalCommand returns the value of one command of a pipeline, final being
// the value of the command before it.
func (s *executor) evalCommand(dot reflect.Value, cmd *parse.CommandNode, final reflect.Value) reflect.Value {
	first := cmd.Args[0]
	switch n := first.(type) {
	case *parse.FieldNode:
		return s.evalFieldChain(dot, dot, n, n.Ident, cmd.Args, final)
	case *parse.ChainNode:
		return s.evalChainNode(dot, n, cmd.Args, final)
	case *parse.IdentifierNode:
		return s.evalFunction(dot, n, cmd.Args[1:], final)
	case *parse.PipeNode:
		s.notAFunction(cmd.Args, final)
		return s.evalPipeline(dot, n)
	case *parse.VariableNode:
		return s.evalVariableNode(dot, n, cmd.Args, final)
	}
	s.notAFunction(cmd.Args, final)
	switch first.(type) {
	case *parse.DotNode:
		return dot
	case *parse.NilNode:
		s.errorf(first, "nil is not a command")
	}
	return s.constant(first)
}

// notAFunction fails a command that is not a function but has arguments.
func (s *executor) notAFunction(args []parse.Node, final reflect.Value) {
	if len(args) > 1 || !isMissing(final) {
		s.errorf(args[0], "can't give argument to non-function %s", args[0])
	}
}

// idealConstant returns the value of a number with no type to give it: an
// int, or a float64 when it is written as one.
func (s *executor) idealConstant(n *parse.NumberNode) reflect.Value {
	switch {
	case n.IsComplex:
		return reflect.ValueOf(n.Complex128)
	case n.IsFloat && !isHexInt(n.Text) && !isRuneInt(n.Text) && strings.ContainsAny(n.Text, ".eEpP"):
		return reflect.ValueOf(n.Float64)
	case n.IsInt:
		i := int(n.Int64)
		if int64(i) != n.Int64 {
			s.errorf(n, "%s overflows int", n.Text)
		}
		return reflect.ValueOf(i)
	case n.IsUint:
		s.errorf(n, "%s overflows int", n.Text)
	}
	return reflect.Value{}
}

func isRuneInt(s string) bool { return len(s) > 0 && s[0] == '\'' }

func isHexInt(s string) bool {
	return len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && !strings.ContainsAny(s, "pP")
}

// evalChainNode returns the value of (pipeline).Field….
func (s *executor) evalChainNode(dot reflect.Value, chain *parse.ChainNode, args []parse.Node, final reflect.Value) reflect.Value {
	if chain.Node.Type() == parse.NodeNil {
		s.errorf(chain, "indirection through explicit nil in %s", chain)
	}
	v := s.evalArg(dot, nil, chain.Node)
	return s.evalFieldChain(dot, v, chain, chain.Field, args, final)
}

// evalVariableNode returns the value of $x or $x.Field….
func (s *executor) evalVariableNode(dot reflect.Value, n *parse.VariableNode, args []parse.Node, final reflect.Value) reflect.Value {
	v := s.varValue(n, n.Ident[0])
	if len(n.Ident) == 1 {
		s.notAFunction(args, final)
		return v
	}
	return s.evalFieldChain(dot, v, n, n.Ident[1:], args, final)
}

// evalFieldChain returns the value of the fields ident of receiver in turn.
func (s *executor) evalFieldChain(dot, receiver reflect.Value, n parse.Node, ident []string, args []parse.Node, final reflect.Value) reflect.Value {
	last := len(ident) - 1
	for i := range last {
		receiver = s.evalField(n, ident[i], nil, missingVal, receiver)
	}
	return s.evalField(n, ident[last], args, final, receiver)
}

// evalField returns the field name of a struct or the key name of a map.
// A method is never called: a name that is not a field is an error.
func (s *executor) evalField(n parse.Node, name string, args []parse.Node, final, receiver reflect.Value) reflect.Value {
	if !receiver.IsValid() {
		return reflect.Value{}
	}
	typ := receiver.Type()
	receiver, isNil := indirect(receiver)
	if receiver.Kind() == reflect.Interface && isNil {
		s.errorf(n, "nil pointer evaluating %s.%s", typ, name)
	}
	hasArgs := len(args) > 1 || !isMissing(final)
	switch receiver.Kind() {
	case reflect.Struct:
		if f := s.fieldOf(receiver.Type(), name); f.ok {
			if !f.exported {
				s.errorf(n, "%s is an unexported field of struct type %s", name, typ)
			}
			v, err := receiver.FieldByIndexErr(f.index)
			if err != nil {
				s.errorf(n, "%v", err)
			}
			if hasArgs {
				s.errorf(n, "%s has arguments but cannot be invoked as function", name)
			}
			return v
		}
	case reflect.Map:
		key := reflect.ValueOf(name)
		if key.Type().AssignableTo(receiver.Type().Key()) {
			if hasArgs {
				s.errorf(n, "%s is not a method but has arguments", name)
			}
			return receiver.MapIndex(key)
		}
	case reflect.Pointer:
		if isNil {
			s.errorf(n, "nil pointer evaluating %s.%s", typ, name)
		}
	}
	s.errorf(n, "can't evaluate field %s in type %s (this package calls no methods)", name, typ)
	return reflect.Value{}
}

// field is where a struct type keeps a field.
type field struct {
	index    []int
	exported bool
	ok       bool
}

type fieldKey struct {
	t    reflect.Type
	name string
}

// fieldOf returns struct type t's field name, promoted ones included.
func (s *executor) fieldOf(t reflect.Type, name string) field {
	k := fieldKey{t, name}
	if f, ok := s.t.fields.Load(k); ok {
		return f.(field)
	}
	var f field
	if sf, ok := t.FieldByName(name); ok {
		f = field{index: sf.Index, exported: sf.IsExported(), ok: true}
	}
	s.t.fields.Store(k, f)
	return f
}

// indirect follows pointers and interfaces to a value that is neither, or
// to a nil one.
func indirect(v reflect.Value) (rv reflect.Value, isNil bool) {
	for ; v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface; v = v.Elem() {
		if v.IsNil() {
			return v, true
		}
	}
	return v, false
}

// indirectInterface returns the value inside an interface, if any.
func indirectInterface(v reflect.Value) reflect.Value {
	switch {
	case v.Kind() != reflect.Interface:
		return v
	case v.IsNil():
		return reflect.Value{}
	}
	return v.Elem()
}

// isTrue reports whether v is true as if, with and not see it: not empty,
// not zero, not nil.
func isTrue(v reflect.Value) (truth, ok bool) {
	if !v.IsValid() {
		return false, true
	}
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		truth = v.Len() > 0
	case reflect.Bool:
		truth = v.Bool()
	case reflect.Complex64, reflect.Complex128:
		truth = v.Complex() != 0
	case reflect.Chan, reflect.Func, reflect.Pointer, reflect.UnsafePointer, reflect.Interface:
		truth = !v.IsNil()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		truth = v.Int() != 0
	case reflect.Float32, reflect.Float64:
		truth = v.Float() != 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		truth = v.Uint() != 0
	case reflect.Struct:
		truth = true
	default:
		return false, false
	}
	return truth, true
}
