package gateway

// pick returns the index of the child of a loadbalance node the request
// goes to, among those not in skip (nil: none): the first in the ranking
// of the request's sticky value when the node has a sticky key and the
// request the value, else one drawn by weight. A child of weight 0 is
// never picked; -1 means no child is left.
func (x *run) pick(n *planNode, skip []bool) int {
	if n.sticky != "" {
		if v, ok := stickyValue(n.sticky, x.r, x.st.opts.Metadata); ok {
			return rendezvous(n, v, skip)
		}
	}
	total := 0.0
	for i, c := range n.children {
		if skip == nil || !skip[i] {
			total += c.weight
		}
	}
	if !(total > 0) {
		return -1
	}
	v := x.g.random() * total
	last := -1
	for i, c := range n.children {
		if c.weight <= 0 || skip != nil && skip[i] {
			continue
		}
		if v < c.weight {
			return i
		}
		v -= c.weight
		last = i
	}
	return last // rounding
}

// choose returns the child of a conditional node named by the first
// matching condition, or by the default. Matching stops when the caller
// leaves (the error is the context's), or at a value too long for a
// $regex (a 400 naming the field).
func (x *run) choose(n *planNode) (*planNode, error) {
	in := x.match
	if in == nil {
		in = &matchInput{ctx: x.r.Context(), metadata: x.st.opts.Metadata, body: x.body}
		x.match = in
	}
	name := n.def
	for _, c := range n.conditions {
		if c.match == nil {
			continue
		}
		matched := c.match.match(in)
		if in.err != nil {
			return nil, in.err
		}
		if matched {
			name = c.Then
			break
		}
	}
	if name != "" {
		for _, c := range n.children {
			if c.name == name {
				return c, nil
			}
		}
	}
	return nil, badRequest(CodeInvalidConfig, HeaderConfig, "no condition of the config matches the request, and the config names no default target")
}
