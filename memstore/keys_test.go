package memstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
)

// TestAPIKeys: a key is found by id, listed by workspace, copied in and
// out, found by its previous digest while rotated, and gone at once when
// deleted.
func TestAPIKeys(t *testing.T) {
	ctx := context.Background()
	s := New()
	s.AddAPIKey(gateway.APIKey{ID: "file-key", Digest: gateway.HashAPIKey("gw-file"), WorkspaceID: "ws-1"})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := gateway.APIKey{ID: "a", Digest: gateway.HashAPIKey("gw-a"), WorkspaceID: "ws-1", CreatedAt: t0, UpdatedAt: t0, Scopes: []gateway.Scope{gateway.ScopeAPIKeysRead}}
	if err := s.CreateAPIKey(ctx, &a); err != nil {
		t.Fatal(err)
	}
	a.Scopes[0] = gateway.ScopeConfigsWrite // the store keeps its own copy
	for _, dup := range []gateway.APIKey{
		{ID: "a", Digest: gateway.HashAPIKey("gw-other")},
		{ID: "b", Digest: gateway.HashAPIKey("gw-a")},
		{ID: "c", Digest: gateway.HashAPIKey("gw-file")},
	} {
		if err := s.CreateAPIKey(ctx, &dup); !errors.Is(err, gateway.ErrConflict) {
			t.Errorf("CreateAPIKey(%s) = %v, want gateway.ErrConflict", dup.ID, err)
		}
	}
	got, err := s.APIKeyByID(ctx, "a")
	if err != nil || got.Scopes[0] != gateway.ScopeAPIKeysRead {
		t.Fatalf("APIKeyByID = %+v, %v", got, err)
	}
	if ks, _ := s.APIKeys(ctx, "ws-1"); len(ks) != 2 || ks[0].ID != "file-key" {
		t.Errorf("APIKeys(ws-1) = %+v, want file-key then a", ks)
	}
	if ks, _ := s.APIKeys(ctx, "ws-2"); len(ks) != 0 {
		t.Errorf("APIKeys(ws-2) = %+v, want none", ks)
	}

	// Rotated with a transition: both digests find the key until the
	// deadline; an update from a stale read is refused.
	old := *got
	rot := *got
	rot.PreviousDigest, rot.PreviousValidUntil = rot.Digest, time.Now().Add(time.Hour)
	rot.Digest, rot.UpdatedAt = gateway.HashAPIKey("gw-a2"), t0.Add(time.Second)
	if err := s.UpdateAPIKey(ctx, &old, &rot); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"gw-a", "gw-a2"} {
		if k, err := s.APIKey(ctx, gateway.HashAPIKey(k)); err != nil || k.ID != "a" {
			t.Errorf("during the transition, gateway.APIKey = %v, %v", k, err)
		}
	}
	if err := s.UpdateAPIKey(ctx, &old, &old); !errors.Is(err, gateway.ErrConflict) {
		t.Errorf("stale UpdateAPIKey = %v, want gateway.ErrConflict", err)
	}
	past := rot
	past.PreviousValidUntil, past.UpdatedAt = time.Now().Add(-time.Second), t0.Add(2*time.Second)
	if err := s.UpdateAPIKey(ctx, &rot, &past); err != nil {
		t.Fatal(err)
	}
	if _, err := s.APIKey(ctx, gateway.HashAPIKey("gw-a")); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("previous digest after its deadline: %v, want gateway.ErrNotFound", err)
	}

	if err := s.DeleteAPIKey(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.APIKey(ctx, gateway.HashAPIKey("gw-a2")); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("deleted key: %v, want gateway.ErrNotFound", err)
	}
	for _, err := range []error{s.DeleteAPIKey(ctx, "a"), s.UpdateAPIKey(ctx, &past, &past)} {
		if !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("on a deleted key: %v, want gateway.ErrNotFound", err)
		}
	}
	if _, err := s.APIKeyByID(ctx, "a"); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("APIKeyByID(deleted) = %v", err)
	}
}
