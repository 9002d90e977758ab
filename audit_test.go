package gateway

import "testing"

func TestMemoryAuditBounded(t *testing.T) {
	var s MemoryStore
	for i := range memoryAuditMax + 5 {
		s.AddAuditRecord(t.Context(), &AuditRecord{Status: i})
	}
	recs, total, err := s.AuditRecords(t.Context(), AuditQuery{Limit: 1})
	if err != nil || total != memoryAuditMax || len(recs) != 1 || recs[0].Status != memoryAuditMax+4 {
		t.Fatalf("AuditRecords = %d records (first %+v), total %d, %v", len(recs), recs, total, err)
	}
	recs, _, _ = s.AuditRecords(t.Context(), AuditQuery{Offset: memoryAuditMax - 1})
	if len(recs) != 1 || recs[0].Status != 5 {
		t.Fatalf("oldest kept = %+v, want status 5", recs)
	}
}

const auditPolicy = `{"name":"100 RPM","conditions":[{"key":"workspace_id","value":"ws-1"}],"group_by":[{"key":"api_key"}],"type":"requests","unit":"rpm","value":100}`
