package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelgateway/gateway/observe"
)

var _ observe.AuditStore = (*Store)(nil)

// auditColumns are the columns of an audit record, in the order
// AddAuditRecord writes and AuditRecords reads them.
const auditColumns = `time, request_id, key_id, workspace_id, method, uri, action, resource_type, resource_id, status, client_ip, detail`

// AddAuditRecord implements observe.AuditStore: it appends rec, its time
// kept to the microsecond. Records are kept until the host deletes them.
func (s *Store) AddAuditRecord(ctx context.Context, rec *observe.AuditRecord) error {
	_, err := s.db.ExecContext(ctx, s.dialect.rebind(`INSERT INTO audit_logs (`+auditColumns+`)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`),
		dbTime(rec.Time), rec.RequestID, rec.KeyID, rec.WorkspaceID, rec.Method, rec.URI, rec.Action, rec.ResourceType,
		rec.ResourceID, rec.Status, rec.ClientIP, rec.Detail)
	if err != nil {
		return fmt.Errorf("sqlstore: adding an audit record: %w", err)
	}
	return nil
}

// AuditRecords implements observe.AuditStore: the page of records q
// selects, newest first, and how many it selects in all, in one read.
func (s *Store) AuditRecords(ctx context.Context, q observe.AuditQuery) ([]observe.AuditRecord, int, error) {
	var (
		conds []string
		args  []any
	)
	add := func(cond string, v any) {
		args = append(args, v)
		conds = append(conds, strings.ReplaceAll(cond, "$", "$"+strconv.Itoa(len(args))))
	}
	if !q.Start.IsZero() {
		add("time >= $", dbTime(q.Start))
	}
	if !q.End.IsZero() {
		add("time <= $", dbTime(q.End))
	}
	for _, f := range []struct{ column, value string }{
		{"method", q.Method}, {"uri", q.URI}, {"request_id", q.RequestID}, {"key_id", q.KeyID},
		{"workspace_id", q.WorkspaceID}, {"resource_type", q.ResourceType}, {"action", q.Action}, {"client_ip", q.ClientIP},
	} {
		if f.value != "" {
			add(f.column+" = $", f.value)
		}
	}
	if q.Status != 0 {
		add("status = $", q.Status)
	}
	where := ""
	if len(conds) > 0 {
		where = " WHERE " + strings.Join(conds, " AND ")
	}
	tx, err := s.readTx(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer tx.Rollback()
	var total int
	if err := tx.QueryRowContext(ctx, s.dialect.rebind(`SELECT COUNT(*) FROM audit_logs`+where), args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("sqlstore: reading audit records: %w", err)
	}
	query := `SELECT ` + auditColumns + ` FROM audit_logs` + where + ` ORDER BY time DESC, id DESC`
	if q.Limit > 0 || q.Offset > 0 {
		// An OFFSET needs a LIMIT before it in SQLite, where -1 is none;
		// Postgres says ALL.
		limit := strconv.Itoa(q.Limit)
		switch {
		case q.Limit > 0:
		case s.dialect == dialectPostgres:
			limit = "ALL"
		default:
			limit = "-1"
		}
		query += ` LIMIT ` + limit + ` OFFSET ` + strconv.Itoa(max(q.Offset, 0))
	}
	rows, err := tx.QueryContext(ctx, s.dialect.rebind(query), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("sqlstore: reading audit records: %w", err)
	}
	defer rows.Close()
	var out []observe.AuditRecord
	for rows.Next() {
		var (
			r observe.AuditRecord
			t sql.NullTime
		)
		if err := rows.Scan(&t, &r.RequestID, &r.KeyID, &r.WorkspaceID, &r.Method, &r.URI, &r.Action, &r.ResourceType,
			&r.ResourceID, &r.Status, &r.ClientIP, &r.Detail); err != nil {
			return nil, 0, fmt.Errorf("sqlstore: reading audit records: %w", err)
		}
		r.Time = fromNullTime(t)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("sqlstore: reading audit records: %w", err)
	}
	return out, total, nil
}
