package catalog

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// modelEntry is a model a key may use (the reference's Model, with the
// listing's slug and canonical_slug).
type modelEntry struct {
	ID            string `json:"id"`
	Slug          string `json:"slug"`
	CanonicalSlug string `json:"canonical_slug"`
	Object        string `json:"object"`
	Created       int64  `json:"created"`
	OwnedBy       string `json:"owned_by"`
	Provider      string `json:"provider"`
	AIService     string `json:"ai_service"`
}

// serveModels serves GET /models and GET /models/{model...}: with a
// provider selected by header (or the key's default config), the
// provider's answer, as any provider path; otherwise what the caller's
// key may use, "@{provider}/{model}" for each provider of its workspace
// (and of no workspace) and each model it offers; a provider that
// offers every model lists those the price table knows for its kind.
func (p *plane) serveModels(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, _ := gateway.IdentityFrom(ctx)
	opts, _ := gateway.RequestOptionsFrom(ctx)
	if opts.VirtualKey != "" || opts.Provider != "" || opts.Config != "" || opts.CustomHost != "" || id.DefaultConfig != "" {
		p.g.ServeDataPlane(w, r, opts)
		return
	}
	if !id.Can(gateway.ScopeCompletionsWrite) {
		gateway.WriteError(w, r, control.MissingScope(gateway.ScopeCompletionsWrite))
		return
	}
	all, err := p.available(ctx, id)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	if m := r.PathValue("model"); m != "" {
		i := slices.IndexFunc(all, func(e modelEntry) bool { return e.ID == m })
		if i < 0 {
			e := control.NotFound("no model " + control.Quote(m) + " for this key: GET /models lists them")
			e.Param = "model"
			gateway.WriteError(w, r, e)
			return
		}
		httpapi.WriteJSON(w, http.StatusOK, all[i])
		return
	}
	data, err := listModels(r, all)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, struct {
		Object string       `json:"object"`
		Total  int          `json:"total"`
		Data   []modelEntry `json:"data"`
	}{"list", len(all), data})
}

// listModels applies the query's filters, order and window to all.
func listModels(r *http.Request, all []modelEntry) ([]modelEntry, error) {
	q := r.URL.Query()
	sortBy, err := control.Enum(q, "sort", "name", "name", "provider", "ai_service")
	if err != nil {
		return nil, err
	}
	order, err := control.Enum(q, "order", "asc", "asc", "desc")
	if err != nil {
		return nil, err
	}
	num := func(name string, def int) (int, error) {
		v := q.Get(name)
		if v == "" {
			return def, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, control.Invalid(name, name+" must be a whole number from 0")
		}
		return n, nil
	}
	limit, err := num("limit", len(all))
	if err != nil {
		return nil, err
	}
	offset, err := num("offset", 0)
	if err != nil {
		return nil, err
	}
	prov := strings.TrimPrefix(q.Get("provider"), "@")
	svc := q.Get("ai_service")
	out := slices.DeleteFunc(slices.Clone(all), func(e modelEntry) bool {
		return prov != "" && e.Provider != prov || svc != "" && e.AIService != svc
	})
	key := func(e modelEntry) string {
		switch sortBy {
		case "provider":
			return e.Provider
		case "ai_service":
			return e.AIService
		}
		return e.Slug
	}
	slices.SortStableFunc(out, func(a, b modelEntry) int {
		c := cmp.Or(cmp.Compare(key(a), key(b)), cmp.Compare(a.ID, b.ID))
		if order == "desc" {
			return -c
		}
		return c
	})
	out = out[min(offset, len(out)):]
	return out[:min(limit, len(out))], nil
}

// available returns the models the key id may use, by id.
func (p *plane) available(ctx context.Context, id gateway.Identity) ([]modelEntry, error) {
	if p.o.VirtualKeys == nil {
		return []modelEntry{}, nil
	}
	vks, err := p.o.VirtualKeys.VirtualKeys(ctx, "")
	if err != nil {
		return nil, err
	}
	// A workspace's key shadows one of no workspace under its slug, as on
	// the data plane.
	bySlug := map[string]*gateway.VirtualKey{}
	for i := range vks {
		vk := &vks[i]
		if vk.WorkspaceID != "" && vk.WorkspaceID != id.WorkspaceID {
			continue
		}
		if o := bySlug[vk.Slug]; o == nil || o.WorkspaceID == "" {
			bySlug[vk.Slug] = vk
		}
	}
	out := []modelEntry{}
	for _, slug := range slices.Sorted(func(yield func(string) bool) {
		for s := range bySlug {
			if !yield(s) {
				return
			}
		}
	}) {
		vk := bySlug[slug]
		if vk.Integration != "" {
			if p.o.Store == nil {
				continue
			}
			in, err := p.o.Store.Integration(ctx, vk.Integration)
			if err != nil {
				continue // gone: the provider finds nothing on the data plane either
			}
			j, ok := in.Join(vk)
			if !ok {
				continue
			}
			vk = j
		}
		models := vk.Models
		if models == nil {
			models = p.kindModels(vk.Provider)
		}
		for _, m := range models {
			out = append(out, modelEntry{ID: "@" + slug + "/" + m, Slug: m, CanonicalSlug: m, Object: "model",
				OwnedBy: vk.Provider, Provider: slug, AIService: vk.Provider})
		}
	}
	return out, nil
}

// kindModels returns the models the price table knows at provider kind,
// sorted.
func (p *plane) kindModels(kind string) []string {
	var out []string
	for k := range p.prices {
		if m, ok := strings.CutPrefix(k, kind+"/"); ok {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

// servePricing serves GET /model-configs/pricing/{provider}/{model...}:
// the price of model at provider (a provider kind, or an integration's
// slug for its custom models) from the price table, in the reference's
// ModelPricingConfig (USD cents per token); 404 for a model the table
// does not price.
func (p *plane) servePricing(w http.ResponseWriter, r *http.Request) {
	prov, model := r.PathValue("provider"), r.PathValue("model")
	price, ok := p.prices.Lookup(prov, model)
	if !ok && p.o.Store != nil {
		if in, err := p.o.Store.Integration(r.Context(), prov); err == nil {
			id, _ := gateway.IdentityFrom(r.Context())
			if sees(id, in) {
				price, ok = in.Prices()[model]
			}
		}
	}
	if !ok {
		e := control.NotFound("no price for model " + control.Quote(model) + " at provider " + control.Quote(prov))
		e.Param = "model"
		gateway.WriteError(w, r, e)
		return
	}
	type rate struct {
		Price float64 `json:"price"`
	}
	type payg struct {
		Request   rate  `json:"request_token"`
		Response  rate  `json:"response_token"`
		CacheRead *rate `json:"cache_read_input_token,omitempty"`
	}
	out := struct {
		PayAsYouGo payg   `json:"pay_as_you_go"`
		Currency   string `json:"currency"`
	}{payg{Request: rate{price.Input / centsPerToken}, Response: rate{price.Output / centsPerToken}}, "USD"}
	if price.CachedInput > 0 {
		out.PayAsYouGo.CacheRead = &rate{price.CachedInput / centsPerToken}
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}
