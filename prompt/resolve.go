package prompt

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
)

// Universal labels exist in every workspace: they cannot be changed or
// deleted, and a workspace cannot make another label of their names.
var universalLabels = []Record{
	{Kind: KindLabel, ID: "00000000-0000-4000-8000-000000000001", Slug: "production", Name: "production",
		Description: "The version in production", ColorCode: "#2e7d32", Status: statusActive},
	{Kind: KindLabel, ID: "00000000-0000-4000-8000-000000000002", Slug: "staging", Name: "staging",
		Description: "The version in staging", ColorCode: "#f9a825", Status: statusActive},
	{Kind: KindLabel, ID: "00000000-0000-4000-8000-000000000003", Slug: "development", Name: "development",
		Description: "The version in development", ColorCode: "#1565c0", Status: statusActive},
}

const (
	statusActive = "active"

	// atLatest and atDefault name the newest and the default version in
	// an address (id@latest); no label may take these names.
	atLatest  = "latest"
	atDefault = "default"
)

// universalLabel returns the universal label whose ID or name is key.
func universalLabel(key string) (*Record, bool) {
	for i := range universalLabels {
		if l := &universalLabels[i]; l.ID == key || l.Slug == key {
			return l.Clone(), true
		}
	}
	return nil, false
}

// label returns the label of workspace ws whose ID or name is key,
// universal ones included.
func label(ctx context.Context, s Store, ws, key string) (*Record, error) {
	if l, ok := universalLabel(key); ok {
		return l, nil
	}
	return s.Record(ctx, KindLabel, ws, key)
}

// SplitAddress splits the address of a prompt or partial into its ID or
// slug and what follows an @: a version number, a label's name, "latest"
// or "default" ("" when there is no @).
func SplitAddress(addr string) (key, at string) {
	key, at, _ = strings.Cut(addr, "@")
	return key, at
}

// resolve returns the record of kind and workspace ws that addr names,
// with the version it addresses: the default one, unless addr ends in
// @N (version N), @latest, @default or @label (the version the label
// points at). What is not found is a 404 naming param.
func resolve(ctx context.Context, s Store, kind Kind, ws, addr, param string) (*Record, *Version, error) {
	key, at := SplitAddress(addr)
	rec, err := s.Record(ctx, kind, ws, key)
	if errors.Is(err, gateway.ErrNotFound) {
		return nil, nil, notFound(param, "no "+string(kind)+" "+control.Quote(key))
	}
	if err != nil {
		return nil, nil, err
	}
	n, err := versionNumber(ctx, s, rec, at, param)
	if err != nil {
		return nil, nil, err
	}
	v, err := s.Version(ctx, rec.ID, n)
	if errors.Is(err, gateway.ErrNotFound) {
		return nil, nil, notFound(param, "no version "+strconv.Itoa(n)+" of "+string(kind)+" "+control.Quote(key))
	}
	if err != nil {
		return nil, nil, err
	}
	return rec, v, nil
}

// versionNumber returns the number of the version of rec that at (what
// follows the @ of an address) names.
func versionNumber(ctx context.Context, s Store, rec *Record, at, param string) (int, error) {
	switch at {
	case "", atDefault:
		return rec.DefaultVersion, nil
	case atLatest:
		return rec.LatestVersion, nil
	}
	if n, err := strconv.Atoi(at); err == nil {
		if n < 1 || n > rec.LatestVersion {
			return 0, notFound(param, "no version "+at+" of "+string(rec.Kind)+" "+control.Quote(rec.Slug))
		}
		return n, nil
	}
	l, err := label(ctx, s, rec.WorkspaceID, at)
	if errors.Is(err, gateway.ErrNotFound) {
		return 0, notFound(param, "no label "+control.Quote(at))
	}
	if err != nil {
		return 0, err
	}
	n, ok := rec.Labels[l.ID]
	if !ok {
		return 0, notFound(param, "label "+control.Quote(at)+" points at no version of "+string(rec.Kind)+" "+control.Quote(rec.Slug))
	}
	return n, nil
}
