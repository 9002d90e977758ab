package gateway

import (
	"math"
	"net/http"
	"strings"
)

// StickyConfig is a loadbalance strategy's sticky: requests that carry the
// same value of Key reach the same target while its circuit breaker is
// closed, so that a provider's prompt cache keeps serving a conversation.
// Key is "metadata.NAME" (a key of the request's metadata) or
// "header.NAME" (a request header). A request without the value is drawn
// by weight as usual. The targets are ranked for each value by weighted
// rendezvous hashing, so that across many values each target gets its
// weight's share; when the first is skipped (its breaker is open), the
// request goes to the next healthy one in that value's ranking.
type StickyConfig struct {
	Key string `json:"key"`
}

// validate checks c, the sticky of a node of mode at path.
func (c *StickyConfig) validate(path string, mode Mode) error {
	if mode != ModeLoadbalance {
		return configError(path, "is only for strategy mode loadbalance")
	}
	name, ok := strings.CutPrefix(c.Key, "metadata.")
	if !ok {
		if name, ok = strings.CutPrefix(c.Key, "header."); ok && !validHeaderName(name) {
			return configError(join(path, "key"), "header.NAME must name a valid header")
		}
	}
	if !ok || name == "" || len(name) > 128 {
		return configError(join(path, "key"), `must be "metadata.NAME" or "header.NAME", NAME at most 128 bytes`)
	}
	return nil
}

// stickyValue returns the request's value of the sticky key k.
func stickyValue(k string, r *http.Request, metadata map[string]string) (string, bool) {
	if name, ok := strings.CutPrefix(k, "metadata."); ok {
		v, ok := metadata[name]
		return v, ok && v != ""
	}
	v := r.Header.Get(strings.TrimPrefix(k, "header."))
	return v, v != ""
}

// rendezvous returns the child of n with the highest weighted rendezvous
// score for value, among those not in skip; -1 when none has a weight.
// The score of a child of weight w is w / -ln(u), u uniform in (0, 1)
// drawn from the value and the child's index, whose maximum picks each
// child with probability w / Σw over values.
func rendezvous(n *planNode, value string, skip []bool) int {
	best, bestScore := -1, 0.0
	for i, c := range n.children {
		if c.weight <= 0 || skip != nil && skip[i] {
			continue
		}
		h := fnv64(value, uint64(i))
		u := (float64(h>>11) + 0.5) / (1 << 53) // in (0, 1)
		score := c.weight / -math.Log(u)
		if best < 0 || score > bestScore {
			best, bestScore = i, score
		}
	}
	return best
}

// fnv64 hashes s with FNV-1a, then mixes in i with splitmix64's finalizer,
// so that the children's draws for one value are independent. It is the
// same in every process, so that replicas agree on a value's target.
func fnv64(s string, i uint64) uint64 {
	h := uint64(14695981039346656037)
	for j := 0; j < len(s); j++ {
		h ^= uint64(s[j])
		h *= 1099511628211
	}
	h ^= (i + 1) * 0x9e3779b97f4a7c15
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}
