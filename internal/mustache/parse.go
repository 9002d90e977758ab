package mustache

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Template is a parsed template together with the partials it uses. A
// Template never changes after Parse returns, so Render may be called from
// several goroutines at once.
type Template struct {
	nodes []node
	// partials holds every partial reached from the template, by name; a
	// name whose lookup failed maps to nil.
	partials map[string]*partial
	vars     []string
	// size is the length of the template and its partials, a first guess
	// at the length of the output.
	size int
}

// partial is a parsed partial template.
type partial struct {
	nodes []node
}

type nodeKind uint8

const (
	textNode     nodeKind = iota // text, written as it is
	varNode                      // {{name}}, escaped
	rawNode                      // {{{name}}} or {{&name}}, not escaped
	sectionNode                  // {{#name}}…{{/name}}
	invertedNode                 // {{^name}}…{{/name}}
	partialNode                  // {{>name}}
	indentNode                   // the start of a line of a partial
)

// node is one piece of a parsed template.
type node struct {
	kind nodeKind
	// text is the text of a textNode, and the name as written for the
	// other kinds.
	text string
	// keys is the name split at its dots; nil for the implicit iterator.
	keys []string
	// standalone says that a partial tag stands alone on its line, and
	// indent is the white space before it.
	standalone bool
	indent     string
	// nodes is the body of a section.
	nodes []node
}

// ParseError reports a template that is not well formed, with the position
// of the fault.
type ParseError struct {
	// Partial is the name of the partial whose text is at fault, or "" for
	// the template itself.
	Partial string
	// Line and Column give the position, both counted from 1; Column
	// counts characters.
	Line, Column int
	// Reason says what is wrong.
	Reason string
}

// Error returns the reason with its position.
func (e *ParseError) Error() string {
	if e.Partial != "" {
		return fmt.Sprintf("mustache: partial %q: line %d, column %d: %s", e.Partial, e.Line, e.Column, e.Reason)
	}
	return fmt.Sprintf("mustache: line %d, column %d: %s", e.Line, e.Column, e.Reason)
}

// Parse parses the template src. partials returns the text of the partial
// with the given name and whether there is one; Parse calls it once for
// each partial name the template reaches, directly or through other
// partials. A nil partials function finds none. A partial that is not found
// renders as the empty string (or fails a strict render). Parse reports a
// malformed template or partial as a *ParseError.
func Parse(src string, partials func(name string) (string, bool)) (*Template, error) {
	nodes, err := parse(src, "", false)
	if err != nil {
		return nil, err
	}
	t := &Template{nodes: nodes, partials: map[string]*partial{}, size: len(src)}
	pending := partialNames(nodes, nil)
	for len(pending) > 0 {
		name := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		if _, seen := t.partials[name]; seen {
			continue
		}
		var text string
		found := false
		if partials != nil {
			text, found = partials(name)
		}
		if !found {
			t.partials[name] = nil
			continue
		}
		pn, err := parse(text, name, true)
		if err != nil {
			return nil, err
		}
		t.partials[name] = &partial{nodes: pn}
		t.size += len(text)
		pending = partialNames(pn, pending)
	}
	t.vars = t.collectVars()
	return t, nil
}

// partialNames appends the names of the partial tags in nodes to names.
func partialNames(nodes []node, names []string) []string {
	for i := range nodes {
		switch n := &nodes[i]; n.kind {
		case partialNode:
			names = append(names, n.text)
		case sectionNode, invertedNode:
			names = partialNames(n.nodes, names)
		}
	}
	return names
}

// Vars returns the names the template reads from the data it is rendered
// with, as written and in the order they first appear, partials included:
// the names of variables and of sections. Names inside a section are left
// out, since they are looked up in the section's value first and only then
// in the data; the section's own name is listed. The implicit iterator is
// not a name. The caller may modify the returned slice.
func (t *Template) Vars() []string {
	return append([]string(nil), t.vars...)
}

func (t *Template) collectVars() []string {
	var vars []string
	seen := map[string]bool{}
	visited := map[string]bool{}
	var walk func(nodes []node)
	walk = func(nodes []node) {
		for i := range nodes {
			n := &nodes[i]
			switch n.kind {
			case varNode, rawNode, sectionNode, invertedNode:
				if n.keys != nil && !seen[n.text] {
					seen[n.text] = true
					vars = append(vars, n.text)
				}
			case partialNode:
				if p := t.partials[n.text]; p != nil && !visited[n.text] {
					visited[n.text] = true
					walk(p.nodes)
				}
			}
			// An inverted section renders in the context around it.
			if n.kind == invertedNode {
				walk(n.nodes)
			}
		}
	}
	walk(t.nodes)
	return vars
}

// parser holds the state of one parse of one text.
type parser struct {
	src     string
	partial string // the partial's name; "" for the template
	open    string // the current opening delimiter
	close   string // the current closing delimiter
	// indent says whether to mark line starts with indentNodes, which a
	// partial needs in case it is included standalone.
	indent     bool
	lastIndent int // the offset of the last indentNode, or -1
	stack      []frame
}

// frame is a section being parsed.
type frame struct {
	kind  nodeKind
	name  string
	keys  []string
	pos   int // the offset of the opening tag
	nodes []node
}

func parse(src, partial string, indent bool) ([]node, error) {
	p := &parser{src: src, partial: partial, open: "{{", close: "}}", indent: indent, lastIndent: -1}
	p.stack = []frame{{}}
	pos := 0
	for {
		i := strings.Index(src[pos:], p.open)
		if i < 0 {
			p.text(pos, len(src))
			break
		}
		start := pos + i
		p.text(pos, start)
		end, err := p.tag(start)
		if err != nil {
			return nil, err
		}
		pos = end
	}
	if len(p.stack) > 1 {
		f := p.stack[len(p.stack)-1]
		return nil, p.errorf(f.pos, "section %q is not closed", f.name)
	}
	return p.stack[0].nodes, nil
}

func (p *parser) add(n node) {
	f := &p.stack[len(p.stack)-1]
	f.nodes = append(f.nodes, n)
}

// text adds the text src[from:to], marking each line start in
// [from, to] that is not the end of the text.
func (p *parser) text(from, to int) {
	for {
		if p.lineStart(from) {
			p.lastIndent = from
			p.add(node{kind: indentNode})
		}
		if from == to {
			return
		}
		next := to
		if p.indent {
			if j := strings.IndexByte(p.src[from:to], '\n'); j >= 0 {
				next = from + j + 1
			}
		}
		p.add(node{kind: textNode, text: p.src[from:next]})
		from = next
	}
}

// lineStart reports whether an indentNode belongs at offset i.
func (p *parser) lineStart(i int) bool {
	return p.indent && i < len(p.src) && (i == 0 || p.src[i-1] == '\n') && p.lastIndent != i
}

// tag parses the tag that starts at offset start and returns the offset
// after it (after its line, for a standalone tag).
func (p *parser) tag(start int) (int, error) {
	src := p.src
	i := start + len(p.open)
	var sigil byte
	if i < len(src) {
		switch src[i] {
		case '#', '^', '/', '>', '&', '!', '=', '{':
			sigil = src[i]
			i++
		}
	}
	closing := p.close
	switch sigil {
	case '{':
		closing = "}" + p.close
	case '=':
		closing = "=" + p.close
	}
	j := strings.Index(src[i:], closing)
	if j < 0 {
		return 0, p.errorf(start, "tag is not closed (expected %q)", closing)
	}
	content := src[i : i+j]
	end := i + j + len(closing)

	var indent string
	standalone := false
	switch sigil {
	case '#', '^', '/', '>', '!', '=':
		if ls, le, ok := p.standalone(start, end); ok {
			p.trimLine(start - ls)
			indent = src[ls:start]
			standalone = true
			end = le
		}
	}

	switch sigil {
	case '!':
		return end, nil
	case '=':
		fields := strings.Fields(content)
		if len(fields) != 2 || strings.Contains(content, "=") {
			return 0, p.errorf(start, "set-delimiter tag needs two delimiters without '=' separated by white space")
		}
		p.open, p.close = fields[0], fields[1]
		return end, nil
	case '>':
		name, err := p.name(start, content)
		if err != nil {
			return 0, err
		}
		p.add(node{kind: partialNode, text: name, standalone: standalone, indent: indent})
		return end, nil
	}

	name, err := p.name(start, content)
	if err != nil {
		return 0, err
	}
	keys, err := p.keys(start, name)
	if err != nil {
		return 0, err
	}
	switch sigil {
	case '#', '^':
		kind := sectionNode
		if sigil == '^' {
			kind = invertedNode
		}
		p.stack = append(p.stack, frame{kind: kind, name: name, keys: keys, pos: start})
	case '/':
		if len(p.stack) == 1 {
			return 0, p.errorf(start, "closing tag %q has no open section", name)
		}
		f := p.stack[len(p.stack)-1]
		if f.name != name {
			return 0, p.errorf(start, "closing tag %q does not match open section %q", name, f.name)
		}
		p.stack = p.stack[:len(p.stack)-1]
		p.add(node{kind: f.kind, text: f.name, keys: f.keys, nodes: f.nodes})
	case '&', '{':
		p.add(node{kind: rawNode, text: name, keys: keys})
	default:
		p.add(node{kind: varNode, text: name, keys: keys})
	}
	return end, nil
}

// standalone reports whether the tag src[start:end] is alone on its line
// but for spaces and tabs, and if so where the line starts and where the
// next one starts.
func (p *parser) standalone(start, end int) (ls, le int, ok bool) {
	src := p.src
	ls = start
	for ls > 0 && (src[ls-1] == ' ' || src[ls-1] == '\t') {
		ls--
	}
	if ls > 0 && src[ls-1] != '\n' {
		return 0, 0, false
	}
	le = end
	for le < len(src) && (src[le] == ' ' || src[le] == '\t') {
		le++
	}
	switch {
	case le == len(src):
	case src[le] == '\n':
		le++
	case strings.HasPrefix(src[le:], "\r\n"):
		le += 2
	default:
		return 0, 0, false
	}
	return ls, le, true
}

// trimLine removes the n bytes of white space that the current section's
// nodes end with, and the line start before them, when a standalone tag
// removes its line.
func (p *parser) trimLine(n int) {
	f := &p.stack[len(p.stack)-1]
	if n > 0 {
		last := &f.nodes[len(f.nodes)-1]
		last.text = last.text[:len(last.text)-n]
		if last.text == "" {
			f.nodes = f.nodes[:len(f.nodes)-1]
		}
	}
	if k := len(f.nodes); k > 0 && f.nodes[k-1].kind == indentNode {
		f.nodes = f.nodes[:k-1]
	}
}

// name checks a tag's content and returns it without its padding.
func (p *parser) name(start int, content string) (string, error) {
	name := strings.TrimSpace(content)
	if name == "" {
		return "", p.errorf(start, "tag has no name")
	}
	if strings.ContainsAny(name, " \t\r\n") {
		return "", p.errorf(start, "tag name %q contains white space", name)
	}
	return name, nil
}

// keys splits a dotted name; the implicit iterator has no keys.
func (p *parser) keys(start int, name string) ([]string, error) {
	if name == "." {
		return nil, nil
	}
	keys := strings.Split(name, ".")
	for _, k := range keys {
		if k == "" {
			return nil, p.errorf(start, "name %q has an empty part", name)
		}
	}
	return keys, nil
}

func (p *parser) errorf(offset int, format string, args ...any) error {
	before := p.src[:offset]
	line := strings.Count(before, "\n") + 1
	col := utf8.RuneCountInString(before[strings.LastIndexByte(before, '\n')+1:]) + 1
	return &ParseError{Partial: p.partial, Line: line, Column: col, Reason: fmt.Sprintf(format, args...)}
}
