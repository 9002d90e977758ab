package catalog

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// centsPerToken converts the reference's prices (USD cents per token)
// to the price table's (USD per million tokens), and back.
const centsPerToken = 1e4

// modelBody is one entry of PUT /integrations/{slug}/models (the
// reference's ModelUpdateRequest).
type modelBody struct {
	Slug           *string        `json:"slug"`
	Enabled        *bool          `json:"enabled"`
	Custom         *bool          `json:"is_custom"`
	Finetune       *bool          `json:"is_finetune"`
	BaseModel      *string        `json:"base_model_slug"`
	Configurations *struct{}      `json:"configurations"`
	Pricing        *pricingConfig `json:"pricing_config"`
}

// pricingConfig is the reference's PricingConfig: static prices in USD
// cents per token.
type pricingConfig struct {
	Type     string `json:"type,omitempty"`
	PayAsYou *struct {
		Request  *tokenPrice `json:"request_token,omitempty"`
		Response *tokenPrice `json:"response_token,omitempty"`
	} `json:"pay_as_you_go,omitempty"`
}

type tokenPrice struct {
	Price float64 `json:"price"`
}

// serveIntegrationModels serves the models of an integration:
//
//	GET    /integrations/{slug}/models              → 200 {"total","models"}
//	PUT    /integrations/{slug}/models              → 200 {} (enable, disable, add custom models)
//	DELETE /integrations/{slug}/models?slugs=a,b    → 200 {} (remove custom models)
func (p *plane) serveIntegrationModels(w http.ResponseWriter, r *http.Request) {
	p.serveBelow(w, r, func(_ gateway.Identity, in *Integration) any {
		out := make([]modelWire, len(in.Models))
		for i := range in.Models {
			out[i] = modelWireOf(&in.Models[i])
		}
		return struct {
			Total  int         `json:"total"`
			Models []modelWire `json:"models"`
		}{len(out), out}
	}, httpapi.Methods{http.MethodPut: p.putModels, http.MethodDelete: p.deleteModels})
}

func (p *plane) putModels(w http.ResponseWriter, r *http.Request) error {
	slug := r.PathValue("slug")
	var b struct {
		Models         *[]modelBody `json:"models"`
		AllowAllModels *bool        `json:"allow_all_models"`
	}
	if err := control.Decode(r, &b, false); err != nil {
		return err
	}
	if b.Models == nil {
		return control.Invalid("models", "models is required")
	}
	upd := make([]Model, len(*b.Models))
	for i, m := range *b.Models {
		at := "models[" + strconv.Itoa(i) + "]."
		switch {
		case m.Slug == nil || *m.Slug == "":
			return control.Invalid(at+"slug", at+"slug is required")
		case m.Enabled == nil:
			return control.Invalid(at+"enabled", at+"enabled is required")
		case m.Configurations != nil:
			return control.Invalid(at+"configurations", "a model's own custom_host is not supported: it is the integration's")
		}
		if err := control.Label(at+"slug", *m.Slug); err != nil {
			return err
		}
		mod := Model{Slug: *m.Slug, Enabled: *m.Enabled, Custom: m.Custom != nil && *m.Custom, Finetune: m.Finetune != nil && *m.Finetune}
		if m.BaseModel != nil {
			if err := control.Label(at+"base_model_slug", *m.BaseModel); err != nil {
				return err
			}
			mod.BaseModel = *m.BaseModel
		}
		if m.Pricing != nil {
			price, err := m.Pricing.price(at + "pricing_config")
			if err != nil {
				return err
			}
			mod.Price = price
		}
		upd[i] = mod
	}
	return p.change(r, slug, func(in *Integration) (*Integration, error) {
		if b.AllowAllModels != nil {
			in.AllowAllModels = *b.AllowAllModels
		}
		for _, m := range upd {
			i := slices.IndexFunc(in.Models, func(o Model) bool { return o.Slug == m.Slug })
			if i < 0 {
				in.Models = append(in.Models, m)
				continue
			}
			if m.Price == nil {
				m.Price = in.Models[i].Price // a model's price stays until one is sent
			}
			in.Models[i] = m
		}
		in.UpdatedAt = p.now()
		return in, nil
	}, func() { httpapi.WriteJSON(w, http.StatusOK, struct{}{}) })
}

func (c *pricingConfig) price(at string) (*gateway.ModelPrice, error) {
	if c.Type != "" && c.Type != "static" {
		return nil, control.Invalid(at+".type", at+".type must be static")
	}
	var pr gateway.ModelPrice
	if c.PayAsYou != nil {
		for _, f := range []struct {
			name string
			in   *tokenPrice
			out  *float64
		}{{"request_token", c.PayAsYou.Request, &pr.Input}, {"response_token", c.PayAsYou.Response, &pr.Output}} {
			if f.in == nil {
				continue
			}
			if !(f.in.Price >= 0) || f.in.Price > 1e6 {
				return nil, control.Invalid(at+".pay_as_you_go."+f.name+".price", "a price must be a number of cents per token from 0")
			}
			*f.out = f.in.Price * centsPerToken
		}
	}
	return &pr, nil
}

func (p *plane) deleteModels(w http.ResponseWriter, r *http.Request) error {
	slug := r.PathValue("slug")
	q := r.URL.Query()
	if len(q["slugs"]) != 1 || q.Get("slugs") == "" {
		return control.Invalid("slugs", "slugs is required once: a comma-separated list of model slugs")
	}
	gone := strings.Split(q.Get("slugs"), ",")
	return p.change(r, slug, func(in *Integration) (*Integration, error) {
		for _, s := range gone {
			i := slices.IndexFunc(in.Models, func(m Model) bool { return m.Slug == s })
			if i < 0 {
				return nil, control.NotFound("integration " + control.Quote(slug) + " has no model " + control.Quote(s))
			}
			if !in.Models[i].Custom {
				return nil, control.Invalid("slugs", "model "+control.Quote(s)+" is not a custom model: disable it with PUT instead")
			}
			in.Models = slices.Delete(in.Models, i, i+1)
		}
		in.UpdatedAt = p.now()
		return in, nil
	}, func() { httpapi.WriteJSON(w, http.StatusOK, struct{}{}) })
}

// modelWire is a model of an integration in answers (the reference's
// IntegrationModel).
type modelWire struct {
	Slug      string         `json:"slug"`
	Name      string         `json:"name"`
	Enabled   bool           `json:"enabled"`
	Custom    bool           `json:"is_custom"`
	Finetune  bool           `json:"is_finetune"`
	BaseModel *string        `json:"base_model_slug"`
	Pricing   *pricingConfig `json:"pricing_config,omitempty"`
}

func modelWireOf(m *Model) modelWire {
	o := modelWire{Slug: m.Slug, Name: m.Name, Enabled: m.Enabled, Custom: m.Custom, Finetune: m.Finetune}
	if o.Name == "" {
		o.Name = m.Slug
	}
	if m.BaseModel != "" {
		o.BaseModel = &m.BaseModel
	}
	if m.Price != nil {
		o.Pricing = &pricingConfig{Type: "static"}
		o.Pricing.PayAsYou = &struct {
			Request  *tokenPrice `json:"request_token,omitempty"`
			Response *tokenPrice `json:"response_token,omitempty"`
		}{&tokenPrice{m.Price.Input / centsPerToken}, &tokenPrice{m.Price.Output / centsPerToken}}
	}
	return o
}
