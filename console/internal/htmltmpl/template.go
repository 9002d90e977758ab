// Package htmltmpl executes html/template's templates with the same output,
// without calling methods through reflection.
//
// When a program can reach text/template's executor, which looks methods
// up by name (reflect.Value.MethodByName), the Go linker must keep every
// exported method of every type in the program, and the binary grows by
// a third. This package parses with text/template/parse, escapes each
// action for its place in the HTML document by html/template's rules, and
// evaluates templates with reflection that reads fields, map entries and
// elements and calls the functions of its FuncMap, never a method.
//
// What it supports is what the console's pages use: if, else, else if,
// range (with variables and else), with, define, template, block,
// variables, pipelines, the builtins and, or, not, len, index, print,
// printf, eq, ne, lt, le, gt and ge, and fields of structs (through
// pointers and interfaces) and maps with string keys. A name that is not a
// field or a key is an execution error, even when the type has a method of
// that name.
//
// Output is escaped as html/template escapes it in the contexts the
// package supports: text, <title> and <textarea>, quoted attribute values,
// quoted URL attributes (a value at the start of the URL with a scheme
// other than http, https or mailto becomes #ZgotmplZ; the path is
// normalised and a query or fragment percent-encoded), and <meta> content.
// An action anywhere else (a script, a style, an event handler, style or
// srcset attribute, an unquoted attribute value, a tag or attribute name,
// an HTML comment) is an error when the template is parsed, so that no
// template can write a value where it would not be escaped. There are no
// trusted content types such as html/template's HTML: every value is
// escaped.
package htmltmpl

import (
	"fmt"
	"io"
	"io/fs"
	"path"
	"reflect"
	"sync"
	"text/template/parse"
)

// FuncMap maps names to the functions templates may call. Each function
// returns one value, or a value and an error that stops the execution
// when it is not nil.
type FuncMap map[string]any

// Template is a parsed template ready to execute, with the templates it
// calls. It is safe for concurrent use.
type Template struct {
	name  string
	root  *compiled
	funcs map[string]reflect.Value

	fields sync.Map  // fieldKey -> field: where struct types keep fields
	bufs   sync.Pool // *[]byte: output buffers, reused
}

// ParseFS parses the files of fsys that match patterns, in order, as one
// set of templates, as html/template's ParseFS does: each file is a
// template named by its base name, a {{define}} of a name defined before
// replaces it unless it is empty, and the returned template is the first
// file's. It escapes every template the first one reaches, and returns an
// error for a template that does not parse, calls an unknown template or
// function, or has an action in a place it does not support.
func ParseFS(fsys fs.FS, funcs FuncMap, patterns ...string) (*Template, error) {
	t := &Template{funcs: make(map[string]reflect.Value, len(funcs))}
	parseFuncs := make(map[string]any, len(funcs))
	for name, fn := range funcs {
		if err := checkFunc(name, fn); err != nil {
			return nil, err
		}
		t.funcs[name] = reflect.ValueOf(fn)
		parseFuncs[name] = fn
	}
	builtins := make(map[string]any, len(builtinNames))
	for _, n := range builtinNames {
		builtins[n] = true
	}
	trees := map[string]*parse.Tree{}
	for _, p := range patterns {
		files, err := fs.Glob(fsys, p)
		if err != nil {
			return nil, fmt.Errorf("htmltmpl: %w", err)
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("htmltmpl: pattern matches no files: %#q", p)
		}
		for _, f := range files {
			b, err := fs.ReadFile(fsys, f)
			if err != nil {
				return nil, fmt.Errorf("htmltmpl: %w", err)
			}
			name := path.Base(f)
			if t.name == "" {
				t.name = name
			}
			set, err := parse.Parse(name, string(b), "", "", parseFuncs, builtins)
			if err != nil {
				return nil, fmt.Errorf("htmltmpl: %w", err)
			}
			for n, tree := range set {
				if trees[n] != nil && parse.IsEmptyTree(tree.Root) {
					continue
				}
				trees[n] = tree
			}
		}
	}
	cm := &compiler{trees: trees, variants: map[string]*compiled{}}
	root, err := cm.template(t.name, context{}, nil, trees[t.name])
	if err != nil {
		return nil, err
	}
	if root.out.state != stateText {
		return nil, fmt.Errorf("htmltmpl: %s ends inside a tag, an attribute or a special element", t.name)
	}
	t.root = root
	return t, nil
}

// Name returns the template's name, its file's base name.
func (t *Template) Name() string { return t.name }

// Execute writes the template's output for data to w, all at once: an
// execution that fails writes nothing.
func (t *Template) Execute(w io.Writer, data any) (err error) {
	bp, _ := t.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	s := &executor{t: t, tree: t.root.tree, buf: (*bp)[:0]}
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(execError)
			if !ok {
				panic(r)
			}
			err = e.err
		}
		if cap(s.buf) <= 1<<20 {
			*bp = s.buf[:0]
			t.bufs.Put(bp)
		}
	}()
	dot, ok := data.(reflect.Value)
	if !ok {
		dot = reflect.ValueOf(data)
	}
	s.vars = append(make([]variable, 0, 16), variable{"$", dot})
	s.walk(dot, t.root.nodes)
	_, err = w.Write(s.buf)
	return err
}
