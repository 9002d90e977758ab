package memstore_test

import (
	"testing"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
)

// TestZeroStore: a zero Store is as ready as New's, for the root's and
// the products' stores alike.
func TestZeroStore(t *testing.T) {
	var s memstore.Store
	s.AddAPIKey(gateway.APIKey{ID: "k", Digest: gateway.HashAPIKey("gw-k")})
	if k, err := s.APIKey(t.Context(), gateway.HashAPIKey("gw-k")); err != nil || k.ID != "k" {
		t.Fatalf("APIKey = %v, %v", k, err)
	}
	if err := s.CreateWorkspace(t.Context(), &gateway.Workspace{ID: "ws-1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddAuditRecord(t.Context(), &observe.AuditRecord{Action: "workspaces.create"}); err != nil {
		t.Fatal(err)
	}
	if recs, total, err := s.AuditRecords(t.Context(), observe.AuditQuery{}); err != nil || total != 1 || recs[0].Action != "workspaces.create" {
		t.Fatalf("AuditRecords = %v, %d, %v", recs, total, err)
	}
}
