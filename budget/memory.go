package budget

import (
	"cmp"
	"context"
	"slices"
	"sync"
)

// MemoryCounter is a Counter kept in the process: for a single
// replica, and tests. Its zero value is ready to use; it is safe for
// concurrent use. Its counters are lost when the process ends.
type MemoryCounter struct {
	mu       sync.Mutex
	policies map[string]map[string]*Entity // by policy id, then value key
}

var _ Counter = (*MemoryCounter)(nil)

// entity returns the counter of e, made and rolled over to e.Period.
// It needs c.mu.
func (c *MemoryCounter) entity(e EntityKey) *Entity {
	if c.policies == nil {
		c.policies = make(map[string]map[string]*Entity)
	}
	m := c.policies[e.PolicyID]
	if m == nil {
		m = make(map[string]*Entity)
		c.policies[e.PolicyID] = m
	}
	u := m[e.ValueKey]
	if u == nil {
		u = &Entity{EntityKey: e}
		m[e.ValueKey] = u
	}
	if u.Period != e.Period {
		*u = Entity{EntityKey: e, Epoch: u.Epoch + 1}
	}
	return u
}

// Reserve implements Counter.
func (c *MemoryCounter) Reserve(_ context.Context, e EntityKey, limit, estimate float64) (Reservation, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.entity(e)
	r := Reservation{EntityKey: e, Estimate: estimate, Usage: u.Usage, Epoch: u.Epoch}
	if u.Usage+u.Reserved < limit {
		r.Allowed = true
		u.Reserved += estimate
	}
	return r, nil
}

// Settle implements Counter.
func (c *MemoryCounter) Settle(_ context.Context, r Reservation, period string, used float64, th Thresholds) (Settlement, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.entity(EntityKey{PolicyID: r.PolicyID, ValueKey: r.ValueKey, Period: period})
	if r.Allowed && r.Period == u.Period && r.Epoch == u.Epoch {
		u.Reserved = max(u.Reserved-r.Estimate, 0)
	}
	u.Usage += used
	var s Settlement
	s.Usage = u.Usage
	if th.Alert >= 0 && u.Usage >= th.Alert && !u.ThresholdAlerted {
		u.ThresholdAlerted, s.AlertCrossed = true, true
	}
	if u.Usage >= th.Limit && !u.ExhaustedAlerted {
		u.ExhaustedAlerted, s.LimitCrossed = true, true
	}
	return s, nil
}

// UsageEntities implements Counter: copies, by value key.
func (c *MemoryCounter) UsageEntities(_ context.Context, policyID string) ([]Entity, error) {
	c.mu.Lock()
	out := make([]Entity, 0, len(c.policies[policyID]))
	for _, u := range c.policies[policyID] {
		out = append(out, *u)
	}
	c.mu.Unlock()
	slices.SortFunc(out, func(a, b Entity) int { return cmp.Compare(a.ValueKey, b.ValueKey) })
	return out, nil
}

// ResetUsage implements Counter.
func (c *MemoryCounter) ResetUsage(_ context.Context, policyID, valueKey string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.policies[policyID][valueKey]
	if u == nil {
		return false, nil
	}
	*u = Entity{EntityKey: u.EntityKey, Epoch: u.Epoch + 1}
	return true, nil
}
