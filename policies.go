package gateway

import (
	"errors"
	"net/http"
	"regexp"
	"strings"
)

// Policy statuses.
const (
	PolicyActive   = "active"
	PolicyArchived = "archived"
)

// RateLimitsPolicy limits how many requests (or tokens) the requests that
// match its conditions may use per unit of time, counted per bucket named by
// its group_by keys.
type RateLimitsPolicy struct {
	ID            string            `json:"id"`
	Name          string            `json:"name,omitempty"`
	Conditions    []PolicyCondition `json:"conditions"`
	GroupBy       []PolicyGroupBy   `json:"group_by"`
	Type          string            `json:"type"`
	Unit          string            `json:"unit"`
	Value         float64           `json:"value"`
	Status        string            `json:"status"`
	WorkspaceID   string            `json:"workspace_id,omitempty"`
	CreatedAt     string            `json:"created_at,omitempty"`
	LastUpdatedAt string            `json:"last_updated_at,omitempty"`
}

// PolicyCondition matches requests whose key has the given value.
type PolicyCondition struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// PolicyGroupBy names a key whose value splits a policy into buckets.
type PolicyGroupBy struct {
	Key string `json:"key"`
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// Validate checks the fields of p.
func (p *RateLimitsPolicy) Validate() error {
	switch {
	case !uuidRE.MatchString(p.ID):
		return errors.New("gateway: policy id must be a UUID")
	case p.Type != "requests" && p.Type != "tokens":
		return errors.New("gateway: policy type must be requests or tokens")
	case p.Unit != "rpm" && p.Unit != "rph" && p.Unit != "rpd":
		return errors.New("gateway: policy unit must be rpm, rph or rpd")
	case !(p.Value > 0):
		return errors.New("gateway: policy value must be a number greater than 0")
	case p.Status != PolicyActive && p.Status != PolicyArchived:
		return errors.New("gateway: policy status must be active or archived")
	}
	for _, k := range append(conditionKeys(p.Conditions), groupKeys(p.GroupBy)...) {
		switch {
		case k == "api_key", k == "workspace_id", k == "organisation_id":
		case strings.HasPrefix(k, "metadata.") && len(k) > len("metadata."):
		default:
			return errors.New("gateway: policy key " + k + " is not api_key, workspace_id, organisation_id or metadata.<name>")
		}
	}
	return nil
}

func conditionKeys(cs []PolicyCondition) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Key
	}
	return out
}

func groupKeys(gs []PolicyGroupBy) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.Key
	}
	return out
}

// servePolicies serves the rate-limits control plane.
func (g *Gateway) servePolicies(w http.ResponseWriter, r *http.Request) {
	WriteError(w, r, &Error{Status: http.StatusNotFound, Type: TypeNotFound, Code: CodeNotFound, Message: "rate-limits policies are not served yet"})
}
