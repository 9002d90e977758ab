package admin

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/observe"
)

// Options configure the administration routes Mount adds to a gateway.
// Each store is the write side of what the gateway reads on the data
// plane; a host passes the same store to both (memstore.Store and
// sqlstore.Store implement every interface). A nil store leaves its
// routes answering 404, saying that the records are not managed on this
// gateway.
type Options struct {
	// Keys serves /api-keys. Nil: API keys are not managed.
	Keys KeyStore

	// VirtualKeys serves /virtual-keys. Nil: virtual keys are not
	// managed.
	VirtualKeys VirtualKeyStore

	// Configs serves /configs. Nil: configs are not managed.
	Configs ConfigStore

	// Workspaces serves /admin/workspaces, and lists the workspaces whose
	// rate-limits policies an organisation key's list shows when the
	// policy store cannot list them all. Nil: workspaces are not managed.
	// Workspace ids that keys, virtual keys and configs name need not be
	// registered here.
	Workspaces WorkspaceStore

	// Policies serves /policies/rate-limits. Nil: those routes answer
	// 404, saying that rate-limits policies are not enabled.
	Policies PolicyStore

	// Guardrails checks the guardrail ids written in configs and in the
	// defaults of keys and workspaces: an id the record's workspace
	// cannot attach is refused with a 400 naming where it is. Nil leaves
	// a config's ids to be checked when a request uses it, and refuses
	// defaults that attach guardrails (a gateway without it checks none).
	Guardrails Guardrails

	// Audit records every write of these routes (POST, PUT or DELETE),
	// as acting on api_keys, virtual_keys, configs, workspaces or
	// rate_limits_policies. Nil records nothing.
	Audit *observe.Auditor

	// ErrorLog receives the stores' failures. Nil means slog.Default().
	ErrorLog *slog.Logger

	// Now is the clock of the records written (created and updated
	// times, expiry checks, rotation deadlines). Nil means time.Now.
	Now func() time.Time
}

// plane is the administration routes of one Mount.
type plane struct {
	g *gateway.Gateway
	o Options
}

func (a *plane) now() time.Time { return control.Clock(a.o.Now) }

// Mount registers the administration routes on g (through g.Handle, so
// under its prefix, behind its trace, key and header stages, and never
// rate-limited, routed or request-logged):
//
//	/api-keys, /api-keys/{id}, /api-keys/{id}/rotate, /api-keys/{type}/{subtype}
//	/virtual-keys, /virtual-keys/{slug}
//	/configs, /configs/{slug}, /configs/{slug}/versions
//	/admin/workspaces, /admin/workspaces/{workspaceId}
//	/policies/rate-limits, /policies/rate-limits/{id}
//
// Every other path below each of them answers 404, so that the
// namespace is never passed through to a provider. Each route checks
// the caller's scopes (403 naming the one it lacks) and answers every
// bad input with an OpenAI-shaped error naming the field. Mount panics
// if a route is already registered on g.
func Mount(g *gateway.Gateway, o Options) {
	a := &plane{g: g, o: o}
	route := func(resource string, h http.HandlerFunc, patterns ...string) {
		for _, p := range patterns {
			g.Handle(p, o.Audit.Wrap(resource, h))
		}
	}
	none := func(patterns ...string) {
		for _, p := range patterns {
			g.Handle(p, http.HandlerFunc(control.NoRoute))
		}
	}
	route("rate_limits_policies", a.servePolicies, "/policies/rate-limits", "/policies/rate-limits/{id}")
	route("api_keys", a.serveAPIKeys, "/api-keys", "/api-keys/{id}", "/api-keys/{id}/rotate", "/api-keys/{type}/{subtype}")
	route("virtual_keys", a.serveVirtualKeys, "/virtual-keys", "/virtual-keys/{slug}")
	route("configs", a.serveConfigs, "/configs", "/configs/{slug}", "/configs/{slug}/versions")
	route("workspaces", a.serveWorkspaces, "/admin/workspaces", "/admin/workspaces/{workspaceId}")
	// …/users of a workspace (unless package users serves it) and the rest.
	none("/policies/rate-limits/", "/api-keys/", "/virtual-keys/", "/configs/", "/admin/workspaces/")
}
