package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"mime"
	"net/http"
	"regexp"
	"sort"
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
// the key itself), workspace_id, organisation_id (the _organisation
// metadata value) and metadata.<name> (the request's metadata over the
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
	// ID is a UUID, kept in lower case: the control plane and MemoryStore
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
			return policyInvalid("conditions["+strconv.Itoa(i)+"].key", "policy key "+quoteShort(c.Key)+" is not api_key, workspace_id, organisation_id or metadata.<name>")
		}
	}
	for i, g := range p.GroupBy {
		if !policyKeyValid(g.Key) {
			return policyInvalid("group_by["+strconv.Itoa(i)+"].key", "policy key "+quoteShort(g.Key)+" is not api_key, workspace_id, organisation_id or metadata.<name>")
		}
	}
	return nil
}

func policyKeyValid(k string) bool {
	switch {
	case k == "api_key", k == "workspace_id", k == "organisation_id":
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

// policyIDParam is the name of the path parameter, as the public API
// spells it.
const policyIDParam = "rateLimitsPolicyId"

// policyObject is the "object" of a rate-limits policy in responses.
const policyObject = "policy_rate_limits"

// Paging bounds of GET /policies/rate-limits.
const (
	policyPageSizeDefault = 100
	policyPageSizeMax     = 1000
)

// servePolicies serves the rate-limits control plane under
// {prefix}/policies/rate-limits:
//
//	POST   /policies/rate-limits       create → 200 {"id", "object"}
//	GET    /policies/rate-limits       list   → 200 {"object":"list","data","total"}
//	GET    /policies/rate-limits/{id}  read   → 200 the policy with "object"
//	PUT    /policies/rate-limits/{id}  update name, value, unit → 200 {}
//	DELETE /policies/rate-limits/{id}  delete → 200 {}
//
// Only keys with the admin role may call it (others get 403), and each key
// sees only the policies of its own workspace: another workspace's policy
// is a 404, as if it did not exist. Without Options.Policies every call by
// an admin is a 404 saying that policies are not enabled. Requests to the
// control plane are never rate-limited by policies.
func (g *Gateway) servePolicies(w http.ResponseWriter, r *http.Request) {
	id, ok := IdentityFrom(r.Context())
	if !ok || id.Role != RoleAdmin {
		WriteError(w, r, &Error{Status: http.StatusForbidden, Type: TypePermission, Code: CodePermissionDenied,
			Message: "rate-limits policies need a gateway API key with the admin role"})
		return
	}
	store := g.opts.Policies
	if store == nil {
		WriteError(w, r, &Error{Status: http.StatusNotFound, Type: TypeNotFound, Code: CodeNotFound,
			Message: "rate-limits policies are not enabled on this gateway"})
		return
	}
	pid := r.PathValue("id")
	var err error
	if pid == "" {
		switch r.Method {
		case http.MethodGet:
			err = g.listPolicies(w, r, store, id)
		case http.MethodPost:
			err = g.createPolicy(w, r, store, id)
		default:
			methodNotAllowed(w, r, "GET, POST")
			return
		}
	} else {
		switch r.Method {
		case http.MethodGet, http.MethodPut, http.MethodDelete:
		default:
			methodNotAllowed(w, r, "GET, PUT, DELETE")
			return
		}
		if !uuidRE.MatchString(pid) {
			WriteError(w, r, policyInvalid(policyIDParam, "the policy id must be a UUID"))
			return
		}
		pid = strings.ToLower(pid) // ids are stored in lower case
		switch r.Method {
		case http.MethodGet:
			err = g.getPolicy(w, r, store, id, pid)
		case http.MethodPut:
			err = g.updatePolicy(w, r, store, id, pid)
		default:
			err = g.deletePolicy(w, r, store, id, pid)
		}
	}
	if err != nil {
		var ge *Error
		if !errors.As(err, &ge) && !errors.As(err, new(*http.MaxBytesError)) {
			g.errLog.ErrorContext(r.Context(), "gateway: policy store", "err", err)
		}
		WriteError(w, r, err)
	}
}

// policyNotFound is the answer for an unknown policy, and for one of
// another workspace.
func policyNotFound(pid string) *Error {
	return &Error{Status: http.StatusNotFound, Type: TypeNotFound, Code: CodeNotFound,
		Message: "no rate-limits policy " + pid}
}

// lookupPolicy returns the policy pid of the caller's workspace. The
// operator's policies, of no workspace, are not found.
func lookupPolicy(ctx context.Context, store PolicyStore, id Identity, pid string) (*RateLimitsPolicy, error) {
	p, err := store.Policy(ctx, pid)
	if errors.Is(err, ErrNotFound) || err == nil && (p == nil || p.WorkspaceID == "" || p.WorkspaceID != id.WorkspaceID) {
		return nil, policyNotFound(pid)
	}
	return p, err
}

func (g *Gateway) listPolicies(w http.ResponseWriter, r *http.Request, store PolicyStore, id Identity) error {
	q := r.URL.Query()
	if ws, ok := q["workspace_id"]; ok && (len(ws) != 1 || ws[0] != id.WorkspaceID) {
		return &Error{Status: http.StatusForbidden, Type: TypePermission, Code: CodePermissionDenied, Param: "workspace_id",
			Message: "a key may list policies only in its own workspace"}
	}
	status, err := policyEnum(q, "status", PolicyActive, PolicyActive, PolicyArchived)
	if err != nil {
		return err
	}
	typ, err := policyEnum(q, "type", "", PolicyRequests, PolicyTokens)
	if err != nil {
		return err
	}
	unit, err := policyEnum(q, "unit", "", PolicyPerMinute, PolicyPerHour, PolicyPerDay)
	if err != nil {
		return err
	}
	size, err := policyInt(q, "page_size", policyPageSizeDefault, policyPageSizeMax)
	if err != nil {
		return err
	}
	page, err := policyInt(q, "current_page", 0, math.MaxInt32)
	if err != nil {
		return err
	}
	all, err := store.Policies(r.Context(), id.WorkspaceID)
	if err != nil {
		return err
	}
	data := make([]RateLimitsPolicy, 0, min(len(all), size))
	total := 0
	for _, p := range all {
		if p.WorkspaceID == "" || p.WorkspaceID != id.WorkspaceID || p.Status != status || typ != "" && p.Type != typ || unit != "" && p.Unit != unit {
			continue
		}
		if total >= page*size && len(data) < size {
			data = append(data, p)
		}
		total++
	}
	writePolicyJSON(w, struct {
		Object string             `json:"object"`
		Data   []RateLimitsPolicy `json:"data"`
		Total  int                `json:"total"`
	}{"list", data, total})
	return nil
}

// policyEnum reads query parameter name, which must be one of values when
// present.
func policyEnum(q map[string][]string, name, def string, values ...string) (string, error) {
	vs, ok := q[name]
	if !ok {
		return def, nil
	}
	for _, v := range values {
		if len(vs) == 1 && vs[0] == v {
			return v, nil
		}
	}
	return "", policyInvalid(name, name+" must be one of "+strings.Join(values, ", "))
}

// policyInt reads query parameter name, an integer from 0 to hi.
func policyInt(q map[string][]string, name string, def, hi int) (int, error) {
	vs, ok := q[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(vs[0])
	if len(vs) != 1 || err != nil || n < 0 || n > hi {
		return 0, policyInvalid(name, name+" must be an integer from 0 to "+strconv.Itoa(hi))
	}
	return n, nil
}

func (g *Gateway) getPolicy(w http.ResponseWriter, r *http.Request, store PolicyStore, id Identity, pid string) error {
	// status filters as in the list, active by default: an archived policy
	// is found only with status=archived.
	status, err := policyEnum(r.URL.Query(), "status", PolicyActive, PolicyActive, PolicyArchived)
	if err != nil {
		return err
	}
	p, err := lookupPolicy(r.Context(), store, id, pid)
	if err != nil {
		return err
	}
	if p.Status != status {
		return policyNotFound(pid)
	}
	writePolicyJSON(w, struct {
		policyWire
		Object string `json:"object"`
	}{p.wire(), policyObject})
	return nil
}

// policyCreate is the body of POST /policies/rate-limits.
type policyCreate struct {
	Name           *string           `json:"name"`
	Conditions     []PolicyCondition `json:"conditions"`
	GroupBy        []PolicyGroupBy   `json:"group_by"`
	Type           string            `json:"type"`
	Unit           string            `json:"unit"`
	Value          *float64          `json:"value"`
	WorkspaceID    string            `json:"workspace_id"`
	OrganisationID string            `json:"organisation_id"`
}

func (g *Gateway) createPolicy(w http.ResponseWriter, r *http.Request, store PolicyStore, id Identity) error {
	if id.WorkspaceID == "" {
		// Its policy would have no workspace: the operator's kind, which
		// applies to every workspace.
		return &Error{Status: http.StatusForbidden, Type: TypePermission, Code: CodePermissionDenied,
			Message: "a key without a workspace cannot create policies"}
	}
	data, err := g.readPolicyBody(w, r)
	if err != nil {
		return err
	}
	var c policyCreate
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return policyBodyError(err)
	}
	if dec.More() {
		return policyInvalid("", "the body must be a single JSON object")
	}
	switch {
	case len(c.Conditions) == 0:
		return policyInvalid("conditions", "conditions must hold at least one condition")
	case len(c.GroupBy) == 0:
		return policyInvalid("group_by", "group_by must hold at least one key")
	case c.Value == nil:
		return policyInvalid("value", "value is required")
	case c.OrganisationID != "" && !uuidRE.MatchString(c.OrganisationID):
		return policyInvalid("organisation_id", "organisation_id must be a UUID")
	case c.WorkspaceID != "" && c.WorkspaceID != id.WorkspaceID:
		return &Error{Status: http.StatusForbidden, Type: TypePermission, Code: CodePermissionDenied, Param: "workspace_id",
			Message: "a key may create policies only in its own workspace"}
	}
	now := policyNow()
	p := RateLimitsPolicy{
		ID:             newUUID(),
		Conditions:     c.Conditions,
		GroupBy:        c.GroupBy,
		Type:           c.Type,
		Unit:           c.Unit,
		Value:          *c.Value,
		Status:         PolicyActive,
		WorkspaceID:    id.WorkspaceID,
		OrganisationID: c.OrganisationID,
		CreatedAt:      now,
		LastUpdatedAt:  now,
	}
	if c.Name != nil {
		p.Name = *c.Name
	}
	if e := p.check(); e != nil {
		return e
	}
	if err := store.PutPolicy(r.Context(), &p); err != nil {
		return err
	}
	writePolicyJSON(w, struct {
		ID     string `json:"id"`
		Object string `json:"object"`
	}{p.ID, policyObject})
	return nil
}

// updatePolicy serves PUT: it reads the policy, changes it and writes it
// back. With a PolicyCompareAndSwapper store the write happens only if the
// policy is still as read, otherwise it is read again, so that a PUT never
// resurrects a policy deleted meanwhile nor undoes a racing PUT.
func (g *Gateway) updatePolicy(w http.ResponseWriter, r *http.Request, store PolicyStore, id Identity, pid string) error {
	data, err := g.readPolicyBody(w, r)
	if err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		return policyInvalid("", "the body must be a JSON object of name, value and unit")
	}
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	var (
		name    *string
		value   *float64
		unit    string
		nameSet bool
	)
	for _, k := range names {
		raw := fields[k]
		switch k {
		case "name":
			nameSet = true
			if string(raw) == "null" {
				continue
			}
			if err := json.Unmarshal(raw, &name); err != nil || len(*name) > maxPolicyName {
				return policyInvalid("name", "name must be a string of at most 255 bytes, or null")
			}
		case "value":
			if err := json.Unmarshal(raw, &value); err != nil || value == nil || !(*value > 0) || math.IsInf(*value, 0) {
				return policyInvalid("value", "value must be a number greater than 0")
			}
		case "unit":
			if err := json.Unmarshal(raw, &unit); err != nil || policyPeriod(unit) == 0 {
				return policyInvalid("unit", "unit must be rpm, rph or rpd")
			}
		default:
			return policyInvalid(k, "only name, value and unit of a policy can be changed")
		}
	}
	if len(names) == 0 {
		return policyInvalid("", "the body must set at least one of name, value and unit")
	}
	ctx := r.Context()
	cas, _ := store.(PolicyCompareAndSwapper)
	for try := 0; ; try++ {
		if try == maxPolicySwaps {
			// Others keep changing it (or the store reads back what it
			// never compares equal): give up rather than spin.
			return &Error{Status: http.StatusConflict, Type: TypeInvalidRequest, Code: CodeConflict,
				Message: "policy " + pid + " kept changing during the update; try again"}
		}
		p, err := lookupPolicy(ctx, store, id, pid)
		if err != nil {
			return err
		}
		old := *p
		if nameSet {
			p.Name = ""
			if name != nil {
				p.Name = *name
			}
		}
		if value != nil {
			p.Value = *value
		}
		if unit != "" {
			p.Unit = unit
		}
		if e := p.check(); e != nil {
			return e // e.g. a requests policy lowered below 1
		}
		p.LastUpdatedAt = policyNow()
		if cas == nil {
			if err := store.PutPolicy(ctx, p); err != nil {
				return err
			}
			break
		}
		// Written only if nobody changed or deleted it since it was
		// read; otherwise read it again (another writer made progress).
		swapped, err := cas.CompareAndSwapPolicy(ctx, &old, p)
		if errors.Is(err, ErrNotFound) {
			return policyNotFound(pid)
		}
		if err != nil {
			return err
		}
		if swapped {
			break
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	writePolicyJSON(w, struct{}{})
	return nil
}

// maxPolicySwaps bounds the compare-and-swap attempts of one PUT.
const maxPolicySwaps = 16

func (g *Gateway) deletePolicy(w http.ResponseWriter, r *http.Request, store PolicyStore, id Identity, pid string) error {
	if _, err := lookupPolicy(r.Context(), store, id, pid); err != nil {
		return err
	}
	if err := store.DeletePolicy(r.Context(), pid); err != nil {
		if errors.Is(err, ErrNotFound) {
			return policyNotFound(pid)
		}
		return err
	}
	writePolicyJSON(w, struct{}{})
	return nil
}

// readPolicyBody reads a control-plane body of at most MaxBodyBytes.
func (g *Gateway) readPolicyBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, policyInvalid("", "a JSON body is required")
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.opts.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, policyInvalid("", "the body could not be read")
	}
	return data, nil
}

// policyBodyError turns a JSON decoding error of a create body into a 400
// naming the field.
func policyBodyError(err error) *Error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			return policyInvalid("", "the body must be a JSON object")
		}
		return policyInvalid(field, field+" must be a JSON "+te.Type.Kind().String())
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		f, _ = strconv.Unquote(f)
		return policyInvalid(f, "unknown field "+quoteShort(f))
	}
	return policyInvalid("", "the body is not valid JSON")
}

// policyNow returns the time in the fixed-width RFC 3339 form stored in
// created_at and last_updated_at, so that the strings sort by time.
func policyNow() string {
	return time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

func writePolicyJSON(w http.ResponseWriter, v any) {
	body, _ := json.Marshal(v)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(http.StatusOK)
	w.Write(append(body, '\n'))
}

// Response headers reporting the tightest rate-limits policy that applied
// to a request.
const (
	HeaderRateLimitRequests          = "X-Ratelimit-Limit-Requests"
	HeaderRateLimitRemainingRequests = "X-Ratelimit-Remaining-Requests"
	HeaderRateLimitTokens            = "X-Ratelimit-Limit-Tokens"
	HeaderRateLimitRemainingTokens   = "X-Ratelimit-Remaining-Tokens"
)

// policyHit is one policy applied to one request.
type policyHit struct {
	p     *RateLimitsPolicy
	key   string
	limit Limit
}

// cost is what admitting the request takes from h's bucket: 1 for a
// requests policy; nothing for a tokens policy, whose usage is charged
// afterwards.
func (h policyHit) cost() float64 {
	if h.p.Type == PolicyRequests {
		return 1
	}
	return 0
}

// wait returns how long until h would admit the request, from d, the
// Limiter's answer to a Take of cost (the request's cost under h, or zero
// to ask without adding to the consumption): zero when it would admit it
// now.
//
// A tokens policy admits only while its bucket is below its value, so it
// needs a nanosecond more than the wait until the bucket reaches it.
// A Take of cost zero is refused only while the bucket is full, so for a
// requests policy asked that way the wait until one unit fits is worked
// out from what is left, at the limit's rate, rounded as MemoryLimiter
// rounds.
func (h policyHit) wait(d LimitDecision, cost float64) time.Duration {
	w := time.Duration(0)
	if !d.Allowed {
		w = max(d.RetryAfter, 0)
		if h.cost() == 0 && w < math.MaxInt64 {
			w++
		}
	}
	if c := h.cost(); c > cost && d.Remaining < c {
		need := math.Round((c - d.Remaining) * float64(h.limit.Per) / h.limit.Value)
		if !(need < float64(math.MaxInt64)) {
			return time.Duration(math.MaxInt64)
		}
		w = max(w, time.Duration(need))
	}
	return w
}

// maxRetryAfter caps the Retry-After of a refusal. A bucket overdrawn by
// a huge usage can need longer than a time.Duration holds (a Limiter then
// answers math.MaxInt64), and the header must stay a positive number.
const maxRetryAfter = 100 * 365 * 24 * time.Hour

// policyNoop is the completion of a request no policy applied to.
func policyNoop() {}

// admitPolicies applies the caller's active rate-limits policies (those of
// its workspace and those of no workspace) to a request about to reach a
// provider. It returns the ResponseWriter the request must answer through
// (it adds the x-ratelimit-* headers and counts the tokens of the
// response) and a func to call once the response is done; or the 429
// refusing the request. The 429's Retry-After is the longest wait among
// the matching policies that refuse, so that a retry after it is not
// refused by another one; the policies after the first refusal are only
// asked, at no cost.
//
// Policies are read from the store on every request, so a change applies
// at once. An error of the store or the Limiter refuses the request.
func (g *Gateway) admitPolicies(w http.ResponseWriter, r *http.Request, st *requestState) (http.ResponseWriter, func(), error) {
	if g.opts.Policies == nil {
		return w, policyNoop, nil
	}
	ctx := r.Context()
	ps, err := g.opts.Policies.Policies(ctx, st.identity.WorkspaceID)
	if err != nil {
		g.errLog.ErrorContext(ctx, "gateway: policy store", "err", err)
		return w, policyNoop, err
	}
	var hits []policyHit
	for i := range ps {
		p := &ps[i]
		if p.Status != PolicyActive || p.WorkspaceID != "" && p.WorkspaceID != st.identity.WorkspaceID || !p.matches(st) {
			continue
		}
		if p.Type != PolicyRequests && p.Type != PolicyTokens {
			return w, policyNoop, errors.New("gateway: policy " + p.ID + " has an unknown type")
		}
		hits = append(hits, policyHit{p: p, key: p.bucketKey(st), limit: Limit{Value: p.Value, Per: policyPeriod(p.Unit)}})
	}
	if len(hits) == 0 {
		return w, policyNoop, nil
	}
	lw := &limitWriter{ResponseWriter: w, g: g, ctx: ctx, st: st, hits: hits, reqBytes: &st.body,
		estimate: r.Method == http.MethodPost && !uploadBody(r.Header.Get("Content-Type"))}
	for i, h := range hits {
		d, err := g.opts.Limiter.Take(ctx, h.key, h.limit, h.cost())
		if err != nil {
			g.errLog.ErrorContext(ctx, "gateway: rate limiter", "policy", h.p.ID, "err", err)
		} else if !d.Allowed {
			err = g.refusal(ctx, w, h, d, hits[i+1:])
		}
		if err != nil {
			lw.refund(hits[:i])
			return w, policyNoop, err
		}
		lw.note(h, d.Remaining)
	}
	if lw.tokens != nil {
		// Ask the transport for the encoding it decodes itself, so that
		// the usage in the response can be read.
		r.Header.Del("Accept-Encoding")
	}
	return lw, lw.done, nil
}

// refusal returns the 429 of a request that policy h refused with d. The
// policies after h (rest) are asked at no cost whether they would refuse
// too: the answer names the one of them all whose wait is the longest, and
// waits that long. An error of the Limiter in asking is logged and that
// policy left out.
func (g *Gateway) refusal(ctx context.Context, w http.ResponseWriter, h policyHit, d LimitDecision, rest []policyHit) error {
	worst, wait := h, h.wait(d, h.cost())
	for _, o := range rest {
		od, err := g.opts.Limiter.Take(ctx, o.key, o.limit, 0)
		if err != nil {
			g.errLog.WarnContext(ctx, "gateway: rate limiter", "policy", o.p.ID, "err", err)
			continue
		}
		if ow := o.wait(od, 0); ow > wait {
			worst, wait = o, ow
		}
	}
	p := worst.p
	limitHeader, remainingHeader := HeaderRateLimitRequests, HeaderRateLimitRemainingRequests
	if p.Type == PolicyTokens {
		limitHeader, remainingHeader = HeaderRateLimitTokens, HeaderRateLimitRemainingTokens
	}
	w.Header().Set(limitHeader, strconv.FormatFloat(p.Value, 'f', -1, 64))
	w.Header().Set(remainingHeader, "0")
	return &Error{Status: http.StatusTooManyRequests, Type: p.Type, Code: CodeRateLimitExceeded,
		RetryAfter: min(max(wait, time.Second), maxRetryAfter), Message: "rate limit exceeded: policy " + policyLabel(p) +
			" allows " + strconv.FormatFloat(p.Value, 'f', -1, 64) + " " + p.Type + " per " + policyUnitName(p.Unit)}
}

func policyLabel(p *RateLimitsPolicy) string {
	if p.Name != "" {
		return quoteShort(p.Name)
	}
	return p.ID
}

func policyUnitName(unit string) string {
	switch unit {
	case PolicyPerMinute:
		return "minute"
	case PolicyPerHour:
		return "hour"
	}
	return "day"
}

// policyValue returns the value of a condition or group key for a request.
func policyValue(st *requestState, key string) (string, bool) {
	switch key {
	case "api_key":
		return st.identity.KeyID, true
	case "workspace_id":
		return st.identity.WorkspaceID, true
	case "organisation_id":
		v, ok := st.opts.Metadata[MetadataOrganisation]
		return v, ok
	}
	if name, ok := strings.CutPrefix(key, "metadata."); ok {
		v, ok := st.opts.Metadata[name]
		return v, ok
	}
	return "", false
}

// matches reports whether every condition of p holds for the request.
func (p *RateLimitsPolicy) matches(st *requestState) bool {
	for _, c := range p.Conditions {
		if v, ok := policyValue(st, c.Key); !ok || v != c.Value {
			return false
		}
	}
	return true
}

// bucketKey names the bucket of p the request counts in: the policy id and
// the length-prefixed values of its group keys.
func (p *RateLimitsPolicy) bucketKey(st *requestState) string {
	var b strings.Builder
	b.WriteString(p.ID)
	for _, g := range p.GroupBy {
		v, _ := policyValue(st, g.Key)
		if g.Key == "api_key" && p.WorkspaceID == "" {
			// An operator's policy spans workspaces, whose key ids need
			// not differ: a key is named by its workspace too.
			v = st.identity.WorkspaceID + "\x00" + v
		}
		b.WriteByte(0)
		b.WriteString(strconv.Itoa(len(v)))
		b.WriteByte(':')
		b.WriteString(v)
	}
	return b.String()
}

// limitWriter adds the x-ratelimit-* headers to a response and, when token
// policies applied, reads usage.total_tokens from the response body as it
// passes, unchanged, to charge it when the response is done.
type limitWriter struct {
	http.ResponseWriter
	g    *Gateway
	ctx  context.Context
	st   *requestState
	hits []policyHit // every policy that admitted the request

	req, tok       bool    // a requests / tokens policy applied
	reqLim, reqRem float64 // the tightest requests policy
	tokLim, tokRem float64 // the tightest tokens policy
	tokens         []policyHit

	started  bool
	status   int  // the status sent
	hit      bool // a cache hit: no provider tokens used
	scan     bool // the body is being scanned
	estimate bool // no reported usage: charge an estimate
	reqBytes *countingBody
	usage    usageScanner
}

// note records a policy that admitted the request with rem left.
func (lw *limitWriter) note(h policyHit, rem float64) {
	if h.p.Type == PolicyTokens {
		lw.tokens = append(lw.tokens, h)
		if !lw.tok || rem < lw.tokRem || rem == lw.tokRem && h.limit.Value < lw.tokLim {
			lw.tok, lw.tokLim, lw.tokRem = true, h.limit.Value, rem
		}
		return
	}
	if !lw.req || rem < lw.reqRem || rem == lw.reqRem && h.limit.Value < lw.reqLim {
		lw.req, lw.reqLim, lw.reqRem = true, h.limit.Value, rem
	}
}

func (lw *limitWriter) start(code int) {
	lw.started, lw.status = true, code
	h := lw.Header()
	if lw.req {
		setHeader(h, HeaderRateLimitRequests, strconv.FormatFloat(lw.reqLim, 'f', -1, 64))
		setHeader(h, HeaderRateLimitRemainingRequests, strconv.FormatFloat(max(0, math.Floor(lw.reqRem)), 'f', -1, 64))
	}
	if lw.tok {
		setHeader(h, HeaderRateLimitTokens, strconv.FormatFloat(lw.tokLim, 'f', -1, 64))
		setHeader(h, HeaderRateLimitRemainingTokens, strconv.FormatFloat(max(0, math.Floor(lw.tokRem)), 'f', -1, 64))
	}
	if lw.tokens == nil {
		return
	}
	if h.Get(HeaderCacheStatus) == "HIT" {
		lw.hit = true // a cache hit used no provider tokens
		return
	}
	if ce := h.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		return
	}
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	switch {
	case mt == "text/event-stream":
		lw.scan = true
		lw.usage.sse = true
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		lw.scan = true
	}
}

// WriteHeader adds the rate-limit headers before the status goes out.
func (lw *limitWriter) WriteHeader(code int) {
	if !lw.started && code >= 200 {
		lw.start(code)
	}
	lw.ResponseWriter.WriteHeader(code)
}

// Write passes p on, reading the usage in it.
func (lw *limitWriter) Write(p []byte) (int, error) {
	if !lw.started {
		lw.start(http.StatusOK)
	}
	n, err := lw.ResponseWriter.Write(p)
	if lw.scan {
		lw.usage.write(p[:n])
	}
	return n, err
}

// Flush sends buffered data to the client.
func (lw *limitWriter) Flush() {
	http.NewResponseController(lw.ResponseWriter).Flush()
}

// Unwrap returns the underlying ResponseWriter, for http.ResponseController.
func (lw *limitWriter) Unwrap() http.ResponseWriter { return lw.ResponseWriter }

// done charges the tokens the response used to every token policy that
// admitted the request: the usage it reported, else an estimate. It runs
// even when the response was aborted or the caller went away, for what was
// seen.
//
// A request the gateway itself refused (an error of its own, 4xx but 429,
// such as incomplete host settings) before any of it reached a provider
// gets its unit back from every requests policy: it cost no provider
// anything. Cache hits, which reach no provider either, stay charged.
func (lw *limitWriter) done() {
	if lw.started && lw.status >= 400 && lw.status <= 499 && lw.status != http.StatusTooManyRequests &&
		!lw.st.upstream.Load() && lw.st.log.ErrorCode != "" {
		// log.ErrorCode is set by WriteError alone: the gateway wrote
		// this answer, no provider did (a cache fill shared with other
		// callers does not mark upstream).
		lw.refund(lw.hits)
		return
	}
	if lw.tokens == nil || !lw.started || lw.hit {
		return
	}
	total, ok := lw.usage.total()
	if !ok {
		if !lw.estimate || lw.status < 200 || lw.status > 299 {
			return
		}
		total = math.Ceil(float64(lw.reqBytes.n)/4) + lw.usage.estimate()
	}
	if total <= 0 {
		return
	}
	ctx := context.WithoutCancel(lw.ctx)
	for _, h := range lw.tokens {
		if err := lw.g.opts.Limiter.Charge(ctx, h.key, h.limit, total); err != nil {
			lw.g.errLog.WarnContext(ctx, "gateway: rate limiter charge", "err", err)
		}
	}
}

// refund gives back the unit each requests policy among hits took.
func (lw *limitWriter) refund(hits []policyHit) {
	ctx := context.WithoutCancel(lw.ctx)
	for _, h := range hits {
		if h.p.Type != PolicyRequests {
			continue
		}
		if err := lw.g.opts.Limiter.Charge(ctx, h.key, h.limit, -1); err != nil {
			lw.g.errLog.WarnContext(ctx, "gateway: rate limiter refund", "policy", h.p.ID, "err", err)
		}
	}
}

// uploadBody reports whether a request body of this content type is an
// upload rather than a request for tokens.
func uploadBody(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch {
	case strings.HasPrefix(mt, "multipart/"), mt == "application/octet-stream",
		strings.HasPrefix(mt, "audio/"), strings.HasPrefix(mt, "image/"), strings.HasPrefix(mt, "video/"):
		return true
	}
	return false
}

// usageScanner finds the token counts of a JSON document, or of the data
// of a text/event-stream, reading bytes as they pass in constant memory. It
// understands just enough JSON to track nesting, strings and the keys of
// the objects on the way to a usage object (usage, or Vertex AI's
// usageMetadata): the top-level one, and the top-level object's member
// objects; and usageMetadata in the objects of a top-level array.
type usageScanner struct {
	sse bool

	// SSE framing.
	field   int  // bytes of "data:" matched at the start of the line; -1 skips the line
	inData  bool // feeding the rest of a data line to the JSON scanner
	space   bool // the data value just began: one space may be skipped
	cr      bool // the previous byte was '\r'
	dirty   bool // the line is not empty
	hasData bool // the event has a data line

	// JSON.
	depth      int
	objects    uint64 // bit d: the container at depth d+1 is an object
	inString   bool
	escape     bool
	isKey      bool // the current string is an object key
	expectKey  bool // the next string in the current object is a key
	key        [32]byte
	keyLen     int // len(key) + 1 means too long
	pending    uint8
	usageDepth int // depth of the usage object's members; 0 outside it
	inNum      bool
	numKey     uint8 // the usage key of the number being read
	num        [32]byte
	numLen     int

	found  bool
	max    [usageKeys]float64 // the largest value seen of each usage key
	bytes  int64              // bytes scanned
	events int64              // SSE events with data
}

// Keys the scanner waits for the value of: usage, and the token counts in
// a usage object.
const (
	usageKeyNone uint8 = iota
	usageKeyUsage
	usageKeyTotal
	usageKeyPrompt
	usageKeyCompletion
	usageKeyInput
	usageKeyOutput
	usageKeyCacheCreation
	usageKeyCacheRead
	usageKeys
)

// usageCountKey returns the usage key of a token count in a usage object,
// or usageKeyNone: the snake_case names of OpenAI and Anthropic, the
// camelCase ones of Bedrock Converse and of Vertex AI's usageMetadata.
func usageCountKey(k []byte) uint8 {
	switch string(k) {
	case "total_tokens", "totalTokens", "totalTokenCount":
		return usageKeyTotal
	case "prompt_tokens", "promptTokenCount":
		return usageKeyPrompt
	case "completion_tokens", "candidatesTokenCount":
		return usageKeyCompletion
	case "input_tokens", "inputTokens":
		return usageKeyInput
	case "output_tokens", "outputTokens":
		return usageKeyOutput
	case "cache_creation_input_tokens":
		return usageKeyCacheCreation
	case "cache_read_input_tokens":
		return usageKeyCacheRead
	}
	return usageKeyNone
}

// total returns the tokens the usage seen adds up to, and whether any was
// seen.
func (s *usageScanner) total() (float64, bool) {
	s.endNumber()
	if !s.found {
		return 0, false
	}
	m := &s.max
	return max(m[usageKeyTotal], m[usageKeyPrompt]+m[usageKeyCompletion],
		m[usageKeyInput]+m[usageKeyCacheCreation]+m[usageKeyCacheRead]+m[usageKeyOutput]), true
}

// estimate returns the tokens an answer that reported no usage is charged
// for what was scanned of it: one per event of a stream, else one per 4
// bytes.
func (s *usageScanner) estimate() float64 {
	if s.sse {
		if s.hasData {
			return float64(s.events + 1) // an event cut before its blank line
		}
		return float64(s.events)
	}
	return math.Ceil(float64(s.bytes) / 4)
}

func (s *usageScanner) write(p []byte) {
	s.bytes += int64(len(p))
	if !s.sse {
		for _, c := range p {
			s.jsonByte(c)
		}
		return
	}
	for _, c := range p {
		if c == '\n' && s.cr {
			s.cr = false
			continue
		}
		s.cr = c == '\r'
		if c == '\n' || c == '\r' {
			if !s.dirty {
				s.endEvent()
			} else if s.inData {
				s.jsonByte('\n')
			}
			s.field, s.inData, s.space, s.dirty = 0, false, false, false
			continue
		}
		s.dirty = true
		switch {
		case s.inData:
			if s.space {
				s.space = false
				if c == ' ' {
					continue
				}
			}
			s.jsonByte(c)
		case s.field >= 0:
			if c != "data:"[s.field] {
				s.field = -1
			} else if s.field++; s.field == len("data:") {
				s.inData, s.space, s.hasData = true, true, true
			}
		}
	}
}

// endEvent resets the JSON scanner between events, keeping what was found
// and counted.
func (s *usageScanner) endEvent() {
	s.endNumber()
	events := s.events
	if s.hasData {
		events++
	}
	*s = usageScanner{sse: true, found: s.found, max: s.max, bytes: s.bytes, events: events}
}

func (s *usageScanner) inObject() bool {
	return s.depth > 0 && s.depth <= 64 && s.objects&(1<<(s.depth-1)) != 0
}

func (s *usageScanner) endNumber() {
	if !s.inNum {
		return
	}
	s.inNum = false
	if s.numLen > len(s.num) {
		return
	}
	if v, err := strconv.ParseFloat(string(s.num[:s.numLen]), 64); err == nil && v >= 0 && !math.IsInf(v, 0) {
		s.max[s.numKey] = max(s.max[s.numKey], v)
		s.found = true
	}
}

func (s *usageScanner) jsonByte(c byte) {
	if s.inString {
		switch {
		case s.escape:
			s.escape = false
		case c == '\\':
			s.escape = true
			s.keyLen = len(s.key) + 1 // an escaped key is none we look for
		case c == '"':
			s.inString = false
		case s.isKey && s.keyLen < len(s.key):
			s.key[s.keyLen] = c
			s.keyLen++
		case s.isKey:
			s.keyLen = len(s.key) + 1
		}
		return
	}
	if s.inNum {
		if c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' {
			if s.numLen < len(s.num) {
				s.num[s.numLen] = c
			}
			s.numLen++
			return
		}
		s.endNumber()
	}
	switch c {
	case ' ', '\t', '\n', '\r':
	case '"':
		s.inString = true
		s.isKey = s.expectKey && s.inObject()
		s.expectKey = false
		s.keyLen = 0
		s.pending = usageKeyNone
	case ':':
		s.pending = usageKeyNone
		if !s.isKey || s.keyLen > len(s.key) {
			break
		}
		k := s.key[:s.keyLen]
		switch {
		case s.usageDepth != 0:
			if s.depth == s.usageDepth {
				s.pending = usageCountKey(k)
			}
		case string(k) == "usage" && (s.depth == 1 || s.depth == 2 && s.objects&1 != 0):
			s.pending = usageKeyUsage
		case string(k) == "usageMetadata" && (s.depth == 1 || s.depth == 2):
			// At depth 2 the container at depth 1 is an object or, in
			// Vertex AI's streamGenerateContent, an array of answers.
			s.pending = usageKeyUsage
		}
		s.isKey = false
	case '{', '[':
		if c == '{' && s.pending == usageKeyUsage {
			s.usageDepth = s.depth + 1
		}
		s.depth++
		if s.depth <= 64 {
			if c == '{' {
				s.objects |= 1 << (s.depth - 1)
			} else {
				s.objects &^= 1 << (s.depth - 1)
			}
		}
		s.expectKey = c == '{'
		s.pending = usageKeyNone
	case '}', ']':
		if s.depth == s.usageDepth {
			s.usageDepth = 0
		}
		if s.depth > 0 {
			s.depth--
		}
		s.expectKey = false
		s.pending = usageKeyNone
	case ',':
		s.expectKey = s.inObject()
		s.pending = usageKeyNone
	default:
		if s.pending > usageKeyUsage && (c >= '0' && c <= '9' || c == '-') {
			s.inNum, s.numKey = true, s.pending
			s.num[0] = c
			s.numLen = 1
		}
		s.pending = usageKeyNone
	}
}
