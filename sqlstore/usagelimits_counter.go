package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"

	"github.com/modelgateway/gateway/budget"
)

// The usage counters of budgets (budget.Counter) live in the
// usage_limits_usage table, so that every replica on the database shares
// them and they survive restarts. Reserve and Settle each run one short
// read-write transaction on the entity's row: on SQLite it begins
// IMMEDIATE, holding the write lock throughout; on Postgres the row is
// read FOR UPDATE. Either way no two calls on one entity interleave, so
// two replicas never both see the same room.

// withCounter runs fn on the counter of e, made if missing and rolled
// over to e.Period, in one transaction, and writes it back when fn
// reports a change (a roll-over always is one).
func (s *Store) withCounter(ctx context.Context, e budget.EntityKey, fn func(u *budget.Entity) bool) (budget.Entity, error) {
	u := budget.Entity{EntityKey: e}
	conn, err := s.counterConn(ctx)
	if err != nil {
		return u, err
	}
	defer conn.release()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return u, fmt.Errorf("sqlstore: usage counter: %w", err)
	}
	defer tx.Rollback()
	if _, err := s.exec(ctx, tx, `INSERT INTO usage_limits_usage (policy_id, value_key, period) VALUES ($1, $2, $3)
ON CONFLICT (policy_id, value_key) DO NOTHING`, e.PolicyID, e.ValueKey, e.Period); err != nil {
		return u, fmt.Errorf("sqlstore: usage counter: %w", err)
	}
	lock := ""
	if s.dialect == dialectPostgres {
		lock = " FOR UPDATE"
	}
	var period string
	if err := tx.QueryRowContext(ctx, s.dialect.rebind(`SELECT period, used, reserved, epoch, threshold_alerted, exhausted_alerted
FROM usage_limits_usage WHERE policy_id = $1 AND value_key = $2`+lock), e.PolicyID, e.ValueKey).Scan(
		&period, &u.Usage, &u.Reserved, &u.Epoch, &u.ThresholdAlerted, &u.ExhaustedAlerted); err != nil {
		return u, fmt.Errorf("sqlstore: usage counter: %w", err)
	}
	changed := false
	if period != e.Period {
		u = budget.Entity{EntityKey: e, Epoch: u.Epoch + 1}
		changed = true
	}
	if fn(&u) || changed {
		if _, err := s.exec(ctx, tx, `UPDATE usage_limits_usage SET period = $3, used = $4, reserved = $5, epoch = $6,
	threshold_alerted = $7, exhausted_alerted = $8 WHERE policy_id = $1 AND value_key = $2`,
			e.PolicyID, e.ValueKey, e.Period, u.Usage, u.Reserved, u.Epoch, u.ThresholdAlerted, u.ExhaustedAlerted); err != nil {
			return u, fmt.Errorf("sqlstore: usage counter: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return u, fmt.Errorf("sqlstore: usage counter: %w", err)
	}
	return u, nil
}

// counterConn is a connection of the store's pool for one counter
// transaction. On SQLite its commits are not synced to disk one by one
// (synchronous=NORMAL for the transaction, FULL again after): a committed
// counter survives a crash or kill of the process, and only the latest
// commits can be lost to a crash of the machine, while a request's two
// counter transactions no longer wait for two syncs (about 1 ms each)
// under the database's one write lock. Every other write keeps
// synchronous=FULL.
type counterConn struct {
	*sql.Conn
	sqlite bool
}

func (s *Store) counterConn(ctx context.Context) (counterConn, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return counterConn{}, fmt.Errorf("sqlstore: usage counter: %w", err)
	}
	c := counterConn{Conn: conn, sqlite: s.dialect == dialectSQLite}
	if c.sqlite {
		if _, err := conn.ExecContext(ctx, `PRAGMA synchronous = NORMAL`); err != nil {
			c.release()
			return counterConn{}, fmt.Errorf("sqlstore: usage counter: %w", err)
		}
	}
	return c, nil
}

// release gives the connection back to the pool, synchronous=FULL again;
// one that cannot be set back is closed instead.
func (c counterConn) release() {
	if c.sqlite {
		if _, err := c.ExecContext(context.Background(), `PRAGMA synchronous = FULL`); err != nil {
			c.Raw(func(any) error { return driver.ErrBadConn }) // not returned to the pool
		}
	}
	c.Close()
}

// Reserve implements budget.Counter.
func (s *Store) Reserve(ctx context.Context, e budget.EntityKey, limit, estimate float64) (budget.Reservation, error) {
	r := budget.Reservation{EntityKey: e, Estimate: estimate}
	_, err := s.withCounter(ctx, e, func(u *budget.Entity) bool {
		r.Usage, r.Epoch = u.Usage, u.Epoch
		if u.Usage+u.Reserved < limit {
			r.Allowed = true
			u.Reserved += estimate
			return estimate != 0
		}
		return false
	})
	if err != nil {
		return budget.Reservation{}, err
	}
	return r, nil
}

// Settle implements budget.Counter.
func (s *Store) Settle(ctx context.Context, r budget.Reservation, period string, used float64, th budget.Thresholds) (budget.Settlement, error) {
	var out budget.Settlement
	key := budget.EntityKey{PolicyID: r.PolicyID, ValueKey: r.ValueKey, Period: period}
	_, err := s.withCounter(ctx, key, func(u *budget.Entity) bool {
		if r.Allowed && r.Period == u.Period && r.Epoch == u.Epoch {
			u.Reserved = max(u.Reserved-r.Estimate, 0)
		}
		u.Usage += used
		out.Usage = u.Usage
		if th.Alert >= 0 && u.Usage >= th.Alert && !u.ThresholdAlerted {
			u.ThresholdAlerted, out.AlertCrossed = true, true
		}
		if u.Usage >= th.Limit && !u.ExhaustedAlerted {
			u.ExhaustedAlerted, out.LimitCrossed = true, true
		}
		return true
	})
	if err != nil {
		return budget.Settlement{}, err
	}
	return out, nil
}

// UsageEntities implements budget.Counter: the counters of
// policyID, by value key.
func (s *Store) UsageEntities(ctx context.Context, policyID string) ([]budget.Entity, error) {
	rows, err := s.db.QueryContext(ctx, s.dialect.rebind(`SELECT value_key, period, used, reserved, epoch, threshold_alerted, exhausted_alerted
FROM usage_limits_usage WHERE policy_id = $1 ORDER BY value_key`), policyID)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: usage counters: %w", err)
	}
	defer rows.Close()
	var out []budget.Entity
	for rows.Next() {
		u := budget.Entity{EntityKey: budget.EntityKey{PolicyID: policyID}}
		if err := rows.Scan(&u.ValueKey, &u.Period, &u.Usage, &u.Reserved, &u.Epoch, &u.ThresholdAlerted, &u.ExhaustedAlerted); err != nil {
			return nil, fmt.Errorf("sqlstore: usage counters: %w", err)
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: usage counters: %w", err)
	}
	return out, nil
}

// ResetUsage implements budget.Counter in one statement.
func (s *Store) ResetUsage(ctx context.Context, policyID, valueKey string) (bool, error) {
	res, err := s.db.ExecContext(ctx, s.dialect.rebind(`UPDATE usage_limits_usage SET used = 0, reserved = 0, epoch = epoch + 1,
	threshold_alerted = FALSE, exhausted_alerted = FALSE WHERE policy_id = $1 AND value_key = $2`), policyID, valueKey)
	if err != nil {
		return false, fmt.Errorf("sqlstore: usage counter reset: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("sqlstore: usage counter reset: %w", err)
	}
	return n > 0, nil
}
