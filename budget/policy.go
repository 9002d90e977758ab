package budget

import (
	"encoding/json"
	"errors"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/bounds"
	"github.com/modelgateway/gateway/internal/control"
)

// Policy types: what a budget counts.
const (
	// Cost counts the cost of the requests in USD, priced by the
	// PriceTable of Options.Prices from the tokens the answers report.
	Cost = "cost"
	// Tokens counts the total tokens the answers report.
	Tokens = "tokens"
)

// Periodic resets of a policy: the calendar period after
// which every entity's usage starts again from zero.
const (
	// ResetWeekly starts a new period every Monday at 00:00 UTC.
	ResetWeekly = "weekly"
	// ResetMonthly starts a new period on the 1st of every month at 00:00
	// UTC.
	ResetMonthly = "monthly"
)

// Statuses of an entity of a policy, as its usage shows it.
const (
	// EntityActive is an entity whose usage is below the credit limit.
	EntityActive = "active"
	// EntityExhausted is an entity whose usage reached the credit limit:
	// its requests are refused until the period ends or the usage is
	// reset.
	EntityExhausted = "exhausted"
)

// CodeExhausted is the error code of a request refused because a
// budget is spent; its type is TypeLimitExceeded and its status 412,
// which OpenAI's SDKs do not retry.
const CodeExhausted = "budget_exhausted"

// TypeLimitExceeded is the error type of a request refused by a budget.
const TypeLimitExceeded = "usage_limit_exceeded"

// Policy is a usage-limits policy, a budget: the requests that match all of its
// Conditions may use at most CreditLimit tokens or USD (Type) per entity
// named by the values of its GroupBy keys (e.g. one entity per API key),
// over the current period (PeriodicReset or PeriodicResetDays) or in all
// (neither). Once an entity's usage reaches CreditLimit its requests are
// refused with 412 budget_exhausted until the period ends or the usage is
// reset. Condition and group keys are those of gateway.RateLimitsPolicy,
// with the same security stance.
//
// Its JSON form is the UsageLimitsPolicy schema of the public API.
type Policy struct {
	// ID is a UUID, kept in lower case.
	ID          string
	Name        string
	Conditions  []gateway.PolicyCondition
	GroupBy     []gateway.PolicyGroupBy
	Type        string  // Cost or Tokens
	CreditLimit float64 // ≥ 0; 0 refuses every matching request
	// AlertThreshold, when not nil, is the usage (≤ CreditLimit) whose
	// crossing by an entity writes one warning to the error log and one
	// record to the audit log.
	AlertThreshold *float64
	// PeriodicReset is ResetWeekly, ResetMonthly or empty;
	// PeriodicResetDays (1–365, exclusive with it) starts a new period
	// every so many days from CreatedAt. Neither: usage is cumulative.
	PeriodicReset     string
	PeriodicResetDays int
	// LastResetAt is when usage was last reset by hand (RFC 3339), empty
	// if never; reads report the start of the current period when later.
	LastResetAt    string
	Status         string // gateway.PolicyActive or gateway.PolicyArchived
	WorkspaceID    string
	OrganisationID string
	CreatedAt      string // RFC 3339, UTC
	LastUpdatedAt  string // RFC 3339, UTC
}

// policyWire is the JSON form of a Policy.
type policyWire struct {
	ID                string                    `json:"id"`
	Name              *string                   `json:"name"`
	Conditions        []gateway.PolicyCondition `json:"conditions"`
	GroupBy           []gateway.PolicyGroupBy   `json:"group_by"`
	Type              string                    `json:"type"`
	CreditLimit       float64                   `json:"credit_limit"`
	AlertThreshold    *float64                  `json:"alert_threshold"`
	PeriodicReset     *string                   `json:"periodic_reset"`
	PeriodicResetDays *int                      `json:"periodic_reset_days"`
	NextUsageResetAt  *string                   `json:"next_usage_reset_at"`
	LastResetAt       *string                   `json:"last_reset_at"`
	Status            string                    `json:"status"`
	WorkspaceID       string                    `json:"workspace_id"`
	OrganisationID    string                    `json:"organisation_id"`
	CreatedAt         string                    `json:"created_at"`
	LastUpdatedAt     string                    `json:"last_updated_at"`
	ValueKeyUsageMap  map[string]EntityUsage    `json:"value_key_usage_map,omitempty"`
	Object            string                    `json:"object,omitempty"`
}

// EntityUsage is the usage of one entity of a policy, as the
// value_key_usage_map of a policy read with include_usage shows it.
type EntityUsage struct {
	CurrentUsage          float64 `json:"current_usage"`
	Status                string  `json:"status"`
	IsThresholdAlertsSent bool    `json:"is_threshold_alerts_sent"`
	IsExhaustedAlertsSent bool    `json:"is_exhausted_alerts_sent"`
}

// MarshalJSON writes p in its public shape, next_usage_reset_at as of now.
func (p Policy) MarshalJSON() ([]byte, error) {
	return json.Marshal(p.wire(time.Now()))
}

// UnmarshalJSON reads p from its public shape (next_usage_reset_at and
// value_key_usage_map, which are worked out, are ignored).
func (p *Policy) UnmarshalJSON(b []byte) error {
	var w policyWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*p = Policy{ID: w.ID, Conditions: w.Conditions, GroupBy: w.GroupBy, Type: w.Type,
		CreditLimit: w.CreditLimit, AlertThreshold: w.AlertThreshold, Status: w.Status, WorkspaceID: w.WorkspaceID,
		OrganisationID: w.OrganisationID, CreatedAt: w.CreatedAt, LastUpdatedAt: w.LastUpdatedAt}
	if w.Name != nil {
		p.Name = *w.Name
	}
	if w.PeriodicReset != nil {
		p.PeriodicReset = *w.PeriodicReset
	}
	if w.PeriodicResetDays != nil {
		p.PeriodicResetDays = *w.PeriodicResetDays
	}
	if w.LastResetAt != nil {
		p.LastResetAt = *w.LastResetAt
	}
	return nil
}

func (p *Policy) wire(now time.Time) policyWire {
	w := policyWire{ID: p.ID, Conditions: p.Conditions, GroupBy: p.GroupBy, Type: p.Type,
		CreditLimit: p.CreditLimit, AlertThreshold: p.AlertThreshold, Status: p.Status, WorkspaceID: p.WorkspaceID,
		OrganisationID: p.OrganisationID, CreatedAt: p.CreatedAt, LastUpdatedAt: p.LastUpdatedAt}
	if w.Conditions == nil {
		w.Conditions = []gateway.PolicyCondition{}
	}
	if w.GroupBy == nil {
		w.GroupBy = []gateway.PolicyGroupBy{}
	}
	if p.Name != "" {
		w.Name = &p.Name
	}
	if p.PeriodicReset != "" {
		w.PeriodicReset = &p.PeriodicReset
	}
	if p.PeriodicResetDays > 0 {
		w.PeriodicResetDays = &p.PeriodicResetDays
	}
	start, next := p.period(now)
	if !next.IsZero() {
		s := next.Format(time.RFC3339)
		w.NextUsageResetAt = &s
	}
	last := p.LastResetAt
	if created, err := time.Parse(time.RFC3339, p.CreatedAt); !start.IsZero() && err == nil && start.After(created) {
		if s := start.Format(time.RFC3339); last == "" || laterTime(s, last) {
			last = s
		}
	}
	if last != "" {
		w.LastResetAt = &last
	}
	return w
}

// laterTime reports whether RFC 3339 time a is after b (false when either
// does not parse).
func laterTime(a, b string) bool {
	ta, err1 := time.Parse(time.RFC3339, a)
	tb, err2 := time.Parse(time.RFC3339, b)
	return err1 == nil && err2 == nil && ta.After(tb)
}

// period returns the start of the usage period of p that holds now, and
// the start of the next one: zero times for cumulative usage.
func (p *Policy) period(now time.Time) (start, next time.Time) {
	return usagePeriod(p.PeriodicReset, p.PeriodicResetDays, p.CreatedAt, now)
}

// usagePeriod returns the period of a reset rule holding now: weekly
// periods start on Mondays, monthly ones on the 1st, both at 00:00 UTC;
// periods of days run from anchor (an RFC 3339 time; the Unix epoch when
// it does not parse).
func usagePeriod(reset string, days int, anchor string, now time.Time) (start, next time.Time) {
	now = now.UTC()
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	switch {
	case reset == ResetWeekly:
		back := (int(midnight.Weekday()) + 6) % 7 // days since Monday
		start = midnight.AddDate(0, 0, -back)
		return start, start.AddDate(0, 0, 7)
	case reset == ResetMonthly:
		start = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 1, 0)
	case days > 0:
		a, err := time.Parse(time.RFC3339, anchor)
		if err != nil {
			a = time.Unix(0, 0)
		}
		a = a.UTC()
		span := time.Duration(days) * 24 * time.Hour
		n := now.Sub(a) / span
		if now.Before(a) {
			n = 0
		}
		start = a.Add(n * span)
		return start, start.Add(span)
	}
	return time.Time{}, time.Time{}
}

// periodKey names a period for a Counter: the reset rule and the
// period's start, or "" for cumulative usage.
func periodKey(reset string, days int, start time.Time) string {
	if start.IsZero() {
		return ""
	}
	rule := reset
	if rule == "" {
		rule = strconv.Itoa(days) + "d"
	}
	return rule + "@" + start.Format(time.RFC3339)
}

// Validate checks every field of p: a UUID id, a known type and status,
// and what the control plane checks (see check).
func (p *Policy) Validate() error {
	if !control.ValidUUID(p.ID) {
		return errors.New("gateway: usage-limits policy id must be a UUID")
	}
	if p.Status != gateway.PolicyActive && p.Status != gateway.PolicyArchived {
		return errors.New("gateway: usage-limits policy status must be active or archived")
	}
	if e := p.check(); e != nil {
		return e
	}
	return nil
}

// check validates the fields a caller of the control plane sets, naming
// the offending one in Param.
func (p *Policy) check() *gateway.Error {
	if len(p.Name) > bounds.MaxNameBytes {
		return control.Invalid("name", "policy name must be at most 255 bytes")
	}
	if e := checkLimit(p.Type, p.CreditLimit, p.AlertThreshold, p.PeriodicReset, p.PeriodicResetDays); e != nil {
		return e
	}
	for i, c := range p.Conditions {
		if !keyValid(c.Key) {
			return control.Invalid("conditions["+strconv.Itoa(i)+"].key", "policy key "+control.Quote(c.Key)+" is not api_key, workspace_id, virtual_key, organisation_id or metadata.<name>")
		}
	}
	for i, g := range p.GroupBy {
		if !keyValid(g.Key) {
			return control.Invalid("group_by["+strconv.Itoa(i)+"].key", "policy key "+control.Quote(g.Key)+" is not api_key, workspace_id, virtual_key, organisation_id or metadata.<name>")
		}
		for _, o := range p.GroupBy[:i] {
			if o.Key == g.Key {
				return control.Invalid("group_by["+strconv.Itoa(i)+"].key", "group key "+control.Quote(g.Key)+" is given twice")
			}
		}
	}
	return nil
}

// checkLimit checks the fields a usage limit has wherever it is set, by
// the check of an API key's usage_limits (gateway.UsageLimitsJSON), so
// that a policy, a key and a workspace accept the same limits; the 400
// names the policy's own fields. A value JSON cannot carry (NaN, an
// infinity) is sent as -1, which is refused with the same message.
func checkLimit(typ string, credit float64, alert *float64, reset string, days int) *gateway.Error {
	num := func(v float64) float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return -1
		}
		return v
	}
	limit := map[string]any{"type": typ, "credit_limit": num(credit)}
	if alert != nil {
		limit["alert_threshold"] = num(*alert)
	}
	if reset != "" {
		limit["periodic_reset"] = reset
	}
	if days != 0 {
		limit["periodic_reset_days"] = days
	}
	raw, _ := json.Marshal(limit)
	_, err := gateway.UsageLimitsJSON(raw, false)
	var ge *gateway.Error
	if !errors.As(err, &ge) {
		return nil
	}
	const prefix = "usage_limits."
	e := *ge
	e.Param = strings.TrimPrefix(e.Param, prefix)
	e.Message = strings.TrimPrefix(e.Message, prefix)
	return &e
}

// matches reports whether every condition of p holds for the request.
func (p *Policy) matches(id gateway.Identity, o *gateway.RequestOptions) bool {
	for _, c := range p.Conditions {
		if v, ok := conditionValue(id, o, c.Key); !ok || v != c.Value {
			return false
		}
	}
	return true
}

// valueKey names the entity of p the request counts in: with one group
// key, its value (the API key's id for api_key); with several,
// "key:value" pairs joined by commas, values escaped as in a URL query.
// A request lacking a group key's value counts in the entity of the empty
// value.
func (p *Policy) valueKey(id gateway.Identity, o *gateway.RequestOptions) string {
	if len(p.GroupBy) == 1 {
		v, _ := conditionValue(id, o, p.GroupBy[0].Key)
		return v
	}
	var b strings.Builder
	for i, g := range p.GroupBy {
		v, _ := conditionValue(id, o, g.Key)
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(g.Key)
		b.WriteByte(':')
		b.WriteString(url.QueryEscape(v))
	}
	return b.String()
}

// Clone returns a copy of p sharing no memory with it, its ID in lower
// case, as stores keep ids.
func (p *Policy) Clone() *Policy {
	c := *p
	c.ID = strings.ToLower(c.ID)
	c.Conditions = slices.Clone(c.Conditions)
	c.GroupBy = slices.Clone(c.GroupBy)
	if p.AlertThreshold != nil {
		a := *p.AlertThreshold
		c.AlertThreshold = &a
	}
	return &c
}

// Equal reports whether a and b are the same in every field but the case
// of their ids: the comparison of a Store's compare-and-swap.
func Equal(a, b *Policy) bool {
	return strings.EqualFold(a.ID, b.ID) && a.Name == b.Name &&
		slices.Equal(a.Conditions, b.Conditions) && slices.Equal(a.GroupBy, b.GroupBy) &&
		a.Type == b.Type && a.CreditLimit == b.CreditLimit &&
		(a.AlertThreshold == nil) == (b.AlertThreshold == nil) &&
		(a.AlertThreshold == nil || *a.AlertThreshold == *b.AlertThreshold) &&
		a.PeriodicReset == b.PeriodicReset && a.PeriodicResetDays == b.PeriodicResetDays &&
		a.LastResetAt == b.LastResetAt && a.Status == b.Status &&
		a.WorkspaceID == b.WorkspaceID && a.OrganisationID == b.OrganisationID &&
		a.CreatedAt == b.CreatedAt && a.LastUpdatedAt == b.LastUpdatedAt
}

// keyValid reports whether k is a condition or group key: api_key,
// workspace_id, virtual_key, organisation_id or metadata.<name>.
func keyValid(k string) bool {
	switch {
	case k == "api_key", k == "workspace_id", k == "virtual_key", k == "organisation_id":
		return true
	case strings.HasPrefix(k, "metadata.") && len(k) > len("metadata."):
		return true
	}
	return false
}

// conditionValue returns the value of a condition or group key for a
// request by its caller's identity and request options: virtual_key is
// the virtual key the request names (in x-gateway-virtual-key, or as
// "@{slug}/{model}"), the others come from its metadata.
func conditionValue(id gateway.Identity, o *gateway.RequestOptions, key string) (string, bool) {
	md := o.Metadata
	switch key {
	case "virtual_key":
		return o.VirtualKey, true
	case "api_key":
		return id.KeyID, true
	case "workspace_id":
		return id.WorkspaceID, true
	case "organisation_id":
		v, ok := md[gateway.MetadataOrganisation]
		return v, ok
	}
	if name, ok := strings.CutPrefix(key, "metadata."); ok {
		v, ok := md[name]
		return v, ok
	}
	return "", false
}
