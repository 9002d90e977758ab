package sqlstore

import (
	"context"
	"fmt"
	"time"

	gateway "github.com/modelgateway/gateway"
)

var _ gateway.ResponseStore = (*Store)(nil)

// PutResponse implements gateway.ResponseStore. Stored responses are not
// part of the snapshot: every replica reads them from the database.
func (s *Store) PutResponse(ctx context.Context, r *gateway.StoredResponse) error {
	_, err := s.db.ExecContext(ctx, s.dialect.rebind(`INSERT INTO responses (workspace_id, id, created_us, response, input)
	VALUES ($1, $2, $3, $4, $5)
	ON CONFLICT (workspace_id, id) DO UPDATE SET created_us = excluded.created_us, response = excluded.response, input = excluded.input`),
		r.Workspace, r.ID, r.Created.UnixMicro(), string(r.Response), string(r.Input))
	if err != nil {
		return fmt.Errorf("sqlstore: storing a response: %w", err)
	}
	return nil
}

// Response implements gateway.ResponseStore.
func (s *Store) Response(ctx context.Context, workspace, id string) (*gateway.StoredResponse, error) {
	r := &gateway.StoredResponse{ID: id, Workspace: workspace}
	var created int64
	var resp, input string
	err := s.db.QueryRowContext(ctx, s.dialect.rebind(`SELECT created_us, response, input FROM responses WHERE workspace_id = $1 AND id = $2`),
		workspace, id).Scan(&created, &resp, &input)
	if notFound(err) {
		return nil, gateway.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading a response: %w", err)
	}
	r.Created, r.Response, r.Input = time.UnixMicro(created), []byte(resp), []byte(input)
	return r, nil
}

// DeleteResponse implements gateway.ResponseStore.
func (s *Store) DeleteResponse(ctx context.Context, workspace, id string) error {
	res, err := s.db.ExecContext(ctx, s.dialect.rebind(`DELETE FROM responses WHERE workspace_id = $1 AND id = $2`), workspace, id)
	if err != nil {
		return fmt.Errorf("sqlstore: deleting a response: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return gateway.ErrNotFound
	}
	return nil
}
