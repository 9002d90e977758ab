package gateway

import (
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Policy statuses. Only active policies are enforced.
const (
	PolicyActive   = "active"
	PolicyArchived = "archived"
)

// Policy types: what a rate-limits policy counts.
const (
	// PolicyRequests counts requests: each admitted request costs 1.
	PolicyRequests = "requests"
	// PolicyTokens counts tokens: a request is admitted while its bucket
	// has tokens left, and is charged the tokens its response used
	// afterwards. They are read from the usage object of a JSON body, or
	// of the text/event-stream events that carry one, at the top level or
	// one object down (a Responses API event's response.usage, an
	// Anthropic message_start's message.usage): the usage object (OpenAI,
	// Anthropic, Bedrock Converse) or usageMetadata (Vertex AI's
	// generateContent, also in each element of the JSON array that
	// streamGenerateContent answers without alt=sse). The count is the
	// largest of total_tokens (Bedrock totalTokens, Vertex
	// totalTokenCount), prompt_tokens + completion_tokens (Vertex
	// promptTokenCount + candidatesTokenCount), and input_tokens (with
	// Anthropic's cache_creation_input_tokens and cache_read_input_tokens)
	// + output_tokens (Bedrock inputTokens + outputTokens), each the
	// largest value seen, since streams report running totals. The body is
	// read as it passes, in constant memory, and reaches the caller
	// unchanged. So that it can be read, the caller's Accept-Encoding is
	// not forwarded and the transport negotiates (and decodes) compression
	// itself. Cache hits are not charged.
	//
	// A successful answer to a POST that reports no usage (a stream whose
	// caller did not ask for it with stream_options.include_usage, a
	// caller that hung up before the last event, a compressed or non-JSON
	// answer) is charged an estimate instead, so that no caller escapes the
	// policy: a token per 4 bytes of the request body, plus a token per
	// event of a stream or per 4 bytes of any other JSON answer. Bedrock's
	// streams (ConverseStream, InvokeModelWithResponseStream) are binary
	// application/vnd.amazon.eventstream frames, which are not read: they
	// are always charged the estimate, which for them counts the request
	// body alone. Uploads (multipart, octet-stream, audio, image and video
	// bodies) are charged only the usage their answer reports. Callers
	// that ask for usage are charged exactly.
	PolicyTokens = "tokens"
)

// Policy units: the period over which a policy's value drains.
const (
	PolicyPerMinute = "rpm"
	PolicyPerHour   = "rph"
	PolicyPerDay    = "rpd"
)

// RateLimitsPolicy limits how many requests (or tokens) the requests that
// match all of its Conditions may use per unit of time, counted per bucket
// named by the values of its GroupBy keys (e.g. one bucket per API key).
//
// Condition and group keys are api_key (the ID of the gateway API key, never
// the key itself), workspace_id, virtual_key (the slug of the virtual key
// the request names, in x-gateway-virtual-key or as "@{slug}/{model}"),
// organisation_id (the _organisation metadata value) and metadata.<name> (the request's metadata over the
// key's defaults). No Conditions match every request of the workspace; no
// GroupBy makes one bucket. A request lacking a group key's value is
// counted in the bucket of the empty value, so omitting metadata never
// escapes a limit.
//
// Security: api_key and workspace_id come from the gateway key and cannot
// be forged. organisation_id and metadata.<name> come from the caller's
// x-gateway-metadata header, which wins over the key's defaults: a caller
// can leave a condition on them unmet, or spread its requests over many
// group values. Use them to split the traffic of trusted callers (a
// backend passing its end users as _user), and api_key or workspace_id to
// bound untrusted ones.
//
// Its JSON form is the RateLimitsPolicy schema of the public API.
type RateLimitsPolicy struct {
	// ID is a UUID, kept in lower case: the control plane and memstore.Store
	// find a policy whatever the case of the id they are given.
	ID         string            `json:"id"`
	Name       string            `json:"name,omitempty"`
	Conditions []PolicyCondition `json:"conditions"`
	GroupBy    []PolicyGroupBy   `json:"group_by"`
	Type       string            `json:"type"`  // PolicyRequests or PolicyTokens
	Unit       string            `json:"unit"`  // PolicyPerMinute, PolicyPerHour or PolicyPerDay
	Value      float64           `json:"value"` // > 0
	Status     string            `json:"status"`

	// WorkspaceID is the workspace the policy belongs to and applies to.
	// Policies created through the control plane always have one. Empty
	// (a policy of the operator, e.g. from a store file) means the policy
	// applies to the requests of every workspace, narrowed only by its
	// Conditions, and no workspace admin can list, change or delete it
	// through the control plane. Its buckets are then shared by all
	// workspaces unless GroupBy includes workspace_id (or api_key).
	WorkspaceID    string `json:"workspace_id"`
	OrganisationID string `json:"organisation_id"`
	CreatedAt      string `json:"created_at"`      // RFC 3339, UTC
	LastUpdatedAt  string `json:"last_updated_at"` // RFC 3339, UTC
}

// MarshalJSON writes p in its public shape: every required field present,
// empty or not, and conditions and group_by as arrays, never null.
func (p RateLimitsPolicy) MarshalJSON() ([]byte, error) {
	return json.Marshal(p.wire())
}

// policyWire is RateLimitsPolicy without its MarshalJSON.
type policyWire RateLimitsPolicy

func (p RateLimitsPolicy) wire() policyWire {
	if p.Conditions == nil {
		p.Conditions = []PolicyCondition{}
	}
	if p.GroupBy == nil {
		p.GroupBy = []PolicyGroupBy{}
	}
	return policyWire(p)
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

// maxPolicyName is the longest policy name accepted, in bytes.
const maxPolicyName = 255

// Validate checks the fields of p: a UUID id, a known type, unit and
// status, a value above zero (at least 1 for a requests policy, whose
// every request costs 1), and known condition and group keys.
func (p *RateLimitsPolicy) Validate() error {
	if !uuidRE.MatchString(p.ID) {
		return errors.New("gateway: policy id must be a UUID")
	}
	if p.Status != PolicyActive && p.Status != PolicyArchived {
		return errors.New("gateway: policy status must be active or archived")
	}
	if e := p.check(); e != nil {
		return e
	}
	return nil
}

// check validates the fields a caller of the control plane sets, naming
// the offending one in Param.
func (p *RateLimitsPolicy) check() *Error {
	switch {
	case len(p.Name) > maxPolicyName:
		return policyInvalid("name", "policy name must be at most 255 bytes")
	case p.Type != PolicyRequests && p.Type != PolicyTokens:
		return policyInvalid("type", "policy type must be requests or tokens")
	case policyPeriod(p.Unit) == 0:
		return policyInvalid("unit", "policy unit must be rpm, rph or rpd")
	case !(p.Value > 0) || math.IsInf(p.Value, 0):
		return policyInvalid("value", "policy value must be a number greater than 0")
	case p.Type == PolicyRequests && p.Value < 1:
		// Each request costs 1: below 1 no request could ever be admitted.
		return policyInvalid("value", "a requests policy's value must be at least 1, since each request costs 1; use a longer unit for fewer requests")
	}
	for i, c := range p.Conditions {
		if !policyKeyValid(c.Key) {
			return policyInvalid("conditions["+strconv.Itoa(i)+"].key", "policy key "+quoteShort(c.Key)+" is not api_key, workspace_id, virtual_key, organisation_id or metadata.<name>")
		}
	}
	for i, g := range p.GroupBy {
		if !policyKeyValid(g.Key) {
			return policyInvalid("group_by["+strconv.Itoa(i)+"].key", "policy key "+quoteShort(g.Key)+" is not api_key, workspace_id, virtual_key, organisation_id or metadata.<name>")
		}
	}
	return nil
}

func policyKeyValid(k string) bool {
	switch {
	case k == "api_key", k == "workspace_id", k == "organisation_id", k == "virtual_key":
		return true
	case strings.HasPrefix(k, "metadata.") && len(k) > len("metadata."):
		return true
	}
	return false
}

// policyPeriod returns the period of a unit, or 0 for an unknown unit.
func policyPeriod(unit string) time.Duration {
	switch unit {
	case PolicyPerMinute:
		return time.Minute
	case PolicyPerHour:
		return time.Hour
	case PolicyPerDay:
		return 24 * time.Hour
	}
	return 0
}

// policyCodeInvalid is the error code of a malformed control-plane request:
// a body field, query parameter or path parameter.
const policyCodeInvalid = "invalid_parameter"

// policyInvalid returns the 400 for a malformed parameter.
func policyInvalid(param, msg string) *Error {
	return badRequest(policyCodeInvalid, param, msg)
}
