package mustache

import (
	"errors"
	"fmt"
)

// Escape says how a {{name}} tag escapes the value it places.
type Escape uint8

const (
	// EscapeHTML replaces &, <, >, " and ' with HTML entities, as the
	// Mustache specification says.
	EscapeHTML Escape = iota
	// EscapeJSON escapes the value as the content of a JSON string
	// literal: the template is JSON text and the tag sits between the
	// quotes of a string. The text of partials is escaped the same way,
	// since a partial tag sits in a string too.
	EscapeJSON
	// EscapeNone places values as they are.
	EscapeNone
)

// The bounds a render keeps when Options leaves them zero.
const (
	// DefaultMaxOutput is the default bound on a render's output, in bytes.
	DefaultMaxOutput = 8 << 20
	// DefaultMaxDepth is the default bound on how deeply partials nest.
	DefaultMaxDepth = 64
	// maxSteps bounds the tags and list items one render visits, so that
	// a template that recurses or iterates without output still ends.
	maxSteps = 1 << 20
)

// Options says how Render renders. The zero value escapes for HTML, renders
// a missing name as the empty string and keeps the default bounds.
type Options struct {
	// Escape is how {{name}} escapes values; the zero value is EscapeHTML.
	Escape Escape
	// Strict makes a variable whose name is not found in the data, or a
	// partial that does not exist, fail the render with a *MissingError.
	// Sections and inverted sections treat a missing name as false either
	// way.
	Strict bool
	// MaxOutput bounds the length of the output in bytes; zero means
	// DefaultMaxOutput.
	MaxOutput int
	// MaxDepth bounds how deeply partials nest; zero means
	// DefaultMaxDepth.
	MaxDepth int
}

// ErrLimit is wrapped by the error of a render that reached one of its
// bounds: the output's length, the nesting of partials, or the number of
// tags and list items visited.
var ErrLimit = errors.New("mustache: limit reached")

// MissingError is the error of a strict render that met a variable or a
// partial it could not find.
type MissingError struct {
	// Name is the variable's name as the template writes it (dotted
	// names whole), or the partial's name.
	Name string
	// Partial says that Name is a partial, not a variable.
	Partial bool
}

// Error names what is missing.
func (e *MissingError) Error() string {
	if e.Partial {
		return fmt.Sprintf("mustache: partial %q not found", e.Name)
	}
	return fmt.Sprintf("mustache: variable %q not found in the data", e.Name)
}

// Render renders the template with data, which is the context at the
// bottom of the stack (see the package documentation for the types it may
// hold). It returns a *MissingError when a strict render misses a name,
// and an error wrapping ErrLimit when a bound is reached; in both cases
// the output so far is discarded.
func (t *Template) Render(data any, opts Options) (string, error) {
	r := renderer{t: t, opts: opts}
	if r.opts.MaxOutput <= 0 {
		r.opts.MaxOutput = DefaultMaxOutput
	}
	if r.opts.MaxDepth <= 0 {
		r.opts.MaxDepth = DefaultMaxDepth
	}
	r.out = make([]byte, 0, min(t.size+t.size/4, r.opts.MaxOutput))
	var stack [8]any
	r.stack = append(stack[:0], data)
	if err := r.render(t.nodes); err != nil {
		return "", err
	}
	return string(r.out), nil
}

// renderer is the state of one render.
type renderer struct {
	t      *Template
	opts   Options
	out    []byte
	stack  []any  // the context stack, innermost last
	indent string // prepended to each line of the partial being rendered
	depth  int    // how many partials are being rendered
	steps  int
}

func (r *renderer) render(nodes []node) error {
	r.steps += len(nodes)
	if r.steps > maxSteps {
		return fmt.Errorf("%w: the template visits more than %d tags and list items", ErrLimit, maxSteps)
	}
	for i := range nodes {
		n := &nodes[i]
		switch n.kind {
		case textNode:
			r.text(n.text)
		case indentNode:
			r.text(r.indent)
		case varNode, rawNode:
			v, ok := r.lookup(n.keys)
			if !ok {
				if r.opts.Strict {
					return &MissingError{Name: n.text}
				}
				continue
			}
			mode := r.opts.Escape
			if n.kind == rawNode {
				mode = EscapeNone
			}
			r.value(v, mode)
		case sectionNode:
			if err := r.section(n); err != nil {
				return err
			}
		case invertedNode:
			if v, ok := r.lookup(n.keys); !ok || !truthy(v) {
				if err := r.render(n.nodes); err != nil {
					return err
				}
			}
		case partialNode:
			if err := r.partial(n); err != nil {
				return err
			}
		}
		if len(r.out) > r.opts.MaxOutput {
			return fmt.Errorf("%w: the output is longer than %d bytes", ErrLimit, r.opts.MaxOutput)
		}
	}
	return nil
}

// text writes text of the template. The text of a partial rendered in
// JSON mode is escaped like a value: the partial tag sits inside a JSON
// string, so what the partial holds is that string's content.
func (r *renderer) text(s string) {
	if r.depth > 0 && r.opts.Escape == EscapeJSON {
		r.out = appendJSON(r.out, s)
		return
	}
	r.out = append(r.out, s...)
}

func (r *renderer) section(n *node) error {
	v, ok := r.lookup(n.keys)
	if !ok || !truthy(v) {
		return nil
	}
	if l, isList := asList(v); isList {
		r.steps += l.len()
		for i := 0; i < l.len(); i++ {
			r.stack = append(r.stack, l.at(i))
			err := r.render(n.nodes)
			r.stack = r.stack[:len(r.stack)-1]
			if err != nil {
				return err
			}
		}
		return nil
	}
	r.stack = append(r.stack, v)
	err := r.render(n.nodes)
	r.stack = r.stack[:len(r.stack)-1]
	return err
}

func (r *renderer) partial(n *node) error {
	p := r.t.partials[n.text]
	if p == nil {
		if r.opts.Strict {
			return &MissingError{Name: n.text, Partial: true}
		}
		return nil
	}
	if r.depth >= r.opts.MaxDepth {
		return fmt.Errorf("%w: partials nest more than %d deep (at %q)", ErrLimit, r.opts.MaxDepth, n.text)
	}
	// A partial that does not stand alone on its line is not indented; one
	// that does is indented by the white space before it, within the
	// indentation of the partial it is in.
	outer := r.indent
	r.indent = ""
	if n.standalone {
		r.indent = outer + n.indent
	}
	r.depth++
	err := r.render(p.nodes)
	r.depth--
	r.indent = outer
	return err
}
