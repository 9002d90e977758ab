package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/observe"
)

var _ observe.FeedbackStore = (*Store)(nil)

// feedbackColumns are the columns of a feedback row, in the order
// scanFeedback reads them.
const feedbackColumns = `id, workspace_id, trace_id, score, weight, metadata, created_us, updated_us`

// AddFeedback implements observe.FeedbackStore: fs in one transaction.
// Feedback is not part of the snapshot, so it does not move the
// generation.
func (s *Store) AddFeedback(ctx context.Context, fs []*observe.Feedback) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlstore: storing feedback: %w", err)
	}
	defer tx.Rollback()
	for len(fs) > 0 {
		chunk := fs[:min(len(fs), 100)]
		fs = fs[len(chunk):]
		args := make([]any, 0, 8*len(chunk))
		for _, f := range chunk {
			args = append(args, f.ID, f.WorkspaceID, f.TraceID, f.Value, f.Weight, nullJSON(f.Metadata),
				f.CreatedAt.UnixMicro(), f.UpdatedAt.UnixMicro())
		}
		if _, err := tx.ExecContext(ctx, s.dialect.rebind(`INSERT INTO feedback (`+feedbackColumns+`) VALUES `+
			valueRows(len(chunk), 8)), args...); err != nil {
			return fmt.Errorf("sqlstore: storing feedback: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlstore: storing feedback: %w", err)
	}
	return nil
}

// UpdateFeedback implements observe.FeedbackStore.
func (s *Store) UpdateFeedback(ctx context.Context, f *observe.Feedback) (*observe.Feedback, error) {
	q := `UPDATE feedback SET score = $1, weight = $2, updated_us = $3, metadata = COALESCE($4, metadata) WHERE id = $5`
	args := []any{f.Value, f.Weight, f.UpdatedAt.UnixMicro(), nullJSON(f.Metadata), f.ID}
	if f.WorkspaceID != "" {
		q += ` AND workspace_id = $6`
		args = append(args, f.WorkspaceID)
	}
	out, err := scanFeedback(s.db.QueryRowContext(ctx, s.dialect.rebind(q+` RETURNING `+feedbackColumns), args...))
	if notFound(err) {
		return nil, gateway.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: updating feedback: %w", err)
	}
	return out, nil
}

// FeedbackOf implements observe.FeedbackStore.
func (s *Store) FeedbackOf(ctx context.Context, workspaceID string, traceIDs []string) ([]observe.Feedback, error) {
	if traceIDs != nil && len(traceIDs) == 0 {
		return nil, nil
	}
	var (
		where []string
		args  []any
	)
	if workspaceID != "" {
		args = append(args, workspaceID)
		where = append(where, `workspace_id = $1`)
	}
	if traceIDs != nil {
		marks := make([]string, len(traceIDs))
		for i, t := range traceIDs {
			args = append(args, t)
			marks[i] = fmt.Sprintf("$%d", len(args))
		}
		where = append(where, `trace_id IN (`+strings.Join(marks, ", ")+`)`)
	}
	q := `SELECT ` + feedbackColumns + ` FROM feedback`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	rows, err := s.db.QueryContext(ctx, s.dialect.rebind(q+` ORDER BY created_us, id`), args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading feedback: %w", err)
	}
	defer rows.Close()
	var out []observe.Feedback
	for rows.Next() {
		f, err := scanFeedback(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: reading feedback: %w", err)
		}
		out = append(out, *f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: reading feedback: %w", err)
	}
	return out, nil
}

// scanFeedback reads one row of feedbackColumns; a missing row is
// sql.ErrNoRows, unwrapped.
func scanFeedback(row scanner) (*observe.Feedback, error) {
	var (
		f                  observe.Feedback
		meta               sql.NullString
		created, updatedUS int64
	)
	if err := row.Scan(&f.ID, &f.WorkspaceID, &f.TraceID, &f.Value, &f.Weight, &meta, &created, &updatedUS); err != nil {
		return nil, err
	}
	if meta.Valid {
		f.Metadata = []byte(meta.String)
	}
	f.CreatedAt, f.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updatedUS).UTC()
	return &f, nil
}
