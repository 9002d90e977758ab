package sqlstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/sqlstore"
)

// TestCatchUpMatchesFullLoad: a replica that catches up through the
// change log after random writes (creates, replacements, deletes of every
// kind, in several workspaces, sharing slugs) answers every lookup as a
// store that read the whole database does.
func TestCatchUpMatchesFullLoad(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		a := openStore(t, dsn, sqlstore.Options{})
		b := openStore(t, dsn, sqlstore.Options{})
		rng := rand.New(rand.NewPCG(1, 2))
		slugs := []string{"s1", "s2", "s3"}
		workspaces := []string{"", "ws-1", "ws-2"}
		policyIDs := []string{policyA, policyB}
		var digests [][32]byte // every digest ever written, so that a stale one left behind shows
		for i := range 150 {
			ws, slug := workspaces[rng.IntN(3)], slugs[rng.IntN(3)]
			var err error
			switch rng.IntN(8) {
			case 0, 1:
				id := fmt.Sprintf("key-%d", rng.IntN(6))
				k := &gateway.APIKey{ID: id, Digest: gateway.HashAPIKey(fmt.Sprintf("gw-%s-%d", id, i)), WorkspaceID: ws}
				if rng.IntN(2) == 0 {
					k.PreviousDigest, k.PreviousValidUntil = gateway.HashAPIKey(fmt.Sprintf("gw-prev-%d", i)), time.Now().Add(time.Hour)
				}
				digests = append(digests, k.Digest, k.PreviousDigest)
				err = a.PutAPIKey(ctx, k)
			case 2:
				err = a.DeleteAPIKey(ctx, fmt.Sprintf("key-%d", rng.IntN(6)))
			case 3:
				err = a.PutVirtualKey(ctx, &gateway.VirtualKey{Slug: slug, WorkspaceID: ws, Provider: "openai", APIKey: fmt.Sprintf("sk-%d", i)})
			case 4:
				err = a.DeleteVirtualKey(ctx, ws, slug)
			case 5:
				err = a.PutConfig(ctx, &gateway.SavedConfig{ID: slug, WorkspaceID: ws, Config: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
			case 6:
				err = a.DeleteConfig(ctx, ws, slug)
			case 7:
				p := policy(policyIDs[rng.IntN(2)], ws, fmt.Sprintf("2026-01-01T00:00:%02dZ", i%60))
				if rng.IntN(3) == 0 {
					err = a.DeletePolicy(ctx, p.ID)
				} else {
					err = a.PutPolicy(ctx, p)
				}
			}
			if err != nil && err != gateway.ErrNotFound && !isConflict(err) {
				t.Fatalf("write %d: %v", i, err)
			}
			if i%10 != 9 {
				continue
			}
			if err := b.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			fresh := openStore(t, dsn, sqlstore.Options{})
			if diff := cmp.Diff(lookups(t, fresh, digests, slugs, workspaces), lookups(t, b, digests, slugs, workspaces)); diff != "" {
				t.Fatalf("after write %d, the caught-up replica differs from a full load (-full +caught up):\n%s", i, diff)
			}
			fresh.Close()
		}
	})
}

// TestCatchUpAfterPruning: a replica further behind than the change log
// reaches reads everything, and still sees every write.
func TestCatchUpAfterPruning(t *testing.T) {
	ctx := context.Background()
	dsn := sqliteDSN(t)
	a := openStore(t, dsn, sqlstore.Options{})
	b := openStore(t, dsn, sqlstore.Options{})
	if err := a.PutVirtualKey(ctx, &gateway.VirtualKey{Slug: "v", Provider: "openai", APIKey: "sk-1"}); err != nil {
		t.Fatal(err)
	}
	// The generation jumps past what the log keeps, as after 100,000
	// writes; the next write prunes every change before it.
	if _, err := rawDB(t, dsn).Exec(`UPDATE generation SET value = value + 1000000`); err != nil {
		t.Fatal(err)
	}
	if err := a.PutVirtualKey(ctx, &gateway.VirtualKey{Slug: "w", Provider: "openai", APIKey: "sk-2"}); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := rawDB(t, dsn).QueryRow(`SELECT COUNT(*) FROM changes`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("changes kept = %d, %v; want only the last write's", n, err)
	}
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	for _, slug := range []string{"v", "w"} {
		if _, err := b.VirtualKey(ctx, slug); err != nil {
			t.Errorf("replica b after a full reload: virtual key %s: %v", slug, err)
		}
	}

	// A write of more records than catchUp reads one by one (a big Load)
	// is caught up by reading everything too.
	var f admin.File
	for i := range 2100 {
		f.APIKeys = append(f.APIKeys, admin.KeyEntry{ID: fmt.Sprintf("key-%d", i), Key: fmt.Sprintf("gw-%d", i)})
	}
	if err := a.Load(ctx, &f); err != nil {
		t.Fatal(err)
	}
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1234, 2099} {
		if k, err := b.APIKey(ctx, gateway.HashAPIKey(fmt.Sprintf("gw-%d", i))); err != nil || k.ID != fmt.Sprintf("key-%d", i) {
			t.Errorf("replica b after a big Load: key %d = %v, %v", i, k, err)
		}
	}
}

func isConflict(err error) bool { return errors.Is(err, gateway.ErrConflict) }

// lookupSet is what a store answers to the data plane's lookups.
type lookupSet struct {
	Keys     []gateway.APIKey
	ByDigest map[string]string // digest (hex) → key id, current and previous
	VKeys    map[string]string // slug → workspace and key
	Configs  map[string]string // id → workspace and config
	Policies map[string][]string
}

func lookups(t *testing.T, s *sqlstore.Store, digests [][32]byte, slugs, workspaces []string) lookupSet {
	t.Helper()
	ctx := context.Background()
	keys, err := s.APIKeys(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	ls := lookupSet{Keys: keys, ByDigest: map[string]string{}, VKeys: map[string]string{}, Configs: map[string]string{},
		Policies: map[string][]string{}}
	for _, d := range digests {
		if got, err := s.APIKey(ctx, d); err == nil {
			ls.ByDigest[fmt.Sprintf("%x", d)] = got.ID
		}
	}
	for _, slug := range slugs {
		for _, ws := range workspaces {
			if vk, err := s.VirtualKeyIn(ctx, ws, slug); err == nil {
				ls.VKeys[ws+"/"+slug] = vk.APIKey
			}
			if c, err := s.ConfigIn(ctx, ws, slug); err == nil {
				ls.Configs[ws+"/"+slug] = string(c.Config)
			}
		}
		if vk, err := s.VirtualKey(ctx, slug); err == nil {
			ls.VKeys[slug] = vk.WorkspaceID + "/" + vk.APIKey
		}
		if c, err := s.Config(ctx, slug); err == nil {
			ls.Configs[slug] = c.WorkspaceID + "/" + string(c.Config)
		}
	}
	for _, ws := range workspaces {
		ps, err := s.Policies(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			ls.Policies[ws] = append(ls.Policies[ws], p.ID+"@"+p.WorkspaceID+"@"+p.CreatedAt)
		}
	}
	return ls
}
