package sqlstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/sqlstore"
)

// TestAPIKeyStore mirrors memstore.s TestAPIKeys: ids and
// digests (current or previous) are unique; lists are by workspace,
// oldest first; a rotated key is found by both digests until its
// transition ends; an update from a stale read is refused.
func TestAPIKeyStore(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn, sqlstore.Options{})
		if err := s.PutAPIKey(ctx, &gateway.APIKey{ID: "file-key", Digest: gateway.HashAPIKey("gw-file"), WorkspaceID: "ws-1"}); err != nil {
			t.Fatal(err)
		}
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
				t.Errorf("CreateAPIKey(%s) = %v, want ErrConflict", dup.ID, err)
			}
		}
		got, err := s.APIKeyByID(ctx, "a")
		if err != nil || got.Scopes[0] != gateway.ScopeAPIKeysRead {
			t.Fatalf("APIKeyByID = %+v, %v", got, err)
		}
		got.Scopes[0] = gateway.ScopeConfigsWrite // a copy of the caller's
		if again, _ := s.APIKeyByID(ctx, "a"); again.Scopes[0] != gateway.ScopeAPIKeysRead {
			t.Errorf("a change to APIKeyByID's copy reached the store")
		}
		got.Scopes[0] = gateway.ScopeAPIKeysRead
		if ks, _ := s.APIKeys(ctx, "ws-1"); len(ks) != 2 || ks[0].ID != "file-key" || ks[1].ID != "a" {
			t.Errorf("APIKeys(ws-1) = %+v, want file-key then a", ks)
		}
		if ks, _ := s.APIKeys(ctx, ""); len(ks) != 2 {
			t.Errorf("APIKeys() = %+v, want both keys", ks)
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
				t.Errorf("during the transition, APIKey = %v, %v", k, err)
			}
		}
		if err := s.CreateAPIKey(ctx, &gateway.APIKey{ID: "d", Digest: gateway.HashAPIKey("gw-a")}); !errors.Is(err, gateway.ErrConflict) {
			t.Errorf("CreateAPIKey with a rotated key's previous key = %v, want ErrConflict", err)
		}
		if err := s.UpdateAPIKey(ctx, &old, &old); !errors.Is(err, gateway.ErrConflict) {
			t.Errorf("stale UpdateAPIKey = %v, want ErrConflict", err)
		}
		taken := rot
		taken.Digest = gateway.HashAPIKey("gw-file")
		if err := s.UpdateAPIKey(ctx, &rot, &taken); !errors.Is(err, gateway.ErrConflict) {
			t.Errorf("UpdateAPIKey to another key's digest = %v, want ErrConflict", err)
		}
		past := rot
		past.PreviousValidUntil, past.UpdatedAt = time.Now().Add(-time.Second), t0.Add(2*time.Second)
		if err := s.UpdateAPIKey(ctx, &rot, &past); err != nil {
			t.Fatal(err)
		}
		if _, err := s.APIKey(ctx, gateway.HashAPIKey("gw-a")); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("previous digest after its deadline: %v, want ErrNotFound", err)
		}

		if err := s.DeleteAPIKey(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.APIKey(ctx, gateway.HashAPIKey("gw-a2")); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("deleted key: %v, want ErrNotFound", err)
		}
		for _, err := range []error{s.DeleteAPIKey(ctx, "a"), s.UpdateAPIKey(ctx, &past, &past)} {
			if !errors.Is(err, gateway.ErrNotFound) {
				t.Errorf("on a deleted key: %v, want ErrNotFound", err)
			}
		}
		if _, err := s.APIKeyByID(ctx, "a"); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("APIKeyByID(deleted) = %v", err)
		}
	})
}

// TestRotationAcrossReplicas: a key rotated through one replica works on
// the other by both its keys during the transition, as the control plane
// promises callers that rotate.
func TestRotationAcrossReplicas(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		a := openStore(t, dsn, sqlstore.Options{})
		b := openStore(t, dsn, sqlstore.Options{RefreshInterval: 100 * time.Millisecond})
		k := &gateway.APIKey{ID: "k", Digest: gateway.HashAPIKey("gw-old"), WorkspaceID: "ws-1"}
		if err := a.CreateAPIKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		rot := *k
		rot.PreviousDigest, rot.PreviousValidUntil = k.Digest, time.Now().Add(time.Hour)
		rot.Digest, rot.UpdatedAt = gateway.HashAPIKey("gw-new"), time.Now()
		if err := a.UpdateAPIKey(ctx, k, &rot); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 2*time.Second, "the rotated key on the other replica", func() bool {
			_, err := b.APIKey(ctx, gateway.HashAPIKey("gw-new"))
			return err == nil
		})
		if got, err := b.APIKey(ctx, gateway.HashAPIKey("gw-old")); err != nil || got.ID != "k" {
			t.Errorf("the previous key during the transition on the other replica: %v, %v", got, err)
		}
	})
}
