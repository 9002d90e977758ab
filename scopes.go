package gateway

import (
	"net/http"
	"slices"
)

// Scope is one permission of a gateway API key (the control plane):
// completions.write for every data-plane route (typed endpoints and
// pass-through), and <area>.read or <area>.write for an area of the
// control plane.
type Scope string

// Scopes of gateway API keys.
const (
	ScopeCompletionsWrite Scope = "completions.write"
	ScopeAPIKeysRead      Scope = "api_keys.read"
	ScopeAPIKeysWrite     Scope = "api_keys.write"
	ScopeVirtualKeysRead  Scope = "virtual_keys.read"
	ScopeVirtualKeysWrite Scope = "virtual_keys.write"
	ScopeConfigsRead      Scope = "configs.read"
	ScopeConfigsWrite     Scope = "configs.write"
	ScopePoliciesRead     Scope = "policies.read"
	ScopePoliciesWrite    Scope = "policies.write"
	ScopeLogsRead         Scope = "logs.read"
	ScopeLogsWrite        Scope = "logs.write"
	ScopeAnalyticsRead    Scope = "analytics.read"
	ScopeWorkspacesRead   Scope = "workspaces.read"
	ScopeWorkspacesWrite  Scope = "workspaces.write"
	ScopeAuditLogsRead    Scope = "audit_logs.read"
	ScopePromptsRead      Scope = "prompts.read"
	ScopePromptsWrite     Scope = "prompts.write"
	ScopeGuardrailsRead   Scope = "guardrails.read"
	ScopeGuardrailsWrite  Scope = "guardrails.write"
)

// allScopes are the scopes a key may hold, and the admin role's preset.
var allScopes = []Scope{ScopeCompletionsWrite, ScopeAPIKeysRead, ScopeAPIKeysWrite, ScopeVirtualKeysRead,
	ScopeVirtualKeysWrite, ScopeConfigsRead, ScopeConfigsWrite, ScopePoliciesRead, ScopePoliciesWrite,
	ScopeLogsRead, ScopeLogsWrite, ScopeAnalyticsRead, ScopeWorkspacesRead, ScopeWorkspacesWrite, ScopeAuditLogsRead,
	ScopeGuardrailsRead, ScopeGuardrailsWrite, ScopePromptsRead, ScopePromptsWrite}

// memberScopes is the member role's preset.
var memberScopes = []Scope{ScopeCompletionsWrite}

// ValidScope reports whether s names a scope the gateway knows.
func ValidScope(s Scope) bool { return slices.Contains(allScopes, s) }

// RoleScopes returns the scopes a role stands for when a key names none:
// member is completions.write; admin is every scope, within the key's
// workspace. The slice is shared and must not be modified.
func RoleScopes(r Role) []Scope {
	if r == RoleAdmin {
		return allScopes
	}
	return memberScopes
}

// Can reports whether the identity's key holds scope s.
func (id Identity) Can(s Scope) bool { return slices.Contains(id.Scopes, s) }

// missingScope is the 403 of a key that lacks scope s.
func missingScope(s Scope) *Error {
	return &Error{Status: http.StatusForbidden, Type: TypePermission, Code: CodePermissionDenied,
		Message: "this gateway API key lacks the " + string(s) + " scope"}
}
