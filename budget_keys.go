package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"time"
)

// An API key's usage_limits (APIKey.UsageLimits, a JSON object) and a
// workspace's (Workspace.UsageLimits, a JSON array of such objects) are
// enforced as usage-limits policies whose condition is that key or
// workspace and whose one entity is the key or workspace itself: the same
// counter, reservation, settlement, alerts and 412 as stored policies
// (budget_stage.go).

// usageLimitEntry is one usage limit of an API key or a workspace.
type usageLimitEntry struct {
	Type        string
	CreditLimit float64
	Alert       *float64
	Reset       string
	Days        int
}

// usageLimitFields are the fields an entry of usage_limits may have (the
// reference's UsageLimits schema); next_usage_reset_at is worked out by
// the gateway and accepted only to be ignored.
var usageLimitFields = []string{"credit_limit", "type", "alert_threshold", "periodic_reset", "periodic_reset_days", "next_usage_reset_at"}

// parseUsageLimit checks one usage_limits object, whose fields are named
// in a 400 after p (e.g. "usage_limits" or "usage_limits[1]"). type is
// cost when absent; credit_limit is required.
func parseUsageLimit(p string, raw json.RawMessage) (usageLimitEntry, *Error) {
	var e usageLimitEntry
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return e, policyInvalid(p, p+" must be an object of type, credit_limit, alert_threshold and periodic_reset")
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if !slices.Contains(usageLimitFields, k) {
			return e, policyInvalid(p+"."+k, "unknown field "+quoteShort(k)+": usage limits have type, credit_limit, alert_threshold, periodic_reset and periodic_reset_days")
		}
	}
	e.Type = UsageCost
	if v, ok := fields["type"]; ok && json.Unmarshal(v, &e.Type) != nil {
		return e, policyInvalid(p+".type", p+".type must be cost or tokens")
	}
	v, ok := fields["credit_limit"]
	var credit *float64
	if !ok || json.Unmarshal(v, &credit) != nil || credit == nil {
		return e, policyInvalid(p+".credit_limit", p+".credit_limit must be a number of at least 0")
	}
	e.CreditLimit = *credit
	if v, ok := fields["alert_threshold"]; ok && json.Unmarshal(v, &e.Alert) != nil {
		return e, policyInvalid(p+".alert_threshold", p+".alert_threshold must be a number of at least 0, or null")
	}
	var reset *string
	if v, ok := fields["periodic_reset"]; ok && json.Unmarshal(v, &reset) != nil {
		return e, policyInvalid(p+".periodic_reset", p+".periodic_reset must be weekly, monthly or null")
	}
	if reset != nil {
		e.Reset = *reset
	}
	var days *int
	if v, ok := fields["periodic_reset_days"]; ok && (json.Unmarshal(v, &days) != nil || days != nil && *days < 1) {
		return e, policyInvalid(p+".periodic_reset_days", p+".periodic_reset_days must be an integer from 1 to 365, or null")
	}
	if days != nil {
		e.Days = *days
	}
	var next *time.Time
	if v, ok := fields["next_usage_reset_at"]; ok && json.Unmarshal(v, &next) != nil {
		return e, policyInvalid(p+".next_usage_reset_at", p+".next_usage_reset_at must be an RFC 3339 date-time or null")
	}
	if err := checkUsageLimit(p+".", e.Type, e.CreditLimit, e.Alert, e.Reset, e.Days); err != nil {
		return e, err
	}
	return e, nil
}

// parseKeyUsageLimits checks an API key's usage_limits: one object.
func parseKeyUsageLimits(raw []byte) ([]usageLimitEntry, *Error) {
	e, err := parseUsageLimit("usage_limits", raw)
	if err != nil {
		return nil, err
	}
	return []usageLimitEntry{e}, nil
}

// parseWorkspaceUsageLimits checks a workspace's usage_limits: an array of
// objects, no two of the same type and reset period (they would share a
// counter).
func parseWorkspaceUsageLimits(raw []byte) ([]usageLimitEntry, *Error) {
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, policyInvalid("usage_limits", "usage_limits must be an array of objects, or null")
	}
	out := make([]usageLimitEntry, 0, len(elems))
	for i, el := range elems {
		p := "usage_limits[" + strconv.Itoa(i) + "]"
		e, err := parseUsageLimit(p, el)
		if err != nil {
			return nil, err
		}
		for j, o := range out {
			if o.Type == e.Type && o.Reset == e.Reset && o.Days == e.Days {
				return nil, policyInvalid(p, p+" has the type and period of usage_limits["+strconv.Itoa(j)+"]: give one limit per type and period")
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// UsageLimitsJSON checks the usage_limits of an API key (workspace false:
// one object) or of a workspace (an array of objects) in a create or
// update body, and returns what to store: the JSON as given (nil for
// absent or null), or a 400 naming the field at fault, e.g.
// usage_limits.credit_limit.
func UsageLimitsJSON(raw json.RawMessage, workspace bool) (json.RawMessage, error) {
	open, parse := byte('{'), parseKeyUsageLimits
	if workspace {
		open, parse = '[', parseWorkspaceUsageLimits
	}
	ul, err := limitsJSON("usage_limits", raw, open)
	if err != nil || ul == nil {
		return nil, err
	}
	if _, e := parse(ul); e != nil {
		return nil, e
	}
	return ul, nil
}

// budgetSet is the parsed usage_limits of one API key or workspace record:
// the budgets they add to its requests, or why they cannot be enforced.
type budgetSet struct {
	raw     []byte
	ws      string
	hits    []budgetHit
	err     error
	fetched time.Time // for a workspace: when its record was read
}

// newBudgetSet parses usage_limits raw of the API key or workspace named
// kind ("api_key" or "workspace") and id, in workspace ws, anchored (for
// periodic_reset_days) at created.
func newBudgetSet(kind, id, ws string, raw []byte, created time.Time) *budgetSet {
	s := &budgetSet{raw: bytes.Clone(raw), ws: ws}
	parse, what, resType := parseKeyUsageLimits, "API key ", "api_keys"
	if kind == "workspace" {
		parse, what, resType = parseWorkspaceUsageLimits, "workspace ", "workspaces"
	}
	entries, e := parse(raw)
	if e != nil {
		s.err = errors.New("gateway: stored usage_limits of " + what + quoteShort(id) + " are not valid: " + e.Message)
		return s
	}
	anchor := ""
	if !created.IsZero() {
		anchor = created.UTC().Format(time.RFC3339)
	}
	s.hits = make([]budgetHit, len(entries))
	for i, en := range entries {
		pid := kind + "\x00" + strconv.Itoa(len(ws)) + ":" + ws + "\x00" + id
		if kind == "workspace" {
			pid += "\x00" + en.Type + "\x00" + en.Reset + "\x00" + strconv.Itoa(en.Days)
		}
		alert := -1.0
		if en.Alert != nil {
			alert = *en.Alert
		}
		s.hits[i] = budgetHit{policyID: pid, valueKey: id, label: what + quoteShort(id), typ: en.Type,
			limit: en.CreditLimit, alert: alert, reset: en.Reset, days: en.Days, anchor: anchor, workspace: ws,
			resType: resType, resID: id}
	}
	return s
}
