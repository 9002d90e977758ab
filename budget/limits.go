package budget

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
)

// An API key's usage_limits (gateway.APIKey.UsageLimits, a JSON object)
// and a workspace's (gateway.Workspace.UsageLimits, a JSON array of such
// objects) are enforced as policies whose condition is that key or
// workspace and whose one entity is the key or workspace itself: the same
// counter, reservation, settlement, alerts and 412 as stored policies
// (stage.go). Their shape is checked where they are written, and again
// here, by gateway.UsageLimitsJSON.

// limitEntry is one usage limit of an API key or a workspace, as
// gateway.UsageLimitsJSON accepted it; Type is cost when absent.
type limitEntry struct {
	Type              *string  `json:"type"`
	CreditLimit       float64  `json:"credit_limit"`
	AlertThreshold    *float64 `json:"alert_threshold"`
	PeriodicReset     *string  `json:"periodic_reset"`
	PeriodicResetDays *int     `json:"periodic_reset_days"`
}

// parseLimits checks the stored usage_limits raw of an API key (workspace
// false: one object) or of a workspace (an array) and returns its
// entries, or the 400 that describes its fault.
func parseLimits(raw []byte, workspace bool) ([]limitEntry, error) {
	ok, err := gateway.UsageLimitsJSON(raw, workspace)
	switch {
	case err != nil:
		return nil, err
	case ok == nil && !workspace: // null is no budget of a workspace, and not one of a key
		return nil, control.Invalid("usage_limits", "usage_limits must be an object of type, credit_limit, alert_threshold and periodic_reset")
	case ok == nil:
		return nil, nil
	case !workspace:
		var e limitEntry
		err = json.Unmarshal(ok, &e)
		return []limitEntry{e}, err
	}
	var out []limitEntry
	err = json.Unmarshal(ok, &out)
	return out, err
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
	what, resType := "API key ", "api_keys"
	if kind == "workspace" {
		what, resType = "workspace ", "workspaces"
	}
	entries, err := parseLimits(raw, kind == "workspace")
	if err != nil {
		msg := err.Error()
		if ge := (*gateway.Error)(nil); errors.As(err, &ge) {
			msg = ge.Message
		}
		s.err = errors.New("gateway: stored usage_limits of " + what + control.Quote(id) + " are not valid: " + msg)
		return s
	}
	anchor := ""
	if !created.IsZero() {
		anchor = created.UTC().Format(time.RFC3339)
	}
	s.hits = make([]budgetHit, len(entries))
	for i, en := range entries {
		typ, reset, days, alert := Cost, "", 0, -1.0
		if en.Type != nil {
			typ = *en.Type
		}
		if en.PeriodicReset != nil {
			reset = *en.PeriodicReset
		}
		if en.PeriodicResetDays != nil {
			days = *en.PeriodicResetDays
		}
		if en.AlertThreshold != nil {
			alert = *en.AlertThreshold
		}
		pid := kind + "\x00" + strconv.Itoa(len(ws)) + ":" + ws + "\x00" + id
		if kind == "workspace" {
			pid += "\x00" + typ + "\x00" + reset + "\x00" + strconv.Itoa(days)
		}
		s.hits[i] = budgetHit{policyID: pid, valueKey: id, label: what + control.Quote(id), typ: typ,
			limit: en.CreditLimit, alert: alert, reset: reset, days: days, anchor: anchor, workspace: ws,
			resType: resType, resID: id}
	}
	return s
}
