// Parts of this file are adapted from the Go standard library's
// html/template (escape.go), Copyright 2011 The Go Authors, used under its
// BSD-style licence
// (the LICENSE file beside this one).

package htmltmpl

import (
	"bytes"
	"fmt"
	"text/template/parse"
)

// A compiled template is a parsed template escaped for the context it
// starts in: its text as html/template rewrites it, and each action with
// the escaper its context needs.
type compiled struct {
	tree  *parse.Tree
	nodes []node
	out   context // the context it ends in
	done  bool    // out is known (false while its body compiles)
	again bool    // called from its own body, out assumed
}

// node is one of text, *action, *branch and *call.
type node any

// text is template text to write as it is.
type text []byte

// action is an action: a declaration (esc is escNone) or a value written
// with esc.
type action struct {
	n   *parse.ActionNode
	esc escaper
}

// branch is an if, with or range.
type branch struct {
	typ            parse.NodeType
	n              *parse.BranchNode
	list, elseList []node
}

// call is a {{template}} call of a compiled variant.
type call struct {
	n *parse.TemplateNode
	t *compiled
}

// compiler escapes the templates of a set reachable from one entry.
type compiler struct {
	trees    map[string]*parse.Tree
	variants map[string]*compiled // by context.mangle(name)
}

// template compiles the template name for start context c.
func (cm *compiler) template(name string, c context, at parse.Node, from *parse.Tree) (*compiled, error) {
	key := c.mangle(name)
	if t, ok := cm.variants[key]; ok {
		t.again = t.again || !t.done
		return t, nil
	}
	tree := cm.trees[name]
	if tree == nil || tree.Root == nil {
		return nil, errorAt(from, at, "no such template %q", name)
	}
	t := &compiled{tree: tree, out: c}
	cm.variants[key] = t
	nodes, out, err := cm.list(tree, c, tree.Root)
	if err != nil {
		return nil, err
	}
	if t.again && out != c {
		// A recursive call assumed the template ends where it starts.
		return nil, errorAt(tree, tree.Root, "template %q is called recursively and ends in another context", name)
	}
	t.nodes, t.out, t.done = nodes, out, true
	return t, nil
}

// list compiles the nodes of l from context c.
func (cm *compiler) list(tree *parse.Tree, c context, l *parse.ListNode) ([]node, context, error) {
	if l == nil {
		return nil, c, nil
	}
	out := make([]node, 0, len(l.Nodes))
	for _, n := range l.Nodes {
		var (
			m   node
			err error
		)
		switch n := n.(type) {
		case *parse.TextNode:
			var s []byte
			s, c, err = escapeText(c, n.Text)
			if err != nil {
				return nil, c, errorAt(tree, n, "%v", err)
			}
			if len(s) == 0 {
				continue
			}
			m = text(s)
		case *parse.ActionNode:
			a := &action{n: n}
			if len(n.Pipe.Decl) == 0 {
				c = nudge(c)
				if a.esc, err = escaperFor(c); err != nil {
					return nil, c, errorAt(tree, n, "%s: %v", n, err)
				}
			}
			m = a
		case *parse.IfNode:
			m, c, err = cm.branch(tree, c, parse.NodeIf, &n.BranchNode)
		case *parse.WithNode:
			m, c, err = cm.branch(tree, c, parse.NodeWith, &n.BranchNode)
		case *parse.RangeNode:
			m, c, err = cm.branch(tree, c, parse.NodeRange, &n.BranchNode)
		case *parse.TemplateNode:
			var t *compiled
			if t, err = cm.template(n.Name, c, n, tree); err == nil {
				m, c = &call{n: n, t: t}, t.out
			}
		case *parse.CommentNode:
			continue
		default:
			err = errorAt(tree, n, "%s is not supported", n)
		}
		if err != nil {
			return nil, c, err
		}
		out = append(out, m)
	}
	return out, c, nil
}

// branch compiles an if, with or range from context c.
func (cm *compiler) branch(tree *parse.Tree, c context, typ parse.NodeType, n *parse.BranchNode) (node, context, error) {
	b := &branch{typ: typ, n: n}
	var (
		c0  context
		err error
	)
	if b.list, c0, err = cm.list(tree, c, n.List); err != nil {
		return nil, c, err
	}
	if typ == parse.NodeRange && c0 != c {
		// The body can run again, starting where it ended.
		_, c1, err := cm.list(tree, c0, n.List)
		if err != nil {
			return nil, c, err
		}
		var ok bool
		if c0, ok = join(c0, c1); !ok {
			return nil, c, errorAt(tree, n, "{{range}} ends in another context than it starts in")
		}
	}
	var c1 context
	if b.elseList, c1, err = cm.list(tree, c, n.ElseList); err != nil {
		return nil, c, err
	}
	out, ok := join(c0, c1)
	if !ok {
		return nil, c, errorAt(tree, n, "the branches of %s end in different contexts", n)
	}
	return b, out, nil
}

// escaperFor returns the escaper of an action in context c, or why an
// action may not appear there.
func escaperFor(c context) (escaper, error) {
	if c.delim == delimSpaceOrTagEnd {
		return escNone, fmt.Errorf("an action in an unquoted attribute value is not supported")
	}
	switch c.state {
	case stateText, stateRCDATA:
		return escHTML, nil
	case stateAttr:
		return escHTML, nil
	case stateURL:
		switch c.urlPart {
		case urlPartNone:
			return escURLStart, nil
		case urlPartPreQuery:
			return escURLPath, nil
		case urlPartQueryOrFrag:
			return escURLQuery, nil
		}
		return escNone, fmt.Errorf("an action in an ambiguous place within a URL is not supported")
	case stateMetaContent:
		return escMetaPlain, nil
	case stateMetaContentURL:
		return escMetaURL, nil
	case stateTag, stateAttrName, stateAfterName, stateBeforeValue:
		return escNone, fmt.Errorf("an action in a tag or attribute name is not supported")
	case stateHTMLCmt:
		return escNone, fmt.Errorf("an action in an HTML comment is not supported")
	}
	return escNone, fmt.Errorf("an action in a script, a style or an event handler, style or srcset attribute is not supported")
}

var doctype = []byte("<!DOCTYPE")

// escapeText returns s as html/template writes it from context c, and the
// context after it: a < that starts no tag in text becomes &lt;, and HTML
// comments go.
func escapeText(c context, s []byte) ([]byte, context, error) {
	var b []byte
	written, i := 0, 0
	for i != len(s) {
		c1, nread, err := contextAfterText(c, s[i:])
		if err != nil {
			return nil, c, err
		}
		i1 := i + nread
		if c.state == stateText || c.state == stateRCDATA {
			end := i1
			if c1.state != c.state {
				for j := end - 1; j >= i; j-- {
					if s[j] == '<' {
						end = j
						break
					}
				}
			}
			for j := i; j < end; j++ {
				if s[j] == '<' && !bytes.HasPrefix(bytes.ToUpper(s[j:]), doctype) {
					b = append(b, s[written:j]...)
					b = append(b, "&lt;"...)
					written = j + 1
				}
			}
		} else if c.state == stateHTMLCmt {
			written = i1
		}
		if c.state != c1.state && c1.state == stateHTMLCmt {
			// Keep what precedes "<!--".
			b = append(b, s[written:i1-4]...)
			written = i1
		}
		if i == i1 && c.state == c1.state {
			return nil, c, fmt.Errorf("no progress in %q", s[i:])
		}
		c, i = c1, i1
	}
	if written == 0 {
		return s, c, nil
	}
	if c.state != stateHTMLCmt {
		b = append(b, s[written:]...)
	}
	return b, c, nil
}

// errorAt returns an error located at node n of tree.
func errorAt(tree *parse.Tree, n parse.Node, format string, args ...any) error {
	if tree == nil {
		return fmt.Errorf("htmltmpl: %s", fmt.Sprintf(format, args...))
	}
	loc := tree.ParseName
	if n != nil {
		loc, _ = tree.ErrorContext(n)
	}
	return fmt.Errorf("htmltmpl: %s: %s", loc, fmt.Sprintf(format, args...))
}
