// Package users is the people product of the gateway: user accounts with
// organisation roles, invitations, and the members of workspaces with
// workspace roles. A host mounts it beside gateway.New:
//
//	g := gateway.New(gateway.Options{Keys: users.Keys(store, store), ...})
//	users.Mount(g, users.Options{Store: store, Workspaces: store, Audit: auditor})
//
// Mount serves /admin/users, /admin/users/invites and
// /admin/workspaces/{workspaceId}/users in the shapes of the reference
// API. Only organisation keys manage people: reads need the
// workspaces.read scope and writes workspaces.write. An owner or admin
// who signs in to the console is given such a key for the session (see
// Keys).
//
// # Roles
//
// A user has one organisation role: owner or admin, who manage the whole
// organisation (their console session acts with an organisation key of
// every scope), or member, who acts only in a workspace they belong to.
// In each workspace a member has a workspace role, which stands for a
// set of the gateway's scopes (WorkspaceScopes): admin, every scope
// within the workspace; manager, every scope but api_keys.write and
// workspaces.write; member, completions.write and the read scopes of
// logs, analytics, virtual keys, configs, policies, prompts and
// guardrails.
//
// # Invitations
//
// An invitation answers invite_link once: a link to the console's
// /invite/{token} page, valid for seven days, where the person sets a
// name and a password and becomes a user (Accept). The token is random
// (256 bits) and stored only as its SHA-256 digest; resending an
// invitation replaces the token, so the old link stops working.
//
// # Passwords
//
// A user's PasswordHash is kept as the opaque string the console wrote
// (argon2id in the PHC string format); this package never hashes nor
// checks a password, and no route reads or writes it.
package users
