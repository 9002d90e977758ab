package sqlstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/sqlstore"
)

// TestResponses: a stored response is read back by its workspace only,
// survives reopening the database, is replaced by a put of the same id,
// deleted, and goes with the request logs under retention.
func TestResponses(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn, sqlstore.Options{})
		now := time.Now().Truncate(time.Microsecond)
		old := &gateway.StoredResponse{ID: "resp_old", Workspace: "ws-1", Created: now.Add(-48 * time.Hour),
			Response: []byte(`{"id":"resp_old"}`), Input: []byte(`[]`)}
		r := &gateway.StoredResponse{ID: "resp_1", Workspace: "ws-1", Created: now,
			Response: []byte(`{"id":"resp_1","output":[]}`), Input: []byte(`[{"role":"user","content":"hi"}]`)}
		for _, x := range []*gateway.StoredResponse{old, r} {
			if err := s.PutResponse(ctx, x); err != nil {
				t.Fatal(err)
			}
		}
		s2 := openStore(t, dsn, sqlstore.Options{})
		got, err := s2.Response(ctx, "ws-1", "resp_1")
		if err != nil || string(got.Response) != string(r.Response) || string(got.Input) != string(r.Input) || !got.Created.Equal(now) {
			t.Fatalf("read back %+v, %v", got, err)
		}
		if _, err := s2.Response(ctx, "ws-2", "resp_1"); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("another workspace: %v, want ErrNotFound", err)
		}
		r.Response = []byte(`{"id":"resp_1","output":[1]}`)
		if err := s.PutResponse(ctx, r); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Response(ctx, "ws-1", "resp_1"); string(got.Response) != string(r.Response) {
			t.Errorf("after replacing: %s", got.Response)
		}
		if _, err := s.DeleteLogsBefore(ctx, now.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Response(ctx, "ws-1", "resp_old"); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("past retention: %v, want ErrNotFound", err)
		}
		if err := s.DeleteResponse(ctx, "ws-1", "resp_1"); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteResponse(ctx, "ws-1", "resp_1"); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("deleted twice: %v, want ErrNotFound", err)
		}
	})
}
