package sqlstore

import (
	"context"
	"database/sql"

	gateway "github.com/modelgateway/gateway"
)

// Load creates or replaces every entry f names, as gateway.MemoryStore.Load
// does, and leaves every other entry alone: API keys by id, virtual keys
// by workspace and slug, configs by workspace and id, and rate-limits
// policies by id. f is checked
// first, by MemoryStore.Load's own rules and messages (the key or
// key_sha256 of each API key, roles, slugs, base URLs, configs,
// policies), then written in one transaction: an error leaves the store
// unchanged. f.CustomHosts is not stored. Its virtual keys and configs
// are the operator's (Tenant false), so applying the operator's file
// again makes its hosts trusted again, whatever a tenant or a migration
// (see migrations/*/0008_trust.sql) marked them.
//
// An API key entry whose key another stored id holds is refused with
// gateway.ErrConflict.
func (s *Store) Load(ctx context.Context, f *gateway.StoreFile) error {
	// MemoryStore.Load checks f and normalises its records (digests,
	// default roles and statuses, lower-case policy ids); they are read
	// back from it.
	var m gateway.MemoryStore
	if err := m.Load(f); err != nil {
		return err
	}
	keys := make([]*gateway.APIKey, 0, len(f.APIKeys))
	for _, e := range f.APIKeys {
		d := gateway.HashAPIKey(e.Key)
		if e.Key == "" {
			var err error
			if d, err = gateway.ParseKeyDigest(e.KeySHA256); err != nil {
				return err
			}
		}
		k, err := m.APIKey(ctx, d)
		if err != nil {
			return err
		}
		keys = append(keys, k)
	}
	vkeys := make([]*gateway.VirtualKey, 0, len(f.VirtualKeys))
	for _, e := range f.VirtualKeys {
		vk, err := m.VirtualKey(ctx, e.Slug)
		if err != nil {
			return err
		}
		vkeys = append(vkeys, vk)
	}
	configs := make([]*gateway.SavedConfig, 0, len(f.Configs))
	for _, e := range f.Configs {
		c, err := m.Config(ctx, e.ID)
		if err != nil {
			return err
		}
		configs = append(configs, c)
	}
	policies := make([]*gateway.RateLimitsPolicy, 0, len(f.RateLimitsPolicies))
	for _, e := range f.RateLimitsPolicies {
		p, err := m.Policy(ctx, e.ID)
		if err != nil {
			return err
		}
		policies = append(policies, p)
	}
	return s.update(ctx, func(tx *sql.Tx) error {
		for _, k := range keys {
			if err := s.putAPIKey(ctx, tx, k); err != nil {
				return err
			}
		}
		for _, vk := range vkeys {
			if err := s.putVirtualKey(ctx, tx, vk); err != nil {
				return err
			}
		}
		for _, c := range configs {
			if err := s.putConfig(ctx, tx, c, false); err != nil {
				return err
			}
		}
		for _, p := range policies {
			if err := s.putPolicy(ctx, tx, p); err != nil {
				return err
			}
		}
		return nil
	})
}
