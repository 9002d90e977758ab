package memstore

import (
	"testing"

	"github.com/modelgateway/gateway/observe"
)

// TestAuditBounded: past 10,000 records, each new one drops the oldest.
func TestAuditBounded(t *testing.T) {
	var s Store
	for i := range memoryAuditMax + 5 {
		s.AddAuditRecord(t.Context(), &observe.AuditRecord{Status: i})
	}
	recs, total, err := s.AuditRecords(t.Context(), observe.AuditQuery{Limit: 1})
	if err != nil || total != memoryAuditMax || len(recs) != 1 || recs[0].Status != memoryAuditMax+4 {
		t.Fatalf("AuditRecords = %d records (first %+v), total %d, %v", len(recs), recs, total, err)
	}
	recs, _, _ = s.AuditRecords(t.Context(), observe.AuditQuery{Offset: memoryAuditMax - 1})
	if len(recs) != 1 || recs[0].Status != 5 {
		t.Fatalf("oldest kept = %+v, want status 5", recs)
	}
}
