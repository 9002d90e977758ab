package gateway

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestMemoryStoreAPIKeys(t *testing.T) {
	ctx := context.Background()
	s := &MemoryStore{}
	s.AddAPIKey(APIKey{ID: "file-key", Digest: HashAPIKey("gw-file"), WorkspaceID: "ws-1"})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := APIKey{ID: "a", Digest: HashAPIKey("gw-a"), WorkspaceID: "ws-1", CreatedAt: t0, UpdatedAt: t0, Scopes: []Scope{ScopeAPIKeysRead}}
	if err := s.CreateAPIKey(ctx, &a); err != nil {
		t.Fatal(err)
	}
	a.Scopes[0] = ScopeConfigsWrite // the store keeps its own copy
	for _, dup := range []APIKey{
		{ID: "a", Digest: HashAPIKey("gw-other")},
		{ID: "b", Digest: HashAPIKey("gw-a")},
		{ID: "c", Digest: HashAPIKey("gw-file")},
	} {
		if err := s.CreateAPIKey(ctx, &dup); !errors.Is(err, ErrConflict) {
			t.Errorf("CreateAPIKey(%s) = %v, want ErrConflict", dup.ID, err)
		}
	}
	if e := errorFor(ErrConflict); e.Status != http.StatusConflict || e.Code != CodeConflict {
		t.Errorf("ErrConflict answers %d %s, want 409 conflict", e.Status, e.Code)
	}
	got, err := s.APIKeyByID(ctx, "a")
	if err != nil || got.Scopes[0] != ScopeAPIKeysRead {
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
	rot.Digest, rot.UpdatedAt = HashAPIKey("gw-a2"), t0.Add(time.Second)
	if err := s.UpdateAPIKey(ctx, &old, &rot); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"gw-a", "gw-a2"} {
		if k, err := s.APIKey(ctx, HashAPIKey(k)); err != nil || k.ID != "a" {
			t.Errorf("during the transition, APIKey = %v, %v", k, err)
		}
	}
	if err := s.UpdateAPIKey(ctx, &old, &old); !errors.Is(err, ErrConflict) {
		t.Errorf("stale UpdateAPIKey = %v, want ErrConflict", err)
	}
	past := rot
	past.PreviousValidUntil, past.UpdatedAt = time.Now().Add(-time.Second), t0.Add(2*time.Second)
	if err := s.UpdateAPIKey(ctx, &rot, &past); err != nil {
		t.Fatal(err)
	}
	if _, err := s.APIKey(ctx, HashAPIKey("gw-a")); !errors.Is(err, ErrNotFound) {
		t.Errorf("previous digest after its deadline: %v, want ErrNotFound", err)
	}

	if err := s.DeleteAPIKey(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.APIKey(ctx, HashAPIKey("gw-a2")); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted key: %v, want ErrNotFound", err)
	}
	for _, err := range []error{s.DeleteAPIKey(ctx, "a"), s.UpdateAPIKey(ctx, &past, &past)} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("on a deleted key: %v, want ErrNotFound", err)
		}
	}
	if _, err := s.APIKeyByID(ctx, "a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("APIKeyByID(deleted) = %v", err)
	}
}
