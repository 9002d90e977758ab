package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
)

// TestResponses: a stored response is read back by its workspace only,
// deleted once, and the oldest go past the bound.
func TestResponses(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	r := &gateway.StoredResponse{ID: "resp_1", Workspace: "ws-1", Response: []byte(`{"id":"resp_1"}`), Input: []byte(`[]`)}
	if err := s.PutResponse(ctx, r); err != nil {
		t.Fatal(err)
	}
	r.Response[0] = 'X' // the store kept a copy
	if got, err := s.Response(ctx, "ws-1", "resp_1"); err != nil || string(got.Response) != `{"id":"resp_1"}` {
		t.Fatalf("read back %+v, %v", got, err)
	}
	if _, err := s.Response(ctx, "ws-2", "resp_1"); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("another workspace: %v", err)
	}
	if err := s.DeleteResponse(ctx, "ws-1", "resp_1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteResponse(ctx, "ws-1", "resp_1"); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("deleted twice: %v", err)
	}
	for i := range 10001 {
		s.PutResponse(ctx, &gateway.StoredResponse{ID: fmt.Sprint("r", i), Workspace: "ws-1"})
	}
	if _, err := s.Response(ctx, "ws-1", "r0"); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("oldest past the bound: %v", err)
	}
	if _, err := s.Response(ctx, "ws-1", "r10000"); err != nil {
		t.Errorf("newest: %v", err)
	}
}
