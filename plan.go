package gateway

import (
	"context"
	"errors"
	"slices"
	"time"
)

// planNode is one node of a request's routing plan: a leaf holds a Target,
// an inner node a strategy over its children. Plans are built per request
// from a parsed Config (or from the selection headers, as a single leaf).
type planNode struct {
	mode          Mode
	onStatusCodes []int
	conditions    []Condition
	def           string
	sticky        string // the sticky key of a loadbalance node; "": none
	name          string
	weight        float64
	children      []*planNode
	target        *routedTarget // non-nil on leaves only
	config        string        // on the root: the id of the saved config it was built from

	input, output []HookRef // on the root: the guardrails of the config's top level
	hooked        bool      // the node or one below it attaches guardrails
}

// planNeeds says what a plan needs of the request body.
type planNeeds struct {
	replay bool // it may be sent more than once
	read   bool // it must be looked into
}

// translates, when not nil, reports whether a provider kind translates
// the request (see Translator), which must then be read.
func (n *planNode) needs(p *planNeeds, cacheRoute bool, translates func(slug string) bool) {
	if t := n.target; t != nil {
		if (t.retry != nil && t.retry.Attempts > 0) || (cacheRoute && t.cache != nil) {
			p.replay = true
		}
		if len(t.overrideParams) > 0 || translates != nil && translates(t.Provider) {
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
		c.needs(p, cacheRoute, translates)
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

// routedTarget is a plan leaf: the Target, which is all its Provider sees
// (destination and credentials), and how the gateway sends the request
// there, inherited down the config tree.
type routedTarget struct {
	Target
	forwardHeaders []string // canonical names
	overrideParams map[string]any
	requestTimeout time.Duration // each attempt's time to response headers; 0: none
	idleTimeout    time.Duration // the wait for each next piece of an answer; 0: Options.StreamIdleTimeout
	retry          *RetryConfig
	cache          *CacheConfig

	hookIn, hookOut []HookRef      // the guardrails of the nodes down to it, the top level's left out
	breaker         *BreakerConfig // nil: the target has no circuit breaker
	breakerKey      string         // the target's identity (see Breakers), when breaker is set
	workspace       string         // the workspace of its virtual key
	prices          PriceTable     // its virtual key's own prices, before Options.Prices
}
