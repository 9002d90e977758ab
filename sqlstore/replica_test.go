package sqlstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/sqlstore"
)

// TestReplicas: two stores on one database, as two gateway replicas. A
// change written through one is in force on the other within 2 seconds,
// by the other's own background refresh at its default interval: a revoked key stops working, a
// deleted one disappears, a new config and policy appear.
func TestReplicas(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		a := openStore(t, dsn, sqlstore.Options{})
		key := &gateway.APIKey{ID: "team-a", Digest: gateway.HashAPIKey("gw-team-a"), WorkspaceID: "ws-1"}
		other := &gateway.APIKey{ID: "team-b", Digest: gateway.HashAPIKey("gw-team-b"), WorkspaceID: "ws-1"}
		for _, k := range []*gateway.APIKey{key, other} {
			if err := a.PutAPIKey(ctx, k); err != nil {
				t.Fatal(err)
			}
		}
		// b refreshes at the default interval, which must keep it within 2s.
		b, err := sqlstore.Open(ctx, dsn, sqlstore.Options{MasterKey: testKey})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		if _, err := b.APIKey(ctx, key.Digest); err != nil {
			t.Fatalf("replica b does not know the key at open: %v", err)
		}

		revoked := *key
		revoked.Disabled = true
		if err := a.PutAPIKey(ctx, &revoked); err != nil {
			t.Fatal(err)
		}
		took := waitFor(t, 2*time.Second, "a revoked key on the other replica", func() bool {
			k, err := b.APIKey(ctx, key.Digest)
			return err == nil && k.Disabled
		})
		t.Logf("revocation in force on the other replica after %v", took)

		if err := a.DeleteAPIKey(ctx, other.ID); err != nil {
			t.Fatal(err)
		}
		took = waitFor(t, 2*time.Second, "a deleted key gone from the other replica", func() bool {
			_, err := b.APIKey(ctx, other.Digest)
			return errors.Is(err, gateway.ErrNotFound)
		})
		t.Logf("deletion in force on the other replica after %v", took)

		if err := a.Load(ctx, mustStoreFile(t, `{"configs": [{"id": "pc-new", "config": {"provider": "openai", "api_key": "sk-x"}}],
		  "rate_limits_policies": [{"id": "`+policyA+`", "workspace_id": "ws-1", "type": "requests", "unit": "rpm", "value": 5}]}`)); err != nil {
			t.Fatal(err)
		}
		took = waitFor(t, 2*time.Second, "a new config and policy on the other replica", func() bool {
			_, cerr := b.Config(ctx, "pc-new")
			ps, _ := b.Policies(ctx, "ws-1")
			return cerr == nil && len(ps) == 1
		})
		t.Logf("new config and policy in force on the other replica after %v", took)

		// And the other way round, through b's writes.
		if err := b.DeleteConfig(ctx, "", "pc-new"); err != nil {
			t.Fatal(err)
		}
		if err := a.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Config(ctx, "pc-new"); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("a still has the config b deleted after Refresh: %v", err)
		}
	})
}

func mustStoreFile(t *testing.T, doc string) *admin.File {
	t.Helper()
	f, err := admin.Decode(bytes.NewReader([]byte(doc)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestCompareAndSwapAcrossReplicas: concurrent read-change-swap loops,
// as racing control-plane PUTs on two replicas, lose no update: every
// successful swap counts once in the final value.
func TestCompareAndSwapAcrossReplicas(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		stores := []*sqlstore.Store{openStore(t, dsn, sqlstore.Options{}), openStore(t, dsn, sqlstore.Options{})}
		p := policy(policyA, "ws-1", "1")
		p.Value = 1
		if err := stores[0].PutPolicy(ctx, p); err != nil {
			t.Fatal(err)
		}
		if err := stores[1].Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		const workers, increments = 4, 5
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := range workers {
			wg.Go(func() {
				s := stores[w%len(stores)]
				for range increments {
					for attempt := 0; ; attempt++ {
						if attempt == 1000 {
							errs <- errors.New("no swap succeeded in 1000 attempts")
							return
						}
						read, err := s.Policy(ctx, policyA)
						if err != nil {
							errs <- err
							return
						}
						next := *read
						next.Value++
						ok, err := s.CompareAndSwapPolicy(ctx, read, &next)
						if err != nil {
							errs <- err
							return
						}
						if ok {
							break
						}
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for i, s := range stores {
			if err := s.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.Policy(ctx, policyA); got.Value != 1+workers*increments {
				t.Errorf("store %d: value %v after %d swaps, want %d", i, got.Value, workers*increments, 1+workers*increments)
			}
		}
	})
}

// TestRefreshFailure: while the snapshot cannot be reloaded the
// background refresh keeps serving the last one, logs the failure once
// rather than at every poll, and logs the recovery.
func TestRefreshFailure(t *testing.T) {
	ctx := context.Background()
	dsn := sqliteDSN(t)
	logs := &syncBuffer{}
	s := openStore(t, dsn, sqlstore.Options{RefreshInterval: 5 * time.Millisecond,
		ErrorLog: slog.New(slog.NewJSONHandler(logs, nil))})
	if err := s.PutConfig(ctx, &gateway.SavedConfig{ID: "pc", Config: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, dsn)
	// A new generation whose reload fails: the config's sealed value no
	// longer opens.
	if _, err := db.Exec(`UPDATE configs SET config = X'00'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE generation SET value = value + 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO changes (gen, kind, ref) SELECT value, 'config', 'pc' FROM generation`); err != nil {
		t.Fatal(err)
	}
	errorLines := func() int { return bytes.Count(logs.Bytes(), []byte(`"level":"ERROR"`)) }
	waitFor(t, 2*time.Second, "the refresh failure logged", func() bool { return errorLines() >= 1 })
	for range 20 { // the background refresh keeps failing meanwhile
		if err := s.Refresh(ctx); err == nil {
			t.Fatal("Refresh succeeded over a broken row")
		}
		if c, err := s.Config(ctx, "pc"); err != nil || string(c.Config) != `{}` {
			t.Fatalf("config during the failure = %v, %v; want the last snapshot's", c, err)
		}
	}
	if err := s.PutConfig(ctx, &gateway.SavedConfig{ID: "pc", Config: json.RawMessage(`{"fixed":true}`)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "the recovery logged", func() bool { return bytes.Contains(logs.Bytes(), []byte("works again")) })
	if n := errorLines(); n != 1 {
		t.Errorf("%d error lines, want 1:\n%s", n, logs.Bytes())
	}
}

// syncBuffer is a bytes.Buffer safe for a logger writing while a test
// reads.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}
