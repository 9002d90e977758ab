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

	gateway "github.com/modelgateway/gateway"
)

// Policies implements gateway.PolicyStore from the snapshot: the policies
// of workspaceID and those of no workspace, ordered by creation time
// (then id). The slice is shared by every caller and must not be
// modified; appending to it is safe.
func (s *Store) Policies(_ context.Context, workspaceID string) ([]gateway.RateLimitsPolicy, error) {
	snap := s.snap.Load()
	if ps, ok := snap.policiesOf[workspaceID]; ok {
		return ps, nil
	}
	return snap.operatorPolicies, nil
}

// AllPolicies serves the rate-limits routes' organisation-wide list
// (found by type assertion) from the snapshot: every policy, copies
// ordered by creation time then id.
func (s *Store) AllPolicies(_ context.Context) ([]gateway.RateLimitsPolicy, error) {
	snap := s.snap.Load()
	out := make([]gateway.RateLimitsPolicy, 0, len(snap.policies))
	for _, p := range snap.policies {
		out = append(out, *clonePolicy(p))
	}
	slices.SortFunc(out, func(a, b gateway.RateLimitsPolicy) int {
		return cmp.Or(strings.Compare(a.CreatedAt, b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// Policy implements gateway.PolicyStore from the snapshot, finding id in
// any case. It returns a copy the caller may change.
func (s *Store) Policy(_ context.Context, id string) (*gateway.RateLimitsPolicy, error) {
	if p, ok := s.snap.Load().policies[strings.ToLower(id)]; ok {
		return clonePolicy(p), nil
	}
	return nil, gateway.ErrNotFound
}

// PutPolicy implements gateway.PolicyStore: it creates or replaces a copy
// of p, its id in lower case.
func (s *Store) PutPolicy(ctx context.Context, p *gateway.RateLimitsPolicy) error {
	return s.update(ctx, func(tx *sql.Tx) error { return s.putPolicy(ctx, tx, p) })
}

func (s *Store) putPolicy(ctx context.Context, tx *sql.Tx, p *gateway.RateLimitsPolicy) error {
	if p.ID == "" {
		return errors.New("sqlstore: a rate-limits policy needs an id")
	}
	conditions, err := json.Marshal(p.Conditions)
	if err != nil {
		return fmt.Errorf("sqlstore: rate-limits policy %s: %w", p.ID, err)
	}
	groupBy, err := json.Marshal(p.GroupBy)
	if err != nil {
		return fmt.Errorf("sqlstore: rate-limits policy %s: %w", p.ID, err)
	}
	_, err = s.exec(ctx, tx, `INSERT INTO rate_limits_policies (`+policyColumns+`)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (id) DO UPDATE SET name = excluded.name, conditions = excluded.conditions, group_by = excluded.group_by,
	type = excluded.type, unit = excluded.unit, value = excluded.value, status = excluded.status,
	workspace_id = excluded.workspace_id, organisation_id = excluded.organisation_id,
	created_at = excluded.created_at, last_updated_at = excluded.last_updated_at`,
		strings.ToLower(p.ID), p.Name, string(conditions), string(groupBy), p.Type, p.Unit, p.Value, p.Status,
		p.WorkspaceID, p.OrganisationID, p.CreatedAt, p.LastUpdatedAt)
	if err != nil {
		return fmt.Errorf("sqlstore: rate-limits policy %s: %w", p.ID, err)
	}
	return s.changed(ctx, tx, kindPolicy, strings.ToLower(p.ID))
}

// errSwapFailed rolls back the transaction of a compare-and-swap whose
// policy changed since it was read.
var errSwapFailed = errors.New("sqlstore: policy changed")

// CompareAndSwapPolicy implements admin.PolicyCompareAndSwapper against
// the database, not the snapshot: it replaces policy old.ID with p if the
// stored policy still equals old in every field, atomically with respect
// to every write of every replica. A swap that fails refreshes the
// snapshot, so that the caller's next read sees what it lost to.
func (s *Store) CompareAndSwapPolicy(ctx context.Context, old, p *gateway.RateLimitsPolicy) (bool, error) {
	if !strings.EqualFold(old.ID, p.ID) {
		return false, errors.New("sqlstore: CompareAndSwapPolicy of a policy with another id")
	}
	err := s.update(ctx, func(tx *sql.Tx) error {
		cur, err := scanPolicy(tx.QueryRowContext(ctx, s.dialect.rebind(`SELECT `+policyColumns+` FROM rate_limits_policies WHERE id = $1`), strings.ToLower(old.ID)))
		switch {
		case notFound(err):
			return gateway.ErrNotFound
		case err != nil:
			return err
		case !policyEqual(cur, old):
			return errSwapFailed
		}
		return s.putPolicy(ctx, tx, p)
	})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, errSwapFailed):
		return false, s.Refresh(ctx)
	case errors.Is(err, gateway.ErrNotFound):
		s.Refresh(ctx) // the snapshot may still hold it; the ErrNotFound is the answer
		return false, err
	}
	return false, err
}

// DeletePolicy implements gateway.PolicyStore.
func (s *Store) DeletePolicy(ctx context.Context, id string) error {
	return s.deleteRow(ctx, kindPolicy, strings.ToLower(id), "rate_limits_policies", "id = $1", strings.ToLower(id))
}

func (s *Store) loadPolicies(ctx context.Context, tx *sql.Tx, snap *snapshot) error {
	rows, err := tx.QueryContext(ctx, `SELECT `+policyColumns+` FROM rate_limits_policies`)
	if err != nil {
		return fmt.Errorf("sqlstore: reading rate-limits policies: %w", err)
	}
	defer rows.Close()
	snap.policies = make(map[string]*gateway.RateLimitsPolicy)
	snap.operatorPolicies = nil
	var all []*gateway.RateLimitsPolicy
	for rows.Next() {
		p, err := scanPolicy(rows)
		if err != nil {
			return err
		}
		snap.policies[p.ID] = p
		all = append(all, p)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlstore: reading rate-limits policies: %w", err)
	}
	slices.SortFunc(all, comparePolicies)
	own := make(map[string][]gateway.RateLimitsPolicy)
	for _, p := range all {
		if p.WorkspaceID == "" {
			snap.operatorPolicies = append(snap.operatorPolicies, *p)
		} else {
			own[p.WorkspaceID] = append(own[p.WorkspaceID], *p)
		}
	}
	snap.operatorPolicies = slices.Clip(snap.operatorPolicies)
	snap.policiesOf = make(map[string][]gateway.RateLimitsPolicy, len(own))
	for ws, ps := range own {
		snap.policiesOf[ws] = mergePolicies(ps, snap.operatorPolicies)
	}
	return nil
}

// comparePolicies orders policies as PolicyStore.Policies lists them: by
// creation time, then id.
func comparePolicies(a, b *gateway.RateLimitsPolicy) int {
	return cmp.Or(strings.Compare(a.CreatedAt, b.CreatedAt), strings.Compare(a.ID, b.ID))
}

// mergePolicies merges two lists sorted by comparePolicies into a new
// one, its capacity its length.
func mergePolicies(a, b []gateway.RateLimitsPolicy) []gateway.RateLimitsPolicy {
	out := make([]gateway.RateLimitsPolicy, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if comparePolicies(&a[0], &b[0]) <= 0 {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	out = append(out, a...)
	return append(out, b...)
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// policyColumns are the columns scanPolicy reads, in its order.
const policyColumns = `id, name, conditions, group_by, type, unit, value, status, workspace_id, organisation_id, created_at, last_updated_at`

func scanPolicy(row scanner) (*gateway.RateLimitsPolicy, error) {
	var (
		p                   gateway.RateLimitsPolicy
		conditions, groupBy string
	)
	if err := row.Scan(&p.ID, &p.Name, &conditions, &groupBy, &p.Type, &p.Unit, &p.Value, &p.Status, &p.WorkspaceID,
		&p.OrganisationID, &p.CreatedAt, &p.LastUpdatedAt); err != nil {
		if notFound(err) {
			return nil, err
		}
		return nil, fmt.Errorf("sqlstore: reading rate-limits policies: %w", err)
	}
	if err := json.Unmarshal([]byte(conditions), &p.Conditions); err != nil {
		return nil, fmt.Errorf("sqlstore: rate-limits policy %s: conditions: %w", p.ID, err)
	}
	if err := json.Unmarshal([]byte(groupBy), &p.GroupBy); err != nil {
		return nil, fmt.Errorf("sqlstore: rate-limits policy %s: group_by: %w", p.ID, err)
	}
	return &p, nil
}

// clonePolicy returns a copy of p sharing no memory with it, its id in
// lower case.
func clonePolicy(p *gateway.RateLimitsPolicy) *gateway.RateLimitsPolicy {
	c := *p
	c.ID = strings.ToLower(c.ID)
	c.Conditions = slices.Clone(c.Conditions)
	c.GroupBy = slices.Clone(c.GroupBy)
	return &c
}

// policyEqual reports whether a and b are the same in every field but the
// case of their ids (memstore.Store's comparison).
func policyEqual(a, b *gateway.RateLimitsPolicy) bool {
	return strings.EqualFold(a.ID, b.ID) && a.Name == b.Name &&
		slices.Equal(a.Conditions, b.Conditions) && slices.Equal(a.GroupBy, b.GroupBy) &&
		a.Type == b.Type && a.Unit == b.Unit && a.Value == b.Value && a.Status == b.Status &&
		a.WorkspaceID == b.WorkspaceID && a.OrganisationID == b.OrganisationID &&
		a.CreatedAt == b.CreatedAt && a.LastUpdatedAt == b.LastUpdatedAt
}
