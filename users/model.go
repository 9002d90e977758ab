package users

import (
	"crypto/sha256"
	"slices"
	"time"

	"github.com/modelgateway/gateway"
)

// Role is a user's organisation role.
type Role string

// Organisation roles.
const (
	// RoleOwner manages the whole organisation, owners included.
	RoleOwner Role = "owner"
	// RoleAdmin manages the whole organisation but its owners.
	RoleAdmin Role = "admin"
	// RoleMember acts only in the workspaces the user is a member of.
	RoleMember Role = "member"
)

// ManagesOrganisation reports whether r is owner or admin: a role whose
// console session acts with an organisation key of every scope.
func (r Role) ManagesOrganisation() bool { return r == RoleOwner || r == RoleAdmin }

// WorkspaceRole is a user's role in one workspace.
type WorkspaceRole string

// Workspace roles.
const (
	WorkspaceAdmin   WorkspaceRole = "admin"
	WorkspaceManager WorkspaceRole = "manager"
	WorkspaceMember  WorkspaceRole = "member"
)

// The scopes of the workspace roles: the one table of how a person's
// workspace role maps to what the gateway's API lets them do.
var (
	managerScopes = slices.DeleteFunc(slices.Clone(gateway.RoleScopes(gateway.RoleAdmin)), func(s gateway.Scope) bool {
		return s == gateway.ScopeAPIKeysWrite || s == gateway.ScopeWorkspacesWrite
	})
	memberScopes = []gateway.Scope{gateway.ScopeCompletionsWrite, gateway.ScopeLogsRead, gateway.ScopeAnalyticsRead,
		gateway.ScopeVirtualKeysRead, gateway.ScopeConfigsRead, gateway.ScopePoliciesRead, gateway.ScopePromptsRead,
		gateway.ScopeGuardrailsRead}
)

// WorkspaceScopes returns the scopes a workspace role stands for, within
// its workspace: admin, every scope (gateway.RoleScopes of
// gateway.RoleAdmin); manager, every scope but api_keys.write and
// workspaces.write; member, completions.write and the read scopes of
// logs, analytics, virtual keys, configs, policies, prompts and
// guardrails. An unknown role has none. The slice is shared and must not
// be modified.
func WorkspaceScopes(r WorkspaceRole) []gateway.Scope {
	switch r {
	case WorkspaceAdmin:
		return gateway.RoleScopes(gateway.RoleAdmin)
	case WorkspaceManager:
		return managerScopes
	case WorkspaceMember:
		return memberScopes
	}
	return nil
}

// User is a person's account.
type User struct {
	ID        string
	Email     string // lower case, unique
	FirstName string
	LastName  string
	Role      Role

	// PasswordHash is the hash the console wrote, in the PHC string
	// format, or empty for a user who signs in only through OIDC. It is
	// never answered by a route.
	PasswordHash string

	CreatedAt time.Time
	UpdatedAt time.Time
}

// Member is a user's membership of a workspace.
type Member struct {
	WorkspaceID string
	UserID      string
	Role        WorkspaceRole
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Grant is a workspace an invitation makes its person a member of.
type Grant struct {
	WorkspaceID string        `json:"workspace_id"`
	Role        WorkspaceRole `json:"role"`
}

// Invite is an invitation of a person, by email, to become a user.
type Invite struct {
	ID         string
	Digest     [sha256.Size]byte // of the token the invite link carries; the token is not kept
	Email      string            // lower case
	Role       Role
	Workspaces []Grant
	InvitedBy  string // the user who invited, or the API key when it was not a person's
	CreatedAt  time.Time
	ExpiresAt  time.Time
	AcceptedAt time.Time // zero while pending
}

// Status is the invite's status at now: accepted, expired or pending.
func (iv *Invite) Status(now time.Time) string {
	switch {
	case !iv.AcceptedAt.IsZero():
		return "accepted"
	case !now.Before(iv.ExpiresAt):
		return "expired"
	}
	return "pending"
}

// SessionKey is the key of a person's console session: a random gateway
// API key that Keys resolves to the person's current role.
type SessionKey struct {
	Digest      [sha256.Size]byte // the key's SHA-256 digest; the key itself is not kept
	UserID      string
	WorkspaceID string // the workspace a member's session acts in; empty for an owner or admin
	ExpiresAt   time.Time
}

// InviteTTL is how long an invite link is valid.
const InviteTTL = 7 * 24 * time.Hour
