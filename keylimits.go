package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"

	lru "github.com/hashicorp/golang-lru/v2"
)

// An API key's rate_limits (APIKey.RateLimits) are enforced as rate-limits
// policies whose condition is that key and whose group is the key itself:
// each entry is one bucket, counted by the same Limiter, admission,
// charging and refunds as the stored policies (limits.go).

// keyRateLimit is one entry of an API key's rate_limits: the type, unit
// and value of a rate-limits policy.
type keyRateLimit struct {
	Type  string
	Unit  string
	Value float64
}

// parseKeyRateLimits checks rate_limits, a JSON array of objects of type,
// unit and value, each allowed the values of a rate-limits policy's
// fields (see RateLimitsPolicy.check), and returns its entries. No two
// entries may have the same type and unit: they would count in one
// bucket. The 400 names the offending field, e.g. rate_limits[0].unit.
func parseKeyRateLimits(raw []byte) ([]keyRateLimit, *Error) {
	var entries []json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, policyInvalid("rate_limits", "rate_limits must be an array of objects of type, unit and value, or null")
	}
	out := make([]keyRateLimit, 0, len(entries))
	for i, e := range entries {
		p := "rate_limits[" + strconv.Itoa(i) + "]"
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(e, &fields); err != nil || fields == nil {
			return nil, policyInvalid(p, p+" must be an object of type, unit and value")
		}
		for _, k := range slices.Sorted(maps.Keys(fields)) {
			if k != "type" && k != "unit" && k != "value" {
				return nil, policyInvalid(p+"."+k, "unknown field "+quoteShort(k)+": an entry of rate_limits has type, unit and value")
			}
		}
		var lim keyRateLimit
		var value *float64
		for _, f := range []string{"type", "unit", "value"} {
			if _, ok := fields[f]; !ok {
				return nil, policyInvalid(p+"."+f, p+"."+f+" is required")
			}
		}
		switch {
		case json.Unmarshal(fields["type"], &lim.Type) != nil || lim.Type != PolicyRequests && lim.Type != PolicyTokens:
			return nil, policyInvalid(p+".type", p+".type must be requests or tokens")
		case json.Unmarshal(fields["unit"], &lim.Unit) != nil || policyPeriod(lim.Unit) == 0:
			return nil, policyInvalid(p+".unit", p+".unit must be rpm, rph or rpd")
		case json.Unmarshal(fields["value"], &value) != nil || value == nil || !(*value > 0) || math.IsInf(*value, 0):
			return nil, policyInvalid(p+".value", p+".value must be a number greater than 0")
		case lim.Type == PolicyRequests && *value < 1:
			// Each request costs 1: below 1 no request could ever be admitted.
			return nil, policyInvalid(p+".value", p+".value must be at least 1 for requests, since each request costs 1; use a longer unit for fewer requests")
		}
		lim.Value = *value
		for j, o := range out {
			if o.Type == lim.Type && o.Unit == lim.Unit {
				return nil, policyInvalid(p, p+" has the type and unit of rate_limits["+strconv.Itoa(j)+"]: give one value per type and unit")
			}
		}
		out = append(out, lim)
	}
	return out, nil
}

// RateLimitsJSON checks the rate_limits a product writes on an API key
// (APIKey.RateLimits) as the data plane reads them, and returns what to
// store: the JSON as given, unchanged (nil for absent or null). A bad
// value is a 400 *Error naming the field (rate_limits[0].unit, say).
func RateLimitsJSON(raw json.RawMessage) (json.RawMessage, error) {
	rl, err := limitsJSON("rate_limits", raw, '[')
	if err != nil || rl == nil {
		return nil, err
	}
	if _, e := parseKeyRateLimits(rl); e != nil {
		return nil, e
	}
	return rl, nil
}

// maxKeyLimitSets bounds the parsed rate_limits kept, one per API key
// that carries them and was used lately. A key past the bound is parsed
// again on its next request, never enforced wrongly.
const maxKeyLimitSets = 1 << 14

// keyLimitSet is the rate_limits of one API key record, parsed: the
// policies they add to every data-plane request made with the key, or
// why they cannot be enforced.
type keyLimitSet struct {
	ws   string // the key's WorkspaceID, part of the bucket names
	raw  []byte // the RateLimits they were parsed from
	hits []policyHit
	err  error
}

// keyLimitCache keeps parsed rate_limits by API key id, so that a request
// of a key with rate_limits pays no parse: an entry is reused only while
// the key record's RateLimits (and workspace) are those it was parsed
// from, so a record changed in the store, by any replica, is in force from
// the first request that reads it. It is safe for concurrent use.
type keyLimitCache struct {
	lru *lru.Cache[string, *keyLimitSet]
}

func newKeyLimitCache() keyLimitCache {
	c, _ := lru.New[string, *keyLimitSet](maxKeyLimitSets)
	return keyLimitCache{lru: c}
}

// hits returns the policies k's rate_limits apply to its requests, with
// their buckets; or an error when the stored rate_limits are not valid
// (written by another program, or before they were checked), which
// refuses the request: the gateway fails closed. The slice is shared and
// must not be changed.
func (c keyLimitCache) hits(k *APIKey) ([]policyHit, error) {
	if s, ok := c.lru.Get(k.ID); ok && s.ws == k.WorkspaceID && bytes.Equal(s.raw, k.RateLimits) {
		return s.hits, s.err
	}
	s := newKeyLimitSet(k)
	c.lru.Add(k.ID, s)
	return s.hits, s.err
}

// newKeyLimitSet parses the rate_limits of k. Each entry is a requests or
// tokens policy of k's workspace; its bucket is named
//
//	"api-key" NUL len(ws) ":" ws NUL len(id) ":" id NUL type NUL unit
//
// from the key's workspace and id and the entry's type and unit, which
// every replica derives alike, so that replicas sharing a Limiter share
// one bucket per key and entry. A policy's bucket starts with its id, a
// UUID, so the two never collide. The entry's place in the array is not
// part of the name: reordering the entries, or changing a value, keeps
// what each bucket holds.
func newKeyLimitSet(k *APIKey) *keyLimitSet {
	s := &keyLimitSet{ws: k.WorkspaceID, raw: bytes.Clone(k.RateLimits)}
	lims, e := parseKeyRateLimits(k.RateLimits)
	if e != nil {
		s.err = errors.New("gateway: API key " + k.ID + " has invalid rate_limits: " + e.Message)
		return s
	}
	prefix := "api-key\x00" + strconv.Itoa(len(k.WorkspaceID)) + ":" + k.WorkspaceID +
		"\x00" + strconv.Itoa(len(k.ID)) + ":" + k.ID + "\x00"
	src := "API key " + quoteShort(k.ID)
	s.hits = make([]policyHit, len(lims))
	for i, lim := range lims {
		p := &RateLimitsPolicy{ID: "rate_limits[" + strconv.Itoa(i) + "] of API key " + k.ID, Type: lim.Type,
			Unit: lim.Unit, Value: lim.Value, Status: PolicyActive, WorkspaceID: k.WorkspaceID,
			Conditions: []PolicyCondition{{Key: "api_key", Value: k.ID}}, GroupBy: []PolicyGroupBy{{Key: "api_key"}}}
		s.hits[i] = policyHit{p: p, key: prefix + lim.Type + "\x00" + lim.Unit,
			limit: Limit{Value: lim.Value, Per: policyPeriod(lim.Unit)}, src: src}
	}
	return s
}
