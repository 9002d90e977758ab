package catalog

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/budget"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/observe"
)

// Options configure the catalogue routes Mount adds to a gateway. A host
// passes the same store as the gateway's (memstore.Store and
// sqlstore.Store implement every interface).
type Options struct {
	// Store keeps the integrations. Nil: /integrations… answer 404,
	// saying that integrations are not managed on this gateway.
	Store Store

	// VirtualKeys keeps the providers, which are virtual keys. Nil:
	// /providers… answer 404, and grants make no provider.
	VirtualKeys admin.VirtualKeyStore

	// Workspaces, when set, checks that a workspace granted an
	// integration is registered (400 naming its id otherwise). Nil: any
	// workspace id may be granted.
	Workspaces admin.WorkspaceStore

	// Policies keeps the rate-limits policies that enforce the
	// rate_limits of grants and providers. Nil: writing rate_limits is a
	// 400.
	Policies admin.PolicyStore

	// Budgets keeps the usage-limits policies that enforce the
	// usage_limits of grants and providers (enforced when the host wires
	// budget.Stage). Nil: writing usage_limits is a 400.
	Budgets budget.Store

	// Prices is the price table /model-configs/pricing answers from and
	// /models lists the models of a provider kind from: the host's
	// gateway.Options.Prices. Nil means gateway.DefaultPrices().
	Prices gateway.PriceTable

	// Audit records every write of these routes, as acting on
	// integrations or providers. Nil records nothing.
	Audit *observe.Auditor

	// ErrorLog receives the stores' failures. Nil means slog.Default().
	ErrorLog *slog.Logger

	// Now is the clock of the records written. Nil means time.Now.
	Now func() time.Time
}

// plane is the catalogue routes of one Mount.
type plane struct {
	g      *gateway.Gateway
	o      Options
	prices gateway.PriceTable
}

func (p *plane) now() time.Time { return control.Clock(p.o.Now).UTC().Truncate(time.Microsecond) }

// Mount registers the catalogue routes on g (through g.Handle, so under
// its prefix, behind its trace, key and header stages):
//
//	/integrations, /integrations/{slug}, /integrations/{slug}/models, /integrations/{slug}/workspaces
//	/providers, /providers/{slug}
//	GET /models, GET /models/{model...}
//	GET /model-configs/pricing/{provider}/{model...}
//
// Every other path below /integrations/, /providers/ and /model-configs/
// answers 404, so that the namespace is never passed through to a
// provider. Integrations are read with the virtual_keys.read scope (a
// workspace key sees those granted to its workspace) and written with
// virtual_keys.write by organisation keys only; providers, being virtual
// keys, need virtual_keys.read and virtual_keys.write, within the
// caller's workspace (an organisation key names one with workspace_id).
// GET /models needs completions.write: it lists what the key may use,
// "@{provider}/{model}", unless the request selects a provider by header
// (x-gateway-virtual-key, x-gateway-provider, x-gateway-config,
// x-gateway-custom-host) or its key has a default config: then it goes to
// that provider, as any provider path does. Mount panics if a route is
// already registered on g.
func Mount(g *gateway.Gateway, o Options) {
	p := &plane{g: g, o: o, prices: o.Prices}
	if p.prices == nil {
		p.prices = gateway.DefaultPrices()
	}
	route := func(resource string, h http.HandlerFunc, patterns ...string) {
		for _, pat := range patterns {
			g.Handle(pat, o.Audit.Wrap(resource, h))
		}
	}
	route("integrations", p.serveIntegrations, "/integrations", "/integrations/{slug}")
	route("integrations", p.serveIntegrationModels, "/integrations/{slug}/models")
	route("integrations", p.serveGrants, "/integrations/{slug}/workspaces")
	route("providers", p.serveProviders, "/providers", "/providers/{slug}")
	g.Handle("GET /models", http.HandlerFunc(p.serveModels))
	g.Handle("GET /models/{model...}", http.HandlerFunc(p.serveModels))
	g.Handle("GET /model-configs/pricing/{provider}/{model...}", http.HandlerFunc(p.servePricing))
	for _, pat := range []string{"/integrations/", "/providers/", "/model-configs/"} {
		g.Handle(pat, http.HandlerFunc(control.NoRoute))
	}
}

// fail answers err, logging the store's own failures.
func (p *plane) fail(w http.ResponseWriter, r *http.Request, err error) {
	control.Fail(w, r, p.o.ErrorLog, "catalog store", err)
}

func notManaged(what string) *gateway.Error {
	return control.NotFound(what + " are not managed on this gateway")
}
