package console

import (
	"net/http"
	"net/url"
	"sort"
	"strings"
)

// condition and groupBy are the parts of a policy's scope.
type condition struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type groupBy struct {
	Key string `json:"key"`
}

// rateLimitsPolicy is a policy of GET /policies/rate-limits.
type rateLimitsPolicy struct {
	ID          string      `json:"id"`
	Name        string      `json:"name"`
	Conditions  []condition `json:"conditions"`
	GroupBy     []groupBy   `json:"group_by"`
	Type        string      `json:"type"`
	Unit        string      `json:"unit"`
	Value       float64     `json:"value"`
	Status      string      `json:"status"`
	WorkspaceID string      `json:"workspace_id"`
}

// usageLimitsPolicy is a policy of GET /policies/usage-limits/{id} with
// include_usage=true, in the reference's shape.
type usageLimitsPolicy struct {
	ID               string                `json:"id"`
	Name             string                `json:"name"`
	Conditions       []condition           `json:"conditions"`
	GroupBy          []groupBy             `json:"group_by"`
	Type             string                `json:"type"` // cost (USD) or tokens
	CreditLimit      float64               `json:"credit_limit"`
	AlertThreshold   *float64              `json:"alert_threshold"`
	PeriodicReset    string                `json:"periodic_reset"`
	NextUsageResetAt string                `json:"next_usage_reset_at"`
	Status           string                `json:"status"`
	WorkspaceID      string                `json:"workspace_id"`
	Usage            map[string]valueUsage `json:"value_key_usage_map"`
	Entities         []entity              `json:"-"`
}

// valueUsage is one entity's usage of a usage-limits policy.
type valueUsage struct {
	CurrentUsage float64 `json:"current_usage"`
	Status       string  `json:"status"` // active or exhausted
}

// entity is a usage entry as the page shows it, highest use first.
type entity struct {
	ValueKey  string
	Usage     float64
	Limit     float64
	Percent   float64
	Exhausted bool
	Warn      float64 // the usage from which the bar turns amber (80%)
	Full      float64 // and red (99.9%)
}

// policiesPage is the data of the policies page.
type policiesPage struct {
	Workspace    string
	Rate         []rateLimitsPolicy
	RateError    string
	Usage        []usageLimitsPolicy
	UsageError   string
	UsageMissing bool // the gateway serves no usage-limits policies
}

// maxUsagePolicies bounds the usage-limits policies the page reads usage
// for, one API call each.
const maxUsagePolicies = 50

// policies shows the rate-limits policies and the usage-limits policies
// with each entity's usage against its credit limit.
func (c *console) policies(w http.ResponseWriter, r *http.Request, s *session) {
	ws := strings.TrimSpace(r.URL.Query().Get("workspace_id"))
	p := &policiesPage{Workspace: ws}
	d := &pageData{Title: "Policies", Nav: "policies", Data: p}
	q := listQuery(0, 100, ws)
	var rate struct {
		Data []rateLimitsPolicy `json:"data"`
	}
	if err := c.call(r, s.key, http.MethodGet, "/policies/rate-limits", q, nil, &rate); err != nil {
		if c.apiFailed(w, r, s, err) {
			return
		}
		p.RateError = err.Error()
	}
	p.Rate = rate.Data
	var usage struct {
		Data []usageLimitsPolicy `json:"data"`
	}
	switch err := c.call(r, s.key, http.MethodGet, "/policies/usage-limits", q, nil, &usage); {
	case statusOf(err) == http.StatusNotFound:
		p.UsageMissing = true
	case err != nil:
		p.UsageError = err.Error()
	}
	for i := range usage.Data {
		if i >= maxUsagePolicies {
			break
		}
		u := &usage.Data[i]
		gq := url.Values{"include_usage": {"true"}}
		if u.WorkspaceID != "" && ws != "" {
			gq.Set("workspace_id", ws)
		}
		var one usageLimitsPolicy
		if err := c.call(r, s.key, http.MethodGet, "/policies/usage-limits/"+escape(u.ID), gq, nil, &one); err == nil && one.Usage != nil {
			u.Usage = one.Usage
		}
		u.Entities = entities(u)
	}
	p.Usage = usage.Data
	c.render(w, r, http.StatusOK, "policies", s, d)
}

// entities lists a policy's usage map, exhausted and highest use first.
func entities(u *usageLimitsPolicy) []entity {
	out := make([]entity, 0, len(u.Usage))
	for k, v := range u.Usage {
		e := entity{ValueKey: k, Usage: v.CurrentUsage, Limit: u.CreditLimit, Exhausted: v.Status == "exhausted",
			Warn: u.CreditLimit * 0.8, Full: u.CreditLimit * 0.999}
		if u.CreditLimit > 0 {
			e.Percent = min(100, v.CurrentUsage/u.CreditLimit*100)
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Exhausted != out[j].Exhausted {
			return out[i].Exhausted
		}
		if out[i].Usage != out[j].Usage {
			return out[i].Usage > out[j].Usage
		}
		return out[i].ValueKey < out[j].ValueKey
	})
	return out
}
