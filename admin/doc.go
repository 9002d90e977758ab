// Package admin is the gateway's administration product (docs/architecture.md, Where the package is heading): the
// records a tenant or the operator writes and the data plane reads. It
// starts with the operator's config file (File, Decode, Apply); the
// control-plane routes of API keys, virtual keys, configs, workspaces and
// rate-limits policies follow it here from the root package.
package admin
