// Package catalog serves an organisation's catalogue of providers:
// integrations (the organisation's provider credentials, kept once and
// granted to workspaces with limits of their own), the models each
// offers, the providers of each workspace, and the models a key may use.
// A host mounts it beside gateway.New in one line:
//
//	catalog.Mount(g, catalog.Options{Store: st, VirtualKeys: st, Policies: st, Budgets: st, Audit: auditor})
//
// Its routes, under the gateway's prefix:
//
//	/integrations, /integrations/{slug}                 organisation credentials
//	/integrations/{slug}/models                         the models it offers
//	/integrations/{slug}/workspaces                     its grants to workspaces
//	/providers, /providers/{slug}                       a workspace's providers
//	/models, /models/{model...} (GET)                   what the caller's key may use
//	/model-configs/pricing/{provider}/{model}           the price table
//
// A provider is a virtual key seen from the catalogue: the two views
// share one store (admin.VirtualKeyStore), and a provider made from an
// integration is a virtual key whose Integration names it. The store
// joins the two when the data plane looks the key up, so that a request
// of a workspace the integration is granted to may name it as
// "@{provider}/{model}" with nothing but its gateway key, and finds
// nothing once the grant is gone.
//
// Trust (docs/architecture.md): integrations are written by organisation
// keys only, but what they write is a tenant's: a custom host goes
// through gateway.CheckHost when written and is guarded at every dial,
// and changing it requires sending the key again. Secrets are never
// answered: reads show them masked. A grant's rate_limits and
// usage_limits are enforced by the gateway's rate-limits policies and
// the budget package's usage-limits policies, conditioned on the
// workspace and the provider's virtual_key; a provider made from an
// integration may therefore be used only by naming it (see
// gateway.VirtualKey.NamedOnly), so that every use counts.
package catalog
