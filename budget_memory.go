package gateway

import (
	"cmp"
	"context"
	"slices"
	"sync"
)

// MemoryUsageCounter is a UsageCounter kept in the process: for a single
// replica, and tests. Its zero value is ready to use; it is safe for
// concurrent use. Its counters are lost when the process ends.
type MemoryUsageCounter struct {
	mu       sync.Mutex
	policies map[string]map[string]*UsageEntity // by policy id, then value key
}

var _ UsageCounter = (*MemoryUsageCounter)(nil)

// entity returns the counter of e, made and rolled over to e.Period.
// It needs c.mu.
func (c *MemoryUsageCounter) entity(e UsageEntityKey) *UsageEntity {
	if c.policies == nil {
		c.policies = make(map[string]map[string]*UsageEntity)
	}
	m := c.policies[e.PolicyID]
	if m == nil {
		m = make(map[string]*UsageEntity)
		c.policies[e.PolicyID] = m
	}
	u := m[e.ValueKey]
	if u == nil {
		u = &UsageEntity{UsageEntityKey: e}
		m[e.ValueKey] = u
	}
	if u.Period != e.Period {
		*u = UsageEntity{UsageEntityKey: e, Epoch: u.Epoch + 1}
	}
	return u
}

// Reserve implements UsageCounter.
func (c *MemoryUsageCounter) Reserve(_ context.Context, e UsageEntityKey, limit, estimate float64) (UsageReservation, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.entity(e)
	r := UsageReservation{UsageEntityKey: e, Estimate: estimate, Usage: u.Usage, Epoch: u.Epoch}
	if u.Usage+u.Reserved < limit {
		r.Allowed = true
		u.Reserved += estimate
	}
	return r, nil
}

// Settle implements UsageCounter.
func (c *MemoryUsageCounter) Settle(_ context.Context, r UsageReservation, period string, used float64, th UsageThresholds) (UsageSettlement, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.entity(UsageEntityKey{PolicyID: r.PolicyID, ValueKey: r.ValueKey, Period: period})
	if r.Allowed && r.Period == u.Period && r.Epoch == u.Epoch {
		u.Reserved = max(u.Reserved-r.Estimate, 0)
	}
	u.Usage += used
	var s UsageSettlement
	s.Usage = u.Usage
	if th.Alert >= 0 && u.Usage >= th.Alert && !u.ThresholdAlerted {
		u.ThresholdAlerted, s.AlertCrossed = true, true
	}
	if u.Usage >= th.Limit && !u.ExhaustedAlerted {
		u.ExhaustedAlerted, s.LimitCrossed = true, true
	}
	return s, nil
}

// UsageEntities implements UsageCounter: copies, by value key.
func (c *MemoryUsageCounter) UsageEntities(_ context.Context, policyID string) ([]UsageEntity, error) {
	c.mu.Lock()
	out := make([]UsageEntity, 0, len(c.policies[policyID]))
	for _, u := range c.policies[policyID] {
		out = append(out, *u)
	}
	c.mu.Unlock()
	slices.SortFunc(out, func(a, b UsageEntity) int { return cmp.Compare(a.ValueKey, b.ValueKey) })
	return out, nil
}

// ResetUsage implements UsageCounter.
func (c *MemoryUsageCounter) ResetUsage(_ context.Context, policyID, valueKey string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.policies[policyID][valueKey]
	if u == nil {
		return false, nil
	}
	*u = UsageEntity{UsageEntityKey: u.UsageEntityKey, Epoch: u.Epoch + 1}
	return true, nil
}
