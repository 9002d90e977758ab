// Package storetest checks an implementation of catalog.Store, with the
// virtual keys it joins with integrations, the same way for every store:
// memstore's and sqlstore's tests run it.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/catalog"
)

// Store is what Run checks: integrations, and the virtual keys made from
// them.
type Store interface {
	catalog.Store
	admin.VirtualKeyStore
	gateway.VirtualKeyStore
}

// Run checks the store open returns (a new, empty one per call): writes
// read back whole, a taken slug and a stale update are conflicts, and a
// provider (a virtual key whose Integration names an integration) is
// found by VirtualKey and VirtualKeyIn joined with its integration while
// it is granted to the provider's workspace, and not otherwise.
func Run(t *testing.T, open func(t *testing.T) Store) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	sample := func() *catalog.Integration {
		return &catalog.Integration{ID: "0b0f7a3e-9c1d-4c5e-8f00-000000000001", Slug: "openai-prod", Name: "OpenAI", Description: "d",
			Provider: "openai", APIKey: "sk-integration-secret", BaseURL: "https://llm.example.com/v1",
			HostSettings:   gateway.HostSettings{Region: "us-east-1", SecretAccessKey: "aws-secret", SessionToken: "aws-token"},
			AllowAllModels: false,
			Models: []catalog.Model{{Slug: "gpt-4o", Enabled: true}, {Slug: "my-ft", Enabled: true, Custom: true,
				Price: &gateway.ModelPrice{Input: 1, Output: 2}}, {Slug: "off", Enabled: false}},
			Workspaces: []catalog.Grant{{WorkspaceID: "ws-1", Provider: "openai-prod",
				RateLimits: json.RawMessage(`[{"type":"requests","unit":"rpm","value":2}]`)}},
			CreatedAt: t0, UpdatedAt: t0}
	}
	t.Run("round trip and conflicts", func(t *testing.T) {
		st := open(t)
		in := sample()
		if err := st.CreateIntegration(ctx, in); err != nil {
			t.Fatal(err)
		}
		got, err := st.Integration(ctx, "openai-prod")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(in, got) {
			t.Fatalf("read back\n%+v\nwant\n%+v", got, in)
		}
		if err := st.CreateIntegration(ctx, sample()); !errors.Is(err, gateway.ErrConflict) {
			t.Fatalf("a taken slug: %v", err)
		}
		upd := got.Clone()
		upd.Name, upd.UpdatedAt = "Renamed", t0.Add(time.Second)
		if err := st.UpdateIntegration(ctx, got, upd); err != nil {
			t.Fatal(err)
		}
		stale := got.Clone()
		stale.Name, stale.UpdatedAt = "Stale", t0.Add(2*time.Second)
		if err := st.UpdateIntegration(ctx, got, stale); !errors.Is(err, gateway.ErrConflict) {
			t.Fatalf("a stale update: %v", err)
		}
		all, err := st.Integrations(ctx)
		if err != nil || len(all) != 1 || all[0].Name != "Renamed" {
			t.Fatalf("Integrations = %+v, %v", all, err)
		}
		if err := st.DeleteIntegration(ctx, "openai-prod"); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Integration(ctx, "openai-prod"); !errors.Is(err, gateway.ErrNotFound) {
			t.Fatalf("after delete: %v", err)
		}
		if err := st.DeleteIntegration(ctx, "openai-prod"); !errors.Is(err, gateway.ErrNotFound) {
			t.Fatalf("delete again: %v", err)
		}
	})
	t.Run("providers joined while granted", func(t *testing.T) {
		st := open(t)
		in := sample()
		if err := st.CreateIntegration(ctx, in); err != nil {
			t.Fatal(err)
		}
		for _, ws := range []string{"ws-1", "ws-2"} {
			vk := &gateway.VirtualKey{Slug: "openai-prod", WorkspaceID: ws, Integration: "openai-prod", Provider: "openai",
				Name: "p", CreatedAt: t0, UpdatedAt: t0, Tenant: true}
			if err := st.CreateVirtualKey(ctx, vk); err != nil {
				t.Fatal(err)
			}
		}
		vk, err := st.VirtualKeyIn(ctx, "ws-1", "openai-prod")
		if err != nil {
			t.Fatal(err)
		}
		want := gateway.VirtualKey{Slug: "openai-prod", WorkspaceID: "ws-1", Integration: "openai-prod", Provider: "openai",
			APIKey: "sk-integration-secret", BaseURL: "https://llm.example.com/v1", HostSettings: in.HostSettings,
			Name: "p", CreatedAt: t0, UpdatedAt: t0, Tenant: true, NamedOnly: true,
			Models: []string{"gpt-4o", "my-ft"}, Prices: gateway.PriceTable{"my-ft": {Input: 1, Output: 2}}}
		if !reflect.DeepEqual(want, *vk) {
			t.Fatalf("joined provider\n%+v\nwant\n%+v", *vk, want)
		}
		if _, err := st.VirtualKeyIn(ctx, "ws-2", "openai-prod"); !errors.Is(err, gateway.ErrNotFound) {
			t.Fatalf("a provider of a workspace not granted: %v", err)
		}
		if vk, err := st.VirtualKey(ctx, "openai-prod"); err != nil || vk.WorkspaceID != "ws-1" || vk.APIKey == "" {
			t.Fatalf("VirtualKey = %+v, %v", vk, err)
		}
		// A change of the integration is in force at once.
		old, _ := st.Integration(ctx, "openai-prod")
		upd := old.Clone()
		upd.APIKey, upd.Workspaces, upd.UpdatedAt = "sk-rotated", append(upd.Workspaces, catalog.Grant{WorkspaceID: "ws-2", Provider: "openai-prod"}), t0.Add(time.Second)
		if err := st.UpdateIntegration(ctx, old, upd); err != nil {
			t.Fatal(err)
		}
		for _, ws := range []string{"ws-1", "ws-2"} {
			if vk, err := st.VirtualKeyIn(ctx, ws, "openai-prod"); err != nil || vk.APIKey != "sk-rotated" {
				t.Fatalf("%s after the update: %+v, %v", ws, vk, err)
			}
		}
		// The virtual keys' own view keeps no copy of the credential.
		list, err := st.VirtualKeys(ctx, "ws-1")
		if err != nil || len(list) != 1 || list[0].Integration != "openai-prod" || list[0].APIKey != "" {
			t.Fatalf("VirtualKeys = %+v, %v", list, err)
		}
		// Updating the provider through the virtual keys keeps it joined.
		cur, _ := st.VirtualKeyIn(ctx, "ws-1", "openai-prod")
		next := *cur
		next.Name, next.UpdatedAt = "renamed", t0.Add(time.Minute)
		if err := st.UpdateVirtualKey(ctx, cur, &next); err != nil {
			t.Fatal(err)
		}
		if vk, err := st.VirtualKeyIn(ctx, "ws-1", "openai-prod"); err != nil || vk.Name != "renamed" || vk.APIKey != "sk-rotated" {
			t.Fatalf("after the provider's update: %+v, %v", vk, err)
		}
		if err := st.DeleteIntegration(ctx, "openai-prod"); err != nil {
			t.Fatal(err)
		}
		for _, ws := range []string{"ws-1", "ws-2"} {
			if _, err := st.VirtualKeyIn(ctx, ws, "openai-prod"); !errors.Is(err, gateway.ErrNotFound) {
				t.Fatalf("%s after the integration went: %v", ws, err)
			}
		}
		if _, err := st.VirtualKey(ctx, "openai-prod"); !errors.Is(err, gateway.ErrNotFound) {
			t.Fatalf("VirtualKey after the integration went: %v", err)
		}
	})
}
