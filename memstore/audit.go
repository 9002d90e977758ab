package memstore

import (
	"context"

	"github.com/modelgateway/gateway/observe"
)

// memoryAuditMax is how many audit records a Store keeps: past it,
// the oldest go.
const memoryAuditMax = 10000

// AddAuditRecord implements observe.AuditStore. Once the store holds 10,000
// records, each new one drops the oldest.
func (s *Store) AddAuditRecord(_ context.Context, rec *observe.AuditRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.audit) >= memoryAuditMax {
		s.audit = s.audit[len(s.audit)-memoryAuditMax+1:] // append reallocates, so the dropped ones are freed
	}
	s.audit = append(s.audit, *rec)
	return nil
}

// AuditRecords implements observe.AuditStore: the records q matches, newest
// first.
func (s *Store) AuditRecords(_ context.Context, q observe.AuditQuery) ([]observe.AuditRecord, int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []observe.AuditRecord
	total := 0
	for i := len(s.audit) - 1; i >= 0; i-- {
		rec := &s.audit[i]
		if !q.Match(rec) {
			continue
		}
		if total >= q.Offset && (q.Limit == 0 || len(out) < q.Limit) {
			out = append(out, *rec)
		}
		total++
	}
	return out, total, nil
}
