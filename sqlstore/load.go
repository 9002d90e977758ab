package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/modelgateway/gateway"

	"github.com/modelgateway/gateway/admin"
)

// Load creates or replaces every entry f names, as admin.Apply does to an
// in-memory store, and leaves every other entry alone: API keys by id,
// virtual keys by workspace and slug, configs by workspace and id, and
// rate-limits policies by id. f is checked first (admin.File.Records:
// the key or key_sha256 of each API key, roles, slugs, base URLs,
// configs, policies), then written in one transaction: an error leaves
// the store unchanged. f.CustomHosts is not stored. Its virtual keys and
// configs are the operator's (Tenant false), so applying the operator's
// file again makes its hosts trusted again, whatever a tenant or a
// migration (see migrations/*/0008_trust.sql) marked them.
//
// An API key entry whose key another stored id holds is refused with
// gateway.ErrConflict.
func (s *Store) Load(ctx context.Context, f *admin.File) error {
	recs, err := f.Records()
	if err != nil {
		return err
	}
	keys, vkeys, configs, policies := ptrs(recs.APIKeys), ptrs(recs.VirtualKeys), ptrs(recs.Configs), ptrs(recs.Policies)
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
		now := time.Now().UTC()
		for i := range recs.Workspaces {
			w := &recs.Workspaces[i]
			cur, err := s.workspace(ctx, tx, w.ID)
			switch {
			case errors.Is(err, gateway.ErrNotFound):
				c := *w
				c.CreatedAt, c.UpdatedAt = now, now
				w = &c
			case err != nil:
				return err
			default:
				w = admin.MergeFileWorkspace(cur, w, now)
			}
			if err := s.writeWorkspace(ctx, tx, w); err != nil {
				return err
			}
		}
		return nil
	})
}

// ptrs returns pointers to the elements of s.
func ptrs[T any](s []T) []*T {
	out := make([]*T, len(s))
	for i := range s {
		out[i] = &s[i]
	}
	return out
}
