package gateway

import (
	"encoding/json"
	"maps"
	"slices"
	"time"
)

// Workspace is a workspace registered through /admin/workspaces. Its ID
// (the reference's id and slug) is what keys, virtual keys, configs and
// policies name as their workspace_id.
//
// Metadata (defaults.metadata) and RateLimits are stored and read back as
// given; the gateway does not yet apply them to requests. UsageLimits (a
// JSON array of usage limits, checked by UsageLimitsJSON) are enforced
// as budgets of the whole workspace by the budget package, when the host
// wires it with the workspaces.
type Workspace struct {
	ID          string
	Name        string
	Description string
	Metadata    map[string]string
	RateLimits  json.RawMessage // a JSON array, or nil
	UsageLimits json.RawMessage // a JSON array, or nil
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// cloneWorkspace returns a copy of w sharing no memory with it.
func cloneWorkspace(w *Workspace) *Workspace {
	c := *w
	c.Metadata = maps.Clone(w.Metadata)
	c.RateLimits = slices.Clone(w.RateLimits)
	c.UsageLimits = slices.Clone(w.UsageLimits)
	return &c
}
