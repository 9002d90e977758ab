package memstore

import (
	"context"
	"sync"

	"github.com/modelgateway/gateway"
)

// maxResponses bounds the responses a Store keeps: past it, the oldest
// stored goes first, as the oldest logs do.
const maxResponses = 10000

// responses is the part of a Store that keeps stored responses
// (gateway.ResponseStore). Its zero value is empty.
type responses struct {
	mu    sync.Mutex
	byKey map[responseKey]*gateway.StoredResponse
	order []responseKey // in the order stored, for the bound
}

type responseKey struct{ workspace, id string }

// PutResponse stores a copy of r, replacing a record of the same
// workspace and id; past 10,000 responses the oldest goes.
func (s *Store) PutResponse(_ context.Context, r *gateway.StoredResponse) error {
	c := *r
	c.Response = append([]byte(nil), r.Response...)
	c.Input = append([]byte(nil), r.Input...)
	k := responseKey{r.Workspace, r.ID}
	m := &s.responses
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byKey == nil {
		m.byKey = map[responseKey]*gateway.StoredResponse{}
	}
	if _, ok := m.byKey[k]; !ok {
		m.order = append(m.order, k)
	}
	m.byKey[k] = &c
	for len(m.byKey) > maxResponses && len(m.order) > 0 {
		delete(m.byKey, m.order[0])
		m.order = m.order[1:]
	}
	return nil
}

// Response returns the response id of workspace, or gateway.ErrNotFound.
// The record is the caller's to keep; it must not be modified.
func (s *Store) Response(_ context.Context, workspace, id string) (*gateway.StoredResponse, error) {
	m := &s.responses
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.byKey[responseKey{workspace, id}]
	if !ok {
		return nil, gateway.ErrNotFound
	}
	return r, nil
}

// DeleteResponse deletes the response id of workspace, or returns
// gateway.ErrNotFound.
func (s *Store) DeleteResponse(_ context.Context, workspace, id string) error {
	k := responseKey{workspace, id}
	m := &s.responses
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.byKey[k]; !ok {
		return gateway.ErrNotFound
	}
	delete(m.byKey, k)
	for i, o := range m.order {
		if o == k {
			m.order = append(m.order[:i], m.order[i+1:]...)
			break
		}
	}
	return nil
}
