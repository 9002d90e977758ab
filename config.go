package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/url"
	"strconv"
	"strings"
)

// Config is a routing config, saved under an id or sent inline in
// x-gateway-config. The top level and every target share this shape:
// targets nest, and a target inherits the retry, cache, request_timeout,
// stream_idle_timeout, custom_host and forward_headers settings it lacks
// from its parent, and
// merges its parent's override_params under its own (its own win).
//
// A Config returned by ParseConfig is valid and must not be modified: the
// gateway shares it between requests. It marshals back to JSON that
// ParseConfig accepts and reads as the same config.
type Config struct {
	// Name names the target, for a parent's conditional strategy.
	Name string `json:"name,omitempty"`

	// Strategy says how the node picks among Targets; nil means single.
	Strategy *Strategy `json:"strategy,omitempty"`

	// Targets are the node's children. A node without targets is a leaf:
	// one provider call (and its retries), whatever its strategy mode
	// (fallback or loadbalance over one target is that target); only the
	// conditional mode, whose conditions name targets, needs them.
	Targets []*Config `json:"targets,omitempty"`

	// Provider selection: a provider slug with an API key (and optionally
	// a custom host), or a virtual key. A node without them inherits its
	// parent's, and at the top the request's headers. A node that inherits
	// a virtual key may not set api_key, custom_host or an AWS key pair:
	// the virtual key holds its credential and host.
	Provider   string `json:"provider,omitempty"`
	VirtualKey string `json:"virtual_key,omitempty"`
	APIKey     string `json:"api_key,omitempty"`
	CustomHost string `json:"custom_host,omitempty"`
	HostSettings

	// Weight is the share of a loadbalance parent's traffic; nil means 1,
	// and 0 means the target is never chosen. The weights of a parent's
	// targets must not all be 0 and must sum to a finite number.
	Weight *float64 `json:"weight,omitempty"`

	// OverrideParams are top-level fields set in JSON request bodies.
	OverrideParams map[string]any `json:"override_params,omitempty"`
	Retry          *RetryConfig   `json:"retry,omitempty"`
	Cache          *CacheConfig   `json:"cache,omitempty"`
	RequestTimeout int64          `json:"request_timeout,omitempty"` // milliseconds per attempt, to response headers
	ForwardHeaders []string       `json:"forward_headers,omitempty"`

	// StreamIdleTimeout, in milliseconds, bounds the wait for each next
	// piece of an answer whose headers have arrived; zero inherits the
	// parent's, and at the top Options.StreamIdleTimeout.
	StreamIdleTimeout int64 `json:"stream_idle_timeout,omitempty"`

	// InputGuardrails and OutputGuardrails attach guardrails, checked by
	// Options.Hooks, to the requests the node routes: on the request
	// before the provider call, and on its answer. Each is a guardrail id
	// (a JSON string) or an inline guardrail (a JSON object); the top
	// level's apply to every request, a target's to the requests that
	// target serves, after the top level's. At most 16 of each per node.
	InputGuardrails  []json.RawMessage `json:"input_guardrails,omitempty"`
	OutputGuardrails []json.RawMessage `json:"output_guardrails,omitempty"`

	// BeforeRequestHooks and AfterRequestHooks are other names of
	// InputGuardrails and OutputGuardrails: ParseConfig appends them
	// there and leaves them empty.
	BeforeRequestHooks []json.RawMessage `json:"before_request_hooks,omitempty"`
	AfterRequestHooks  []json.RawMessage `json:"after_request_hooks,omitempty"`
}

// Strategy says how a config node picks among its targets. An empty Mode
// means ModeSingle.
type Strategy struct {
	Mode Mode `json:"mode"`

	// OnStatusCodes are the provider statuses on which a fallback moves to
	// the next target; empty means every non-2xx status. Transport errors
	// and timeouts always move on.
	OnStatusCodes []int `json:"on_status_codes,omitempty"`

	// Conditions and Default drive the conditional mode: the first
	// condition whose query matches names the target, else Default does.
	Conditions []Condition `json:"conditions,omitempty"`
	Default    string      `json:"default,omitempty"`

	// CBConfig gives each target under the node a circuit breaker; nil
	// means the parent's, if any.
	CBConfig *BreakerConfig `json:"cb_config,omitempty"`

	// Sticky keeps requests with the same value of a key on one target
	// of a loadbalance node; nil means a draw by weight for each request.
	Sticky *StickyConfig `json:"sticky,omitempty"`
}

// Mode is how a strategy picks among its targets.
type Mode string

// Strategy modes.
const (
	ModeSingle      Mode = "single"      // the first target
	ModeFallback    Mode = "fallback"    // the targets in order, until one answers
	ModeLoadbalance Mode = "loadbalance" // one target, drawn by weight
	ModeConditional Mode = "conditional" // the target named by the first matching condition
)

// Condition routes to the target named Then when Query matches. Query maps
// fields to tests: a field is "metadata.<key>" (the request's metadata)
// or "params.<field>" (a top-level field of the JSON request body); a test
// is a value (equality) or an object of operators $eq, $ne, $gt, $gte,
// $lt, $lte, $in, $nin, $regex, all of which must hold; an object mixing
// operators with other keys is refused. The keys $and and $or take arrays
// of queries. Every entry of a query must match.
//
// Bounds (docs/architecture.md, Trust), so that matching costs a request little: a config
// holds at most 32 tests of a field in all its conditions (each operator
// on a field counts one), its $regex patterns are at most 1 KiB each and
// compile to at most 1,024 instructions in all (a{100} counts 100), and a
// $regex is only matched against a value of at most 4 KiB: a longer one
// is a 400 invalid_value naming the body field (or x-gateway-metadata),
// rather than a silent non-match that would route the request elsewhere.
// Matching stops when the caller goes away.
type Condition struct {
	Query map[string]any `json:"query"`
	Then  string         `json:"then"`

	match  matcher // compiled by ParseConfig
	params bool    // the query looks at params.*, so the body must be read
}

// RetryConfig says how often an attempt is retried. Attempts is the number
// of retries after the first try, 0 to 5. A request makes at most 10
// upstream attempts in all, its targets' and their retries (docs/architecture.md, Trust):
// ParseConfig refuses a config whose worst case (a fallback's targets
// add up, the other modes try one target) exceeds it, and execution stops
// there whatever the plan, answering with the last failure. Each attempt
// after the first takes a unit of the requests rate-limits policies that
// admitted the request; when one refuses, the request stops trying and
// answers with the last failure (the provider's answer, not a 429: the
// request itself was admitted, and what the caller needs to know is why
// the provider failed).
type RetryConfig struct {
	Attempts int `json:"attempts"`

	// OnStatusCodes are the provider statuses that are retried; empty
	// means 429, 500, 502, 503, 504 and 529 (Anthropic's overloaded).
	// Transport errors and timeouts are always retried.
	OnStatusCodes []int `json:"on_status_codes,omitempty"`

	// UseRetryAfterHeader waits as long as the provider's retry-after-ms
	// or Retry-After header asks, instead of the backoff, within the
	// retry budget.
	UseRetryAfterHeader bool `json:"use_retry_after_header,omitempty"`
}

// CacheConfig enables the response cache. Mode must be "simple". MaxAge
// is in seconds; zero means seven days.
type CacheConfig struct {
	Mode   string `json:"mode"`
	MaxAge int64  `json:"max_age,omitempty"`
}

// Bounds on configs, so that a caller's inline config costs little.
const (
	maxConfigDepth    = 8       // nesting of targets
	maxConfigTargets  = 256     // targets in the whole config
	maxConditionDepth = 8       // nesting of $and / $or
	maxRegexLen       = 1024    // bytes of a $regex pattern
	maxTimeoutMillis  = 3600000 // request_timeout: one hour
	maxAttempts       = 10      // upstream attempts of one request: targets × retries (docs/architecture.md, Trust)
	maxCacheAgeSecs   = 365 * 24 * 3600
	maxGuardrails     = 16 // input or output guardrails of one node
)

// ParseConfig decodes and validates a routing config, bounds included (see
// Condition and RetryConfig). Errors are *Error
// values (400 invalid_config) whose message names the JSON path of the
// offending field, e.g. "targets[1].weight: must be ≥ 0". Their Param is
// empty, since ParseConfig does not know where the JSON came from; the
// gateway sets it to x-gateway-config when it answers a request. Regular
// expressions of conditions are compiled here, once. ParseConfig does not
// check provider slugs or virtual keys, which depend on the gateway.
func ParseConfig(data []byte) (*Config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, configError("", "invalid JSON: "+jsonErrorText(data, err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, configError("", "trailing data after the JSON object")
	}
	v := validator{}
	if err := v.config(&c, "", 0, ""); err != nil {
		return nil, err
	}
	if _, err := c.attempts("", 0); err != nil {
		return nil, err
	}
	return &c, nil
}

// attempts returns the most upstream attempts a request may make through
// the valid node c at path, whose inherited retry attempts are retries:
// its own try and retries for a leaf, the sum over the targets of a
// fallback, the largest for the other modes (one target each). More than
// maxAttempts is an error naming the smallest node that exceeds it.
// (Execution stops at maxAttempts whatever the config: see attemptBudget.)
func (c *Config) attempts(path string, retries int) (int, error) {
	if c.Retry != nil {
		retries = c.Retry.Attempts
	}
	if len(c.Targets) == 0 {
		return 1 + retries, nil // at most 6: retry.attempts is 0 to 5
	}
	n := 0
	for i, t := range c.Targets {
		m, err := t.attempts(index(join(path, "targets"), i), retries)
		if err != nil {
			return 0, err
		}
		switch mode := c.mode(); {
		case mode == ModeFallback:
			n += m
		case mode == ModeSingle:
			if i == 0 {
				n = m
			}
		default:
			n = max(n, m)
		}
	}
	if n > maxAttempts {
		return 0, configError(join(path, "targets"), "a request may make up to "+strconv.Itoa(n)+
			" upstream attempts through these targets and their retries; a config allows at most "+strconv.Itoa(maxAttempts))
	}
	return n, nil
}

// validator walks a config once, counting its targets.
type validator struct {
	targets int
	queries queryBudget // the tests and $regex programs of every condition
}

// config validates the node c at path. vkFrom names the ancestor whose
// virtual_key c inherits ("" when it inherits none): the virtual key holds
// the credential and host of every target under it that names no provider
// of its own, so such a target may not carry a credential or host of its
// own, which would be ignored.
func (v *validator) config(c *Config, path string, depth int, vkFrom string) error {
	if depth > maxConfigDepth {
		return configError(path, "targets nest more than "+strconv.Itoa(maxConfigDepth)+" levels deep")
	}
	mode := c.mode()
	switch mode {
	case ModeSingle, ModeFallback, ModeLoadbalance, ModeConditional:
	default:
		return configError(join(path, "strategy.mode"), "must be single, fallback, loadbalance or conditional")
	}
	if c.Weight != nil && !(*c.Weight >= 0 && !math.IsInf(*c.Weight, 1)) {
		return configError(join(path, "weight"), "must be ≥ 0")
	}
	if c.RequestTimeout < 0 || c.RequestTimeout > maxTimeoutMillis {
		return configError(join(path, "request_timeout"), "must be a positive number of milliseconds, at most "+strconv.Itoa(maxTimeoutMillis))
	}
	if err := c.guardrails(path); err != nil {
		return err
	}
	if c.StreamIdleTimeout < 0 || c.StreamIdleTimeout > maxTimeoutMillis {
		return configError(join(path, "stream_idle_timeout"), "must be a positive number of milliseconds, at most "+strconv.Itoa(maxTimeoutMillis))
	}
	if r := c.Retry; r != nil {
		if r.Attempts < 0 || r.Attempts > 5 {
			return configError(join(path, "retry.attempts"), "must be 0 to 5")
		}
		if err := statusCodes(r.OnStatusCodes, join(path, "retry.on_status_codes")); err != nil {
			return err
		}
	}
	if c.Cache != nil {
		if c.Cache.Mode != "simple" {
			return configError(join(path, "cache.mode"), "must be simple")
		}
		if c.Cache.MaxAge < 0 || c.Cache.MaxAge > maxCacheAgeSecs {
			return configError(join(path, "cache.max_age"), "must be 0 to "+strconv.Itoa(maxCacheAgeSecs)+" seconds")
		}
	}
	if c.VirtualKey != "" {
		switch {
		case c.CustomHost != "":
			return configError(join(path, "custom_host"), "cannot be combined with virtual_key: a stored credential only goes to its own host")
		case c.Provider != "":
			return configError(join(path, "provider"), "cannot be combined with virtual_key, which names its provider")
		case c.APIKey != "":
			return configError(join(path, "api_key"), "cannot be combined with virtual_key, which holds its credential")
		}
		if f := keyPairField(c.HostSettings); f != "" {
			return configError(join(path, f), "cannot be combined with virtual_key, which holds its credential")
		}
		vkFrom = path
		if vkFrom == "" {
			vkFrom = "the top level"
		}
	} else if c.Provider != "" {
		// The node's own provider settings replace the inherited ones as
		// a unit: it no longer inherits a virtual key.
		vkFrom = ""
	} else if vkFrom != "" {
		f := keyPairField(c.HostSettings)
		switch {
		case c.APIKey != "":
			f = "api_key"
		case c.CustomHost != "":
			f = "custom_host"
		}
		if f != "" {
			return configError(join(path, f), "cannot be combined with virtual_key inherited from "+vkFrom)
		}
	}
	if c.CustomHost != "" {
		u, err := url.Parse(c.CustomHost)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return configError(join(path, "custom_host"), "must be an absolute http(s) URL without credentials")
		}
	}
	for i, h := range c.ForwardHeaders {
		if _, err := ParseForwardHeaders(h); err != nil || strings.Contains(h, ",") {
			return configError(index(join(path, "forward_headers"), i), "is not a header name that may be forwarded")
		}
	}
	if s := c.Strategy; s != nil {
		if err := statusCodes(s.OnStatusCodes, join(path, "strategy.on_status_codes")); err != nil {
			return err
		}
		if mode != ModeConditional && (len(s.Conditions) > 0 || s.Default != "") {
			return configError(join(path, "strategy.conditions"), "are only for strategy mode conditional")
		}
		if s.CBConfig != nil {
			if err := s.CBConfig.validate(join(path, "strategy.cb_config")); err != nil {
				return err
			}
		}
		if s.Sticky != nil {
			if err := s.Sticky.validate(join(path, "strategy.sticky"), mode); err != nil {
				return err
			}
		}
	}
	if len(c.Targets) == 0 && mode == ModeConditional {
		// Without targets a node is the single target of its own settings,
		// whatever the mode (fallback or loadbalance over one target is
		// that target), but conditions need targets to name.
		return configError(join(path, "targets"), "must not be empty for strategy mode "+string(mode))
	}
	total := 0.0
	names := make(map[string]bool, len(c.Targets))
	for i, t := range c.Targets {
		tp := index(join(path, "targets"), i)
		if t == nil {
			return configError(tp, "must be an object")
		}
		if v.targets++; v.targets > maxConfigTargets {
			return configError(tp, "a config holds at most "+strconv.Itoa(maxConfigTargets)+" targets")
		}
		if err := v.config(t, tp, depth+1, vkFrom); err != nil {
			return err
		}
		total += t.weight()
		if t.Name != "" {
			if names[t.Name] {
				return configError(join(tp, "name"), "duplicates the name of an earlier target")
			}
			names[t.Name] = true
		}
	}
	if mode == ModeLoadbalance && len(c.Targets) > 0 {
		switch {
		case math.IsInf(total, 1):
			// Each weight is finite, but the draw needs their sum.
			return configError(join(path, "targets"), "weights must sum to a finite number")
		case !(total > 0):
			return configError(join(path, "targets"), "weights must not all be 0")
		}
	}
	if mode == ModeConditional {
		s := c.Strategy
		if len(s.Conditions) == 0 && s.Default == "" {
			return configError(join(path, "strategy.conditions"), "must not be empty for strategy mode conditional")
		}
		for i := range s.Conditions {
			cp := index(join(path, "strategy.conditions"), i)
			cond := &s.Conditions[i]
			if !names[cond.Then] {
				return configError(join(cp, "then"), "must name a target of this config")
			}
			m, err := compileQuery(cond.Query, join(cp, "query"), 0, &v.queries)
			if err != nil {
				return err
			}
			cond.match, cond.params = m, usesParams(cond.Query)
		}
		if s.Default != "" && !names[s.Default] {
			return configError(join(path, "strategy.default"), "must name a target of this config")
		}
	}
	return nil
}

// guardrails checks the shape of the node's guardrails, each a non-empty
// id or an object, and moves the hooks named the other way to them; what
// the ids name is Options.Hooks' to check.
func (c *Config) guardrails(path string) error {
	for _, l := range []struct {
		name string
		refs []json.RawMessage
	}{
		{"input_guardrails", c.InputGuardrails}, {"output_guardrails", c.OutputGuardrails},
		{"before_request_hooks", c.BeforeRequestHooks}, {"after_request_hooks", c.AfterRequestHooks},
	} {
		if len(l.refs) > maxGuardrails {
			return configError(join(path, l.name), "a node attaches at most "+strconv.Itoa(maxGuardrails)+" guardrails of each phase")
		}
		for i, ref := range l.refs {
			switch ref = bytes.TrimSpace(ref); {
			case len(ref) > 0 && ref[0] == '{':
			case len(ref) > 2 && ref[0] == '"':
				var id string
				if json.Unmarshal(ref, &id) != nil || id == "" || len(id) > maxNameBytes {
					return configError(index(join(path, l.name), i), "must be a guardrail id or a guardrail object")
				}
			default:
				return configError(index(join(path, l.name), i), "must be a guardrail id or a guardrail object")
			}
		}
	}
	c.InputGuardrails = append(c.InputGuardrails, c.BeforeRequestHooks...)
	c.OutputGuardrails = append(c.OutputGuardrails, c.AfterRequestHooks...)
	c.BeforeRequestHooks, c.AfterRequestHooks = nil, nil
	if len(c.InputGuardrails) > maxGuardrails || len(c.OutputGuardrails) > maxGuardrails {
		return configError(path, "a node attaches at most "+strconv.Itoa(maxGuardrails)+" guardrails of each phase")
	}
	return nil
}

func statusCodes(codes []int, path string) error {
	for i, code := range codes {
		if code < 100 || code > 599 {
			return configError(index(path, i), "must be an HTTP status code")
		}
	}
	return nil
}

// keyPairField returns the JSON name of the first part of an AWS key pair
// that h holds, or "".
func keyPairField(h HostSettings) string {
	switch {
	case h.AccessKeyID != "":
		return "access_key_id"
	case h.SecretAccessKey != "":
		return "secret_access_key"
	case h.SessionToken != "":
		return "session_token"
	}
	return ""
}

func (c *Config) mode() Mode {
	if c.Strategy == nil || c.Strategy.Mode == "" {
		return ModeSingle
	}
	return c.Strategy.Mode
}

func (c *Config) weight() float64 {
	if c.Weight == nil {
		return 1
	}
	return *c.Weight
}
