package gateway

import (
	"encoding/json"
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/modelgateway/gateway/internal/bounds"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// An API key's usage_limits (APIKey.UsageLimits, a JSON object) and a
// workspace's (Workspace.UsageLimits, a JSON array of such objects) are
// budgets the budget package enforces when the host wires it in; the
// root only checks their shape where they are written (UsageLimitsJSON).

// What a usage limit counts, and its calendar resets.
const (
	usageCost    = "cost"
	usageTokens  = "tokens"
	resetWeekly  = "weekly"
	resetMonthly = "monthly"
)

// usageLimitEntry is one usage limit of an API key or a workspace.
type usageLimitEntry struct {
	typ   string
	reset string
	days  int
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
	e.typ = usageCost
	if v, ok := fields["type"]; ok && json.Unmarshal(v, &e.typ) != nil {
		return e, policyInvalid(p+".type", p+".type must be cost or tokens")
	}
	v, ok := fields["credit_limit"]
	var credit *float64
	if !ok || json.Unmarshal(v, &credit) != nil || credit == nil {
		return e, policyInvalid(p+".credit_limit", p+".credit_limit must be a number of at least 0")
	}
	var alert *float64
	if v, ok := fields["alert_threshold"]; ok && json.Unmarshal(v, &alert) != nil {
		return e, policyInvalid(p+".alert_threshold", p+".alert_threshold must be a number of at least 0, or null")
	}
	var reset *string
	if v, ok := fields["periodic_reset"]; ok && json.Unmarshal(v, &reset) != nil {
		return e, policyInvalid(p+".periodic_reset", p+".periodic_reset must be weekly, monthly or null")
	}
	if reset != nil {
		e.reset = *reset
	}
	var days *int
	if v, ok := fields["periodic_reset_days"]; ok && (json.Unmarshal(v, &days) != nil || days != nil && *days < 1) {
		return e, policyInvalid(p+".periodic_reset_days", p+".periodic_reset_days must be an integer from 1 to 365, or null")
	}
	if days != nil {
		e.days = *days
	}
	var next *time.Time
	if v, ok := fields["next_usage_reset_at"]; ok && json.Unmarshal(v, &next) != nil {
		return e, policyInvalid(p+".next_usage_reset_at", p+".next_usage_reset_at must be an RFC 3339 date-time or null")
	}
	if err := checkUsageLimit(p+".", e.typ, *credit, alert, e.reset, e.days); err != nil {
		return e, err
	}
	return e, nil
}

// checkUsageLimit checks the fields a usage limit has wherever it is set
// (an API key's or a workspace's usage_limits); prefix is put before the
// names of the fields in the 400 (e.g. "usage_limits.").
func checkUsageLimit(prefix, typ string, credit float64, alert *float64, reset string, days int) *Error {
	switch {
	case typ != usageCost && typ != usageTokens:
		return policyInvalid(prefix+"type", prefix+"type must be cost or tokens")
	case !(credit >= 0) || math.IsInf(credit, 0):
		return policyInvalid(prefix+"credit_limit", prefix+"credit_limit must be a number of at least 0")
	case alert != nil && (!(*alert >= 0) || math.IsInf(*alert, 0)):
		return policyInvalid(prefix+"alert_threshold", prefix+"alert_threshold must be a number of at least 0, or null")
	case alert != nil && *alert > credit:
		return policyInvalid(prefix+"alert_threshold", prefix+"alert_threshold must not be above credit_limit")
	case reset != "" && reset != resetWeekly && reset != resetMonthly:
		return policyInvalid(prefix+"periodic_reset", prefix+"periodic_reset must be weekly, monthly or null")
	case days < 0 || days > 365:
		return policyInvalid(prefix+"periodic_reset_days", prefix+"periodic_reset_days must be an integer from 1 to 365, or null")
	case days > 0 && reset != "":
		return policyInvalid(prefix+"periodic_reset_days", prefix+"periodic_reset_days and periodic_reset exclude each other")
	}
	return nil
}

// UsageLimitsJSON checks the usage_limits of an API key (workspace false:
// one object) or of a workspace (an array of objects, no two of the same
// type and reset period, which would share a counter) in a create or
// update body, and returns what to store: the JSON as given (nil for
// absent or null), or a 400 naming the field at fault, e.g.
// usage_limits.credit_limit. The budget package checks a usage-limits
// policy's fields with it too.
func UsageLimitsJSON(raw json.RawMessage, workspace bool) (json.RawMessage, error) {
	open := byte('{')
	if workspace {
		open = '['
	}
	ul, err := limitsJSON("usage_limits", raw, open)
	if err != nil || ul == nil {
		return nil, err
	}
	if !workspace {
		if _, e := parseUsageLimit("usage_limits", ul); e != nil {
			return nil, e
		}
		return ul, nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(ul, &elems); err != nil {
		return nil, policyInvalid("usage_limits", "usage_limits must be an array of objects, or null")
	}
	seen := make([]usageLimitEntry, 0, len(elems))
	for i, el := range elems {
		p := "usage_limits[" + strconv.Itoa(i) + "]"
		e, err := parseUsageLimit(p, el)
		if err != nil {
			return nil, err
		}
		if j := slices.Index(seen, e); j >= 0 {
			return nil, policyInvalid(p, p+" has the type and period of usage_limits["+strconv.Itoa(j)+"]: give one limit per type and period")
		}
		seen = append(seen, e)
	}
	return ul, nil
}

// limitsJSON checks rate_limits (an array) or usage_limits (an object):
// nil for absent or null. A malformed one is the 400 invalid_parameter
// naming its field.
func limitsJSON(name string, raw json.RawMessage, open byte) (json.RawMessage, error) {
	rl, err := bounds.Limits(name, raw, open)
	var fe *httpapi.FieldError
	if errors.As(err, &fe) {
		return rl, policyInvalid(fe.Param, fe.Message)
	}
	return rl, err
}
