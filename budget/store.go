package budget

import (
	"context"

	"github.com/modelgateway/gateway"
)

// Store holds usage-limits policies (budgets). Implementations
// must be safe for concurrent use. UsageLimitsPolicies returns the
// policies of workspaceID, every status, ordered by CreatedAt then ID; it
// is read on every data-plane request, so it should be served from memory,
// and the slice it returns may be shared: callers must not modify it.
// UsageLimitsPolicy finds a policy by id in any case, and returns
// gateway.ErrNotFound for an unknown one. PutUsageLimitsPolicy creates or
// replaces a copy of p. CompareAndSwapUsageLimitsPolicy replaces the
// stored policy old.ID with p only if the stored one still equals old in
// every field (Equal), atomically with respect to every other
// write, and reports whether it did; gateway.ErrNotFound when there is none.
// Policies are never deleted: DELETE archives them.
//
// memstore.Store implements it, and so does sqlstore.Store.
type Store interface {
	UsageLimitsPolicies(ctx context.Context, workspaceID string) ([]Policy, error)
	UsageLimitsPolicy(ctx context.Context, id string) (*Policy, error)
	PutUsageLimitsPolicy(ctx context.Context, p *Policy) error
	CompareAndSwapUsageLimitsPolicy(ctx context.Context, old, p *Policy) (bool, error)
}

// EntityKey names the counter of one entity of a budget: the policy
// (a usage-limits policy's id, or a name the gateway derives for an API
// key's or workspace's usage_limits), the entity's value key, and the
// period the usage counts in ("" for cumulative usage).
type EntityKey struct {
	PolicyID string
	ValueKey string
	Period   string
}

// Reservation is a Counter's answer to Reserve, handed back to
// Settle once the request is done.
type Reservation struct {
	EntityKey
	// Allowed reports whether the request was admitted and Estimate
	// reserved for it.
	Allowed  bool
	Estimate float64
	// Usage is the entity's recorded usage before the call.
	Usage float64
	// Epoch is the entity's reset count the reservation was made in: a
	// reset (by hand or by a new period) drops the reservations made
	// before it, and Settle does not take back what it dropped.
	Epoch int64
}

// Thresholds are the levels a settled usage is compared with: the
// policy's alert threshold (negative: none) and credit limit.
type Thresholds struct {
	Alert float64
	Limit float64
}

// Settlement is a Counter's answer to Settle.
type Settlement struct {
	// Usage is the entity's recorded usage after the call.
	Usage float64
	// AlertCrossed is true for the one call that found the usage at or
	// past the alert threshold first (in the period, or since a reset);
	// LimitCrossed likewise for the credit limit.
	AlertCrossed bool
	LimitCrossed bool
}

// Entity is the stored state of one entity's counter.
type Entity struct {
	EntityKey
	Usage            float64 // recorded usage in Period
	Reserved         float64 // estimates of the requests in flight
	Epoch            int64
	ThresholdAlerted bool
	ExhaustedAlerted bool
}

// Counter keeps the usage of budget entities, shared by every
// replica that uses one (a database, Redis). Every method is one atomic
// step on the entity's counter. Implementations must be safe for
// concurrent use.
//
// A counter whose stored Period differs from the one a call passes is
// first rolled over to it: usage and reservations dropped, the alert
// flags cleared, the epoch advanced.
//
// Reserve admits a request while the recorded usage plus the reservations
// in flight is below limit, and then adds estimate to the reservations;
// the request's own estimate is not compared with the limit, so that a
// lone caller spends a budget to the end.
//
// Settle takes r's estimate back from the reservations (unless a reset
// dropped it since: another epoch or period) and adds used to the usage
// of the current period, which may differ from r's. It sets the alert
// flags whose level the usage reached, reporting which this call set.
//
// UsageEntities lists the counters of a policy, in any period. ResetUsage
// sets an entity's usage and reservations to zero, clears its flags and
// advances its epoch; it reports false when the entity has no counter.
type Counter interface {
	Reserve(ctx context.Context, e EntityKey, limit, estimate float64) (Reservation, error)
	Settle(ctx context.Context, r Reservation, period string, used float64, th Thresholds) (Settlement, error)
	UsageEntities(ctx context.Context, policyID string) ([]Entity, error)
	ResetUsage(ctx context.Context, policyID, valueKey string) (bool, error)
}

// Workspaces is what the budgets read of the workspaces: a workspace's
// usage_limits (Workspace, gateway.ErrNotFound for one not registered),
// and, for an organisation key's list of policies over a Store that
// cannot list every workspace's at once, the registered workspaces. The
// stores' workspace stores (memstore.Store, sqlstore.Store) implement
// it. Implementations must be safe for concurrent use.
type Workspaces interface {
	Workspace(ctx context.Context, id string) (*gateway.Workspace, error)
	Workspaces(ctx context.Context) ([]gateway.Workspace, error)
}
