// Package storetest checks an implementation of prompt.Store: the tests
// every store of the prompt product passes (memstore.Store,
// sqlstore.Store on SQLite and Postgres).
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/prompt"
)

// Run runs the tests of a prompt.Store on stores newStore makes, each
// empty.
func Run(t *testing.T, newStore func(t *testing.T) prompt.Store) {
	t.Run("Records", func(t *testing.T) { testRecords(t, newStore(t)) })
	t.Run("Versions", func(t *testing.T) { testVersions(t, newStore(t)) })
	t.Run("ConcurrentUpdates", func(t *testing.T) { testConcurrent(t, newStore(t)) })
}

// at returns a time n microseconds after a fixed instant.
func at(n int) time.Time {
	return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(n) * time.Microsecond)
}

func record(kind prompt.Kind, id, ws, slug string, n int) *prompt.Record {
	return &prompt.Record{Kind: kind, ID: id, WorkspaceID: ws, Slug: slug, Name: "Name " + slug, Status: "active",
		CreatedAt: at(n), UpdatedAt: at(n)}
}

func version(rec *prompt.Record, n int) *prompt.Version {
	return &prompt.Version{ID: fmt.Sprintf("%s-v%d", rec.ID, n), RecordID: rec.ID, Number: n, Template: fmt.Sprintf(`["v%d {{x}}"]`, n),
		Model: "m", Parameters: json.RawMessage(`{"temperature":0.5}`), CreatedAt: at(100 + n)}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func testRecords(t *testing.T, s prompt.Store) {
	ctx := context.Background()
	p1 := record(prompt.KindPrompt, "id-1", "ws-1", "greeter", 2)
	p1.Labels = map[string]int{"l1": 1}
	p1.DefaultVersion, p1.LatestVersion = 1, 1
	must(t, s.CreateRecord(ctx, p1, version(p1, 1)))
	must(t, s.CreateRecord(ctx, record(prompt.KindPrompt, "id-0", "ws-1", "first", 1), nil))
	must(t, s.CreateRecord(ctx, record(prompt.KindPrompt, "id-2", "ws-2", "greeter", 3), nil))
	must(t, s.CreateRecord(ctx, record(prompt.KindLabel, "id-3", "ws-1", "greeter", 4), nil))
	for _, dup := range []*prompt.Record{record(prompt.KindPrompt, "id-9", "ws-1", "greeter", 5), record(prompt.KindLabel, "id-1", "ws-9", "x", 5)} {
		if err := s.CreateRecord(ctx, dup, nil); !errors.Is(err, gateway.ErrConflict) {
			t.Errorf("create %s %s in %s: %v, want ErrConflict", dup.ID, dup.Slug, dup.WorkspaceID, err)
		}
	}
	for _, key := range []string{"id-1", "greeter"} {
		got, err := s.Record(ctx, prompt.KindPrompt, "ws-1", key)
		if err != nil || got.ID != "id-1" || got.Labels["l1"] != 1 || !got.UpdatedAt.Equal(at(2)) || got.Name != "Name greeter" {
			t.Fatalf("Record(%s): %+v, %v", key, got, err)
		}
	}
	for _, c := range []struct {
		kind    prompt.Kind
		ws, key string
	}{{prompt.KindPrompt, "ws-2", "id-1"}, {prompt.KindPartial, "ws-1", "greeter"}, {prompt.KindPrompt, "", "greeter"}} {
		if _, err := s.Record(ctx, c.kind, c.ws, c.key); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("Record(%s, %s, %s): %v, want ErrNotFound", c.kind, c.ws, c.key, err)
		}
	}
	all, err := s.Records(ctx, prompt.KindPrompt, "ws-1")
	must(t, err)
	if len(all) != 2 || all[0].ID != "id-0" || all[1].ID != "id-1" {
		t.Fatalf("Records: %+v", all)
	}

	// Updates compare and swap on UpdatedAt.
	upd := p1.Clone()
	upd.Name, upd.UpdatedAt = "Renamed", at(10)
	must(t, s.UpdateRecord(ctx, p1, upd, nil))
	stale := p1.Clone()
	stale.UpdatedAt = at(11)
	if err := s.UpdateRecord(ctx, p1, stale, nil); !errors.Is(err, gateway.ErrConflict) {
		t.Errorf("stale update: %v, want ErrConflict", err)
	}
	taken := upd.Clone()
	taken.Slug, taken.UpdatedAt = "first", at(12)
	if err := s.UpdateRecord(ctx, upd, taken, nil); !errors.Is(err, gateway.ErrConflict) {
		t.Errorf("update to a taken slug: %v, want ErrConflict", err)
	}
	if err := s.UpdateRecord(ctx, record(prompt.KindPrompt, "nope", "ws-1", "nope", 1), record(prompt.KindPrompt, "nope", "ws-1", "nope", 2), nil); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("update of nothing: %v, want ErrNotFound", err)
	}
	got, err := s.Record(ctx, prompt.KindPrompt, "ws-1", "greeter")
	must(t, err)
	if got.Name != "Renamed" || !got.UpdatedAt.Equal(at(10)) {
		t.Fatalf("after update: %+v", got)
	}

	if err := s.DeleteRecord(ctx, prompt.KindPrompt, "ws-2", "id-1"); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("delete in another workspace: %v", err)
	}
	must(t, s.DeleteRecord(ctx, prompt.KindPrompt, "ws-1", "id-1"))
	if _, err := s.Version(ctx, "id-1", 1); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("a deleted record's version: %v", err)
	}
	// The slug is free again.
	must(t, s.CreateRecord(ctx, record(prompt.KindPrompt, "id-5", "ws-1", "greeter", 6), nil))
}

func testVersions(t *testing.T, s prompt.Store) {
	ctx := context.Background()
	rec := record(prompt.KindPartial, "p-1", "ws-1", "tone", 1)
	rec.DefaultVersion, rec.LatestVersion = 1, 1
	must(t, s.CreateRecord(ctx, rec, version(rec, 1)))
	cur := rec
	for n := 2; n <= 3; n++ {
		next := cur.Clone()
		next.LatestVersion, next.UpdatedAt = n, at(n)
		must(t, s.UpdateRecord(ctx, cur, next, version(next, n)))
		cur = next
	}
	vs, err := s.Versions(ctx, "p-1")
	must(t, err)
	if len(vs) != 3 || vs[0].Number != 3 || vs[2].Number != 1 || vs[1].Template != `["v2 {{x}}"]` ||
		string(vs[0].Parameters) != `{"temperature":0.5}` || !vs[2].CreatedAt.Equal(at(101)) {
		t.Fatalf("Versions: %+v", vs)
	}
	v, err := s.Version(ctx, "p-1", 2)
	if err != nil || v.ID != "p-1-v2" || v.Model != "m" {
		t.Fatalf("Version 2: %+v, %v", v, err)
	}
	if _, err := s.Version(ctx, "p-1", 4); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("Version 4: %v", err)
	}
	if vs, err := s.Versions(ctx, "none"); err != nil || len(vs) != 0 {
		t.Errorf("Versions of nothing: %v %v", vs, err)
	}
}

// testConcurrent: updates racing on one record, each reading, changing
// and writing back until it wins, lose none of the versions.
func testConcurrent(t *testing.T, s prompt.Store) {
	ctx := context.Background()
	rec := record(prompt.KindPrompt, "c-1", "ws-1", "busy", 1)
	rec.DefaultVersion, rec.LatestVersion = 1, 1
	must(t, s.CreateRecord(ctx, rec, version(rec, 1)))
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for try := 0; ; try++ {
				old, err := s.Record(ctx, prompt.KindPrompt, "ws-1", "c-1")
				if err != nil {
					errs <- err
					return
				}
				next := old.Clone()
				next.LatestVersion++
				next.UpdatedAt = old.UpdatedAt.Add(time.Duration(w+1) * time.Microsecond)
				err = s.UpdateRecord(ctx, old, next, version(next, next.LatestVersion))
				if err == nil {
					return
				}
				if !errors.Is(err, gateway.ErrConflict) || try > 1000 {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	vs, err := s.Versions(ctx, "c-1")
	must(t, err)
	got, err := s.Record(ctx, prompt.KindPrompt, "ws-1", "c-1")
	must(t, err)
	if len(vs) != writers+1 || got.LatestVersion != writers+1 {
		t.Fatalf("%d versions, latest %d; want %d", len(vs), got.LatestVersion, writers+1)
	}
}
