package sqlstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/guardrail"
	"github.com/modelgateway/gateway/sqlstore"
)

// TestGuardrails stores, finds, lists, updates and deletes guardrails on
// every backend, and keeps each workspace to its own and the
// organisation's.
func TestGuardrails(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn, sqlstore.Options{})
		now := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
		rec := &guardrail.Record{ID: "id-1", Slug: "guard_one", Name: "one", WorkspaceID: "ws-1",
			Checks:     []guardrail.CheckDefinition{{ID: "default.regexMatch", Parameters: json.RawMessage(`{"rule":"x"}`)}},
			Actions:    guardrail.Actions{Deny: true, OnFail: &guardrail.FeedbackAction{Value: -5, Weight: 1, Metadata: "m"}},
			StreamMode: guardrail.StreamBuffer, OnError: guardrail.OnErrorAllow, VersionID: "v1", OwnerID: "k1",
			CreatedAt: now, UpdatedAt: now}
		org := &guardrail.Record{ID: "id-2", Slug: "guard_org", Name: "org", Checks: rec.Checks, StreamMode: guardrail.StreamObserve,
			OnError: guardrail.OnErrorDeny, VersionID: "v1", CreatedAt: now.Add(time.Second), UpdatedAt: now}
		for _, r := range []*guardrail.Record{rec, org} {
			if err := s.PutGuardrail(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		for _, ref := range []string{"id-1", "guard_one"} {
			got, err := s.Guardrail(ctx, "ws-1", ref)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(rec, got); diff != "" {
				t.Errorf("Guardrail(%s) differs (-put +got):\n%s", ref, diff)
			}
		}
		if _, err := s.Guardrail(ctx, "ws-2", "guard_one"); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("another workspace's guardrail: %v, want ErrNotFound", err)
		}
		if _, err := s.Guardrail(ctx, "ws-2", "guard_org"); err != nil {
			t.Errorf("the organisation's guardrail: %v", err)
		}
		if l, _ := s.ListGuardrails(ctx, "ws-2", false); len(l) != 1 || l[0].ID != "id-2" {
			t.Errorf("ws-2 lists %v", l)
		}
		if l, _ := s.ListGuardrails(ctx, "", true); len(l) != 2 || l[0].ID != "id-2" {
			t.Errorf("all: %v, want newest first", l)
		}
		dup := *org
		dup.ID, dup.Slug = "id-3", "guard_one"
		if err := s.PutGuardrail(ctx, &dup); !errors.Is(err, gateway.ErrConflict) {
			t.Errorf("a taken slug: %v, want ErrConflict", err)
		}
		upd := *rec
		upd.Name, upd.VersionID = "renamed", "v2"
		if err := s.PutGuardrail(ctx, &upd); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Guardrail(ctx, "ws-1", "id-1"); got.Name != "renamed" || got.VersionID != "v2" {
			t.Errorf("after update: %+v", got)
		}
		if err := s.DeleteGuardrail(ctx, "id-1"); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteGuardrail(ctx, "id-1"); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("deleted twice: %v", err)
		}
	})
}

// TestGuardrailVerdictsInLogs: a request log's guardrail verdict and hook
// results are stored and read back on every backend.
func TestGuardrailVerdictsInLogs(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn, sqlstore.Options{})
		hr := json.RawMessage(`{"before_request_hooks":[{"id":"g","verdict":false}],"after_request_hooks":[]}`)
		recs := []*gateway.RequestLog{
			{ID: "log-1", Time: time.Now().UTC(), TraceID: "t1", Method: "POST", Path: "/v1/chat/completions", Status: 446,
				Guardrails: "denied", HookResults: hr},
			{ID: "log-2", Time: time.Now().UTC(), TraceID: "t2", Method: "POST", Path: "/v1/chat/completions", Status: 200},
		}
		if err := s.AddLogs(ctx, recs); err != nil {
			t.Fatal(err)
		}
		got, err := s.Log(ctx, "", "log-1")
		if err != nil {
			t.Fatal(err)
		}
		if got.Guardrails != "denied" || string(got.HookResults) != string(hr) {
			t.Errorf("log-1: guardrails %q, hook results %s", got.Guardrails, got.HookResults)
		}
		if got, _ := s.Log(ctx, "", "log-2"); got.Guardrails != "" || got.HookResults != nil {
			t.Errorf("log-2: guardrails %q, hook results %s", got.Guardrails, got.HookResults)
		}
	})
}
