package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/budget"
)

var (
	_ budget.Store   = (*Store)(nil)
	_ budget.Counter = (*Store)(nil)
)

// kindUsageLimits names a usage-limits policy in the changes table: every
// write of one bumps the generation, which makes every replica read the
// policies again (see budgetCache).
const kindUsageLimits = "usage_limits_policy"

// budgetCache holds the usage-limits policies as of a generation of the
// database, read again on the first lookup after the store's snapshot
// moved to another generation (a write here, or the poll seeing one of
// another replica), so that a change is in force within a poll.
type budgetCache struct {
	mu  sync.Mutex // serialises reloads
	cur atomic.Pointer[budgetSet]
}

// budgetSet is the usage-limits policies of one generation, by workspace
// in budget.Store order. The slices are shared by every caller.
type budgetSet struct {
	gen int64
	of  map[string][]budget.Policy
}

// UsageLimitsPolicies implements budget.Store from a cache
// kept in step with the snapshot's generation. The slice is shared by
// every caller and must not be modified.
func (s *Store) UsageLimitsPolicies(ctx context.Context, workspaceID string) ([]budget.Policy, error) {
	gen := s.snap.Load().gen
	set := s.budgets.cur.Load()
	if set == nil || set.gen != gen {
		var err error
		if set, err = s.loadBudgets(ctx, gen); err != nil {
			return nil, err
		}
	}
	return set.of[workspaceID], nil
}

// AllUsageLimitsPolicies serves the usage-limits routes'
// organisation-wide list (found by type assertion) from the same cache as
// UsageLimitsPolicies: every policy, ordered by CreatedAt then ID.
func (s *Store) AllUsageLimitsPolicies(ctx context.Context) ([]budget.Policy, error) {
	gen := s.snap.Load().gen
	set := s.budgets.cur.Load()
	if set == nil || set.gen != gen {
		var err error
		if set, err = s.loadBudgets(ctx, gen); err != nil {
			return nil, err
		}
	}
	var out []budget.Policy
	for _, ps := range set.of {
		out = append(out, ps...)
	}
	slices.SortFunc(out, func(a, b budget.Policy) int {
		return cmp.Or(strings.Compare(a.CreatedAt, b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// loadBudgets reads every usage-limits policy, as of generation gen or
// later, unless another caller just did.
func (s *Store) loadBudgets(ctx context.Context, gen int64) (*budgetSet, error) {
	s.budgets.mu.Lock()
	defer s.budgets.mu.Unlock()
	if set := s.budgets.cur.Load(); set != nil && set.gen == gen {
		return set, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+usageColumns+` FROM usage_limits_policies`)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading usage-limits policies: %w", err)
	}
	defer rows.Close()
	var all []budget.Policy
	for rows.Next() {
		p, err := scanUsageLimits(rows)
		if err != nil {
			return nil, err
		}
		all = append(all, *p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: reading usage-limits policies: %w", err)
	}
	slices.SortFunc(all, func(a, b budget.Policy) int {
		return cmp.Or(strings.Compare(a.CreatedAt, b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	set := &budgetSet{gen: gen, of: make(map[string][]budget.Policy)}
	for _, p := range all {
		set.of[p.WorkspaceID] = append(set.of[p.WorkspaceID], p)
	}
	for ws, ps := range set.of {
		set.of[ws] = slices.Clip(ps)
	}
	s.budgets.cur.Store(set)
	return set, nil
}

// UsageLimitsPolicy implements budget.Store, reading the
// database: a copy the caller may change.
func (s *Store) UsageLimitsPolicy(ctx context.Context, id string) (*budget.Policy, error) {
	p, err := scanUsageLimits(s.db.QueryRowContext(ctx, s.dialect.rebind(`SELECT `+usageColumns+` FROM usage_limits_policies WHERE id = $1`), strings.ToLower(id)))
	if notFound(err) {
		return nil, gateway.ErrNotFound
	}
	return p, err
}

// PutUsageLimitsPolicy implements budget.Store.
func (s *Store) PutUsageLimitsPolicy(ctx context.Context, p *budget.Policy) error {
	return s.update(ctx, func(tx *sql.Tx) error { return s.putUsageLimits(ctx, tx, p) })
}

// errUsageSwapFailed rolls back the transaction of a compare-and-swap
// whose policy changed since it was read.
var errUsageSwapFailed = errors.New("sqlstore: usage-limits policy changed")

// CompareAndSwapUsageLimitsPolicy implements budget.Store
// against the database, atomically with respect to every write of every
// replica.
func (s *Store) CompareAndSwapUsageLimitsPolicy(ctx context.Context, old, p *budget.Policy) (bool, error) {
	if !strings.EqualFold(old.ID, p.ID) {
		return false, errors.New("sqlstore: CompareAndSwapUsageLimitsPolicy of a policy with another id")
	}
	err := s.update(ctx, func(tx *sql.Tx) error {
		cur, err := scanUsageLimits(tx.QueryRowContext(ctx, s.dialect.rebind(`SELECT `+usageColumns+` FROM usage_limits_policies WHERE id = $1`), strings.ToLower(old.ID)))
		switch {
		case notFound(err):
			return gateway.ErrNotFound
		case err != nil:
			return err
		case !budget.Equal(cur, old):
			return errUsageSwapFailed
		}
		return s.putUsageLimits(ctx, tx, p)
	})
	if errors.Is(err, errUsageSwapFailed) {
		return false, nil
	}
	return err == nil, err
}

func (s *Store) putUsageLimits(ctx context.Context, tx *sql.Tx, p *budget.Policy) error {
	if p.ID == "" {
		return errors.New("sqlstore: a usage-limits policy needs an id")
	}
	id := strings.ToLower(p.ID)
	conditions, err := json.Marshal(p.Conditions)
	if err != nil {
		return fmt.Errorf("sqlstore: usage-limits policy %s: %w", id, err)
	}
	groupBy, err := json.Marshal(p.GroupBy)
	if err != nil {
		return fmt.Errorf("sqlstore: usage-limits policy %s: %w", id, err)
	}
	var alert sql.NullFloat64
	if p.AlertThreshold != nil {
		alert = sql.NullFloat64{Float64: *p.AlertThreshold, Valid: true}
	}
	_, err = s.exec(ctx, tx, `INSERT INTO usage_limits_policies (`+usageColumns+`)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
ON CONFLICT (id) DO UPDATE SET name = excluded.name, conditions = excluded.conditions, group_by = excluded.group_by,
	type = excluded.type, credit_limit = excluded.credit_limit, alert_threshold = excluded.alert_threshold,
	periodic_reset = excluded.periodic_reset, periodic_reset_days = excluded.periodic_reset_days,
	last_reset_at = excluded.last_reset_at, status = excluded.status, workspace_id = excluded.workspace_id,
	organisation_id = excluded.organisation_id, created_at = excluded.created_at, last_updated_at = excluded.last_updated_at`,
		id, p.Name, string(conditions), string(groupBy), p.Type, p.CreditLimit, alert, p.PeriodicReset, p.PeriodicResetDays,
		p.LastResetAt, p.Status, p.WorkspaceID, p.OrganisationID, p.CreatedAt, p.LastUpdatedAt)
	if err != nil {
		return fmt.Errorf("sqlstore: usage-limits policy %s: %w", id, err)
	}
	return s.changed(ctx, tx, kindUsageLimits, id)
}

// usageColumns are the columns scanUsageLimits reads, in its order.
const usageColumns = `id, name, conditions, group_by, type, credit_limit, alert_threshold, periodic_reset, periodic_reset_days, last_reset_at, status, workspace_id, organisation_id, created_at, last_updated_at`

func scanUsageLimits(row scanner) (*budget.Policy, error) {
	var (
		p                   budget.Policy
		conditions, groupBy string
		alert               sql.NullFloat64
	)
	if err := row.Scan(&p.ID, &p.Name, &conditions, &groupBy, &p.Type, &p.CreditLimit, &alert, &p.PeriodicReset,
		&p.PeriodicResetDays, &p.LastResetAt, &p.Status, &p.WorkspaceID, &p.OrganisationID, &p.CreatedAt, &p.LastUpdatedAt); err != nil {
		if notFound(err) {
			return nil, err
		}
		return nil, fmt.Errorf("sqlstore: reading usage-limits policies: %w", err)
	}
	if alert.Valid {
		p.AlertThreshold = &alert.Float64
	}
	if err := json.Unmarshal([]byte(conditions), &p.Conditions); err != nil {
		return nil, fmt.Errorf("sqlstore: usage-limits policy %s: conditions: %w", p.ID, err)
	}
	if err := json.Unmarshal([]byte(groupBy), &p.GroupBy); err != nil {
		return nil, fmt.Errorf("sqlstore: usage-limits policy %s: group_by: %w", p.ID, err)
	}
	return &p, nil
}
