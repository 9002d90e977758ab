package gateway

import (
	"context"
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
// wires it with the workspaces. InputGuardrails and OutputGuardrails
// (defaults.input_guardrails and defaults.output_guardrails) are the ids
// of guardrails checked by Options.Hooks on every data-plane request of
// the workspace's keys, before the key's own and the config's (see
// Hooks), when Options.Workspaces finds the workspace.
type Workspace struct {
	ID               string
	Name             string
	Description      string
	Metadata         map[string]string
	RateLimits       json.RawMessage // a JSON array, or nil
	UsageLimits      json.RawMessage // a JSON array, or nil
	InputGuardrails  []string        // guardrail ids, or nil
	OutputGuardrails []string        // guardrail ids, or nil
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// WorkspaceStore finds a registered workspace by id, for what the data
// plane applies of it (its default guardrails). Implementations must be
// safe for concurrent use and return ErrNotFound for an unknown id.
type WorkspaceStore interface {
	Workspace(ctx context.Context, id string) (*Workspace, error)
}

// Clone returns a copy of w sharing no memory with it.
func (w *Workspace) Clone() *Workspace {
	c := *w
	c.Metadata = maps.Clone(w.Metadata)
	c.RateLimits = slices.Clone(w.RateLimits)
	c.UsageLimits = slices.Clone(w.UsageLimits)
	c.InputGuardrails = slices.Clone(w.InputGuardrails)
	c.OutputGuardrails = slices.Clone(w.OutputGuardrails)
	return &c
}
