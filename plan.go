package gateway

import (
	"context"
	"errors"
	"slices"
)

// planNode is one node of a request's routing plan: a leaf holds a Target,
// an inner node a strategy over its children. Plans are built per request
// from a parsed Config (or from the selection headers, as a single leaf).
type planNode struct {
	mode          string
	onStatusCodes []int
	conditions    []Condition
	def           string
	name          string
	weight        float64
	children      []*planNode
	target        *Target // non-nil on leaves only
}

// planNeeds says what a plan needs of the request body.
type planNeeds struct {
	replay bool // it may be sent more than once
	read   bool // it must be looked into
}

func (n *planNode) needs(p *planNeeds, cacheRoute bool) {
	if t := n.target; t != nil {
		if (t.Retry != nil && t.Retry.Attempts > 0) || (cacheRoute && t.Cache != nil) {
			p.replay = true
		}
		if len(t.OverrideParams) > 0 {
			p.read = true
		}
		return
	}
	if n.mode == ModeFallback && len(n.children) > 1 {
		p.replay = true
	}
	if n.mode == ModeConditional {
		for _, c := range n.conditions {
			if c.params {
				p.read = true
			}
		}
	}
	for _, c := range n.children {
		c.needs(p, cacheRoute)
	}
}

// movesOn reports whether a fallback node tries its next target after out.
func (n *planNode) movesOn(out outcome) bool {
	if out.held != nil {
		return n.movesOnStatus(out.held.status)
	}
	return out.err != nil && !errors.Is(out.err, context.Canceled)
}

func (n *planNode) movesOnStatus(code int) bool {
	if len(n.onStatusCodes) > 0 {
		return slices.Contains(n.onStatusCodes, code)
	}
	return code < 200 || code > 299
}
