// Package admin is the gateway's administration product: the records a
// tenant or the operator writes and the data plane reads.
//
// Mount registers on a gateway the routes that manage them, under the
// gateway's prefix: /api-keys (with rotation), /virtual-keys, /configs
// (with their versions), /admin/workspaces and /policies/rate-limits. Each
// area is served when Options holds its store (KeyStore, VirtualKeyStore,
// ConfigStore, WorkspaceStore, PolicyStore: the write side of what the
// gateway reads through gateway.Options), and answers 404 otherwise; a
// path under an area's namespace that no route matches is a 404 too,
// never passed through to a provider. Every write is recorded through
// Options.Audit. A gateway on which Mount was never called passes these
// paths through to a provider like any other path.
//
// The operator's config file (File, Decode, Apply) fills the same stores
// at start.
package admin
