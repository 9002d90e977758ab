package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Config is a routing config, saved under an id or sent inline in
// x-gateway-config. The top level and every target share this shape:
// targets nest, and a target inherits the retry, cache, request_timeout,
// custom_host and forward_headers settings it lacks from its parent, and
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
}

// Strategy says how a config node picks among its targets. An empty Mode
// means ModeSingle.
type Strategy struct {
	Mode string `json:"mode"`

	// OnStatusCodes are the provider statuses on which a fallback moves to
	// the next target; empty means every non-2xx status. Transport errors
	// and timeouts always move on.
	OnStatusCodes []int `json:"on_status_codes,omitempty"`

	// Conditions and Default drive the conditional mode: the first
	// condition whose query matches names the target, else Default does.
	Conditions []Condition `json:"conditions,omitempty"`
	Default    string      `json:"default,omitempty"`
}

// Strategy modes.
const (
	ModeSingle      = "single"      // the first target
	ModeFallback    = "fallback"    // the targets in order, until one answers
	ModeLoadbalance = "loadbalance" // one target, drawn by weight
	ModeConditional = "conditional" // the target named by the first matching condition
)

// Condition routes to the target named Then when Query matches. Query maps
// fields to tests: a field is "metadata.<key>" (the request's metadata)
// or "params.<field>" (a top-level field of the JSON request body); a test
// is a value (equality) or an object of operators $eq, $ne, $gt, $gte,
// $lt, $lte, $in, $nin, $regex, all of which must hold; an object mixing
// operators with other keys is refused. The keys $and and $or take arrays
// of queries. Every entry of a query must match.
type Condition struct {
	Query map[string]any `json:"query"`
	Then  string         `json:"then"`

	match  matcher // compiled by ParseConfig
	params bool    // the query looks at params.*, so the body must be read
}

// RetryConfig says how often an attempt is retried. Attempts is the number
// of retries after the first try, 0 to 5.
type RetryConfig struct {
	Attempts int `json:"attempts"`

	// OnStatusCodes are the provider statuses that are retried; empty
	// means 429, 500, 502, 503 and 504. Transport errors and timeouts are
	// always retried.
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
	maxCacheAgeSecs   = 365 * 24 * 3600
)

// ParseConfig decodes and validates a routing config. Errors are *Error
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
	return &c, nil
}

func jsonErrorText(data []byte, err error) string {
	switch e := err.(type) {
	case *json.UnmarshalTypeError:
		if e.Field == "" {
			return "must be an object"
		}
		field := e.Field // dotted, without the indexes of targets
		if p, ok := errorPath(data, e.Offset, ""); ok {
			field = p
		}
		return field + ": must be " + jsonTypeName(e.Type.String())
	default:
		msg := strings.TrimPrefix(err.Error(), "json: ")
		if name, ok := strings.CutPrefix(msg, "unknown field "); ok {
			if n, err := strconv.Unquote(name); err == nil {
				if p, ok := errorPath(data, -1, n); ok && p != "" {
					return p + ": unknown field " + quoteShort(n)
				}
			}
		}
		return msg
	}
}

// errorPath returns the JSON path, as configError writes it, of what a
// decode of data into Config stumbled on: the value that ends at offset
// (for a composite value, its opening bracket), or the object holding the
// first key named unknown that Config's schema does not let it have. It
// reports false when it finds neither.
func errorPath(data []byte, offset int64, unknown string) (string, bool) {
	f := pathFinder{dec: json.NewDecoder(bytes.NewReader(data)), offset: offset, unknown: unknown}
	p, found := f.value(reflect.TypeFor[Config](), "")
	return p, found && !f.ended
}

type pathFinder struct {
	dec     *json.Decoder
	offset  int64
	unknown string
	ended   bool // the input ended, or is not JSON, before a find
}

// value reads one value expected of type t (nil: anything goes) at path;
// it reports true, with the path, once it reaches what it looks for, or
// when the input ends.
func (f *pathFinder) value(t reflect.Type, path string) (string, bool) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := f.dec.Token()
	if err != nil {
		f.ended = true
		return "", true
	}
	if f.dec.InputOffset() == f.offset {
		return path, true
	}
	switch tok {
	case json.Delim('{'):
		for f.dec.More() {
			kt, err := f.dec.Token()
			if err != nil {
				f.ended = true
				return "", true
			}
			k, _ := kt.(string)
			var vt reflect.Type
			switch {
			case t == nil:
			case t.Kind() == reflect.Struct:
				var ok bool
				if vt, ok = structField(t, k); !ok && k == f.unknown {
					return path, true
				}
			case t.Kind() == reflect.Map:
				vt = t.Elem()
			}
			if p, done := f.value(vt, join(path, k)); done {
				return p, true
			}
		}
		f.dec.Token()
	case json.Delim('['):
		var et reflect.Type
		if t != nil && t.Kind() == reflect.Slice {
			et = t.Elem()
		}
		for i := 0; f.dec.More(); i++ {
			if p, done := f.value(et, index(path, i)); done {
				return p, true
			}
		}
		f.dec.Token()
	}
	return "", false
}

// structField returns the type of the field of struct t that encoding/json
// decodes key into.
func structField(t reflect.Type, key string) (reflect.Type, bool) {
	for _, sf := range reflect.VisibleFields(t) {
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if sf.Anonymous || !sf.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if strings.EqualFold(name, key) {
			return sf.Type, true
		}
	}
	return nil, false
}

func jsonTypeName(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case strings.HasPrefix(goType, "map["), strings.HasPrefix(goType, "gateway."), strings.HasPrefix(goType, "*gateway."):
		return "an object"
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "a boolean"
	case strings.HasPrefix(goType, "int"):
		return "an integer"
	case strings.HasPrefix(goType, "float"), strings.HasPrefix(goType, "*float"):
		return "a number"
	}
	return goType
}

func configError(path, msg string) *Error {
	if path != "" {
		msg = path + ": " + msg
	}
	return &Error{Status: http.StatusBadRequest, Type: TypeInvalidRequest, Code: CodeInvalidConfig, Message: "invalid config: " + msg}
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// validator walks a config once, counting its targets.
type validator struct{ targets int }

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
	}
	if len(c.Targets) == 0 && mode == ModeConditional {
		// Without targets a node is the single target of its own settings,
		// whatever the mode (fallback or loadbalance over one target is
		// that target), but conditions need targets to name.
		return configError(join(path, "targets"), "must not be empty for strategy mode "+mode)
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
			m, err := compileQuery(cond.Query, join(cp, "query"), 0)
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

func (c *Config) mode() string {
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

// plainValue returns a copy of a query operand with its json.Numbers (kept
// by ParseConfig so that numbers marshal back as written) turned into
// float64, as request bodies decode. A number that does not fit a float64
// is an error.
func plainValue(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return nil, fmt.Errorf("number %s is out of range", quoteShort(string(x)))
		}
		return f, nil
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			n, err := plainValue(e)
			if err != nil {
				return nil, err
			}
			m[k] = n
		}
		return m, nil
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			n, err := plainValue(e)
			if err != nil {
				return nil, err
			}
			l[i] = n
		}
		return l, nil
	}
	return v, nil
}

// matchInput is what conditions look at: the request's metadata and the
// top-level fields of its JSON body (nil when the body is not a JSON
// object or was not read).
type matchInput struct {
	metadata map[string]string
	params   map[string]any
}

// matcher is a compiled query.
type matcher interface {
	match(in *matchInput) bool
}

type allOf []matcher

func (m allOf) match(in *matchInput) bool {
	for _, s := range m {
		if !s.match(in) {
			return false
		}
	}
	return true
}

type anyOf []matcher

func (m anyOf) match(in *matchInput) bool {
	for _, s := range m {
		if s.match(in) {
			return true
		}
	}
	return false
}

// fieldTest is one operator applied to one field.
type fieldTest struct {
	params bool   // params.* rather than metadata.*
	key    string // the metadata key or body field
	op     string
	arg    any
	re     *regexp.Regexp
}

func (f *fieldTest) match(in *matchInput) bool {
	var v any
	var ok bool
	if f.params {
		v, ok = in.params[f.key]
	} else {
		var s string
		s, ok = in.metadata[f.key]
		v = s
	}
	switch f.op {
	case "$eq":
		return ok && equalValue(v, f.arg)
	case "$ne":
		return !ok || !equalValue(v, f.arg)
	case "$in", "$nin":
		found := false
		if ok {
			for _, a := range f.arg.([]any) {
				if equalValue(v, a) {
					found = true
					break
				}
			}
		}
		return found == (f.op == "$in")
	case "$regex":
		s, isString := v.(string)
		return ok && isString && f.re.MatchString(s)
	}
	if !ok {
		return false
	}
	c, comparable := compareValue(v, f.arg)
	if !comparable {
		return false
	}
	switch f.op {
	case "$gt":
		return c > 0
	case "$gte":
		return c >= 0
	case "$lt":
		return c < 0
	default: // $lte
		return c <= 0
	}
}

// equalValue compares a field's value with a query's operand. Metadata
// values are strings, so a numeric or boolean operand compares with the
// string's meaning.
func equalValue(v, arg any) bool {
	if s, ok := v.(string); ok {
		switch a := arg.(type) {
		case string:
			return s == a
		case float64:
			f, err := strconv.ParseFloat(s, 64)
			return err == nil && f == a
		case bool:
			return s == strconv.FormatBool(a)
		}
		return false
	}
	return reflect.DeepEqual(v, arg)
}

// compareValue orders a field's value against an operand: numbers
// numerically (a numeric metadata string counts as its number), strings
// lexically. Other pairs do not compare.
func compareValue(v, arg any) (int, bool) {
	switch a := arg.(type) {
	case float64:
		var f float64
		switch x := v.(type) {
		case float64:
			f = x
		case string:
			var err error
			if f, err = strconv.ParseFloat(x, 64); err != nil {
				return 0, false
			}
		default:
			return 0, false
		}
		switch {
		case f < a:
			return -1, true
		case f > a:
			return 1, true
		case f == a:
			return 0, true
		}
		return 0, false // NaN
	case string:
		s, ok := v.(string)
		if !ok {
			return 0, false
		}
		return strings.Compare(s, a), true
	}
	return 0, false
}

// usesParams reports whether a valid query looks at a params.* field.
func usesParams(q map[string]any) bool {
	for k, v := range q {
		if strings.HasPrefix(k, "params.") {
			return true
		}
		if list, ok := v.([]any); ok && (k == "$and" || k == "$or") {
			for _, e := range list {
				if sq, ok := e.(map[string]any); ok && usesParams(sq) {
					return true
				}
			}
		}
	}
	return false
}

// compileQuery validates a query object and compiles it.
func compileQuery(q map[string]any, path string, depth int) (matcher, error) {
	if depth > maxConditionDepth {
		return nil, configError(path, "$and and $or nest more than "+strconv.Itoa(maxConditionDepth)+" levels deep")
	}
	if len(q) == 0 {
		return nil, configError(path, "must be a non-empty object")
	}
	var out allOf
	for _, k := range sortedKeys(q) {
		v := q[k]
		kp := join(path, k)
		switch {
		case k == "$and" || k == "$or":
			list, ok := v.([]any)
			if !ok || len(list) == 0 {
				return nil, configError(kp, "must be a non-empty array of queries")
			}
			subs := make([]matcher, len(list))
			for i, e := range list {
				sq, ok := e.(map[string]any)
				if !ok {
					return nil, configError(index(kp, i), "must be a query object")
				}
				m, err := compileQuery(sq, index(kp, i), depth+1)
				if err != nil {
					return nil, err
				}
				subs[i] = m
			}
			if k == "$and" {
				out = append(out, allOf(subs))
			} else {
				out = append(out, anyOf(subs))
			}
		case strings.HasPrefix(k, "$"):
			return nil, configError(kp, "unknown operator; use $and or $or, or a metadata.* or params.* field")
		default:
			tests, err := compileField(k, v, kp)
			if err != nil {
				return nil, err
			}
			out = append(out, tests...)
		}
	}
	if len(out) == 1 {
		return out[0], nil
	}
	return out, nil
}

func compileField(k string, v any, path string) ([]matcher, error) {
	f := fieldTest{}
	switch {
	case strings.HasPrefix(k, "metadata.") && len(k) > len("metadata."):
		f.key = k[len("metadata."):]
	case strings.HasPrefix(k, "params.") && len(k) > len("params."):
		f.params, f.key = true, k[len("params."):]
	default:
		return nil, configError(path, "field must be metadata.<key> or params.<field>")
	}
	// An object all of whose keys start with $ is a set of operators; one
	// without such keys is a value to compare for equality. An object with
	// both is refused: read as a value it would never match.
	ops, _ := v.(map[string]any)
	var named []string
	for _, k := range sortedKeys(ops) {
		if strings.HasPrefix(k, "$") {
			named = append(named, k)
		}
	}
	if len(named) > 0 && len(named) < len(ops) {
		return nil, configError(path, "cannot mix operators ("+strings.Join(named, ", ")+") with other keys")
	}
	if len(named) == 0 {
		arg, err := plainValue(v)
		if err != nil {
			return nil, configError(path, err.Error())
		}
		f.op, f.arg = "$eq", arg
		return []matcher{&f}, nil
	}
	var out []matcher
	for _, op := range sortedKeys(ops) {
		t := f
		arg, err := plainValue(ops[op])
		if err != nil {
			return nil, configError(join(path, op), err.Error())
		}
		t.op, t.arg = op, arg
		op := join(path, op)
		switch t.op {
		case "$eq", "$ne":
		case "$gt", "$gte", "$lt", "$lte":
			switch t.arg.(type) {
			case float64, string:
			default:
				return nil, configError(op, "must be a number or a string")
			}
		case "$in", "$nin":
			if _, ok := t.arg.([]any); !ok {
				return nil, configError(op, "must be an array")
			}
		case "$regex":
			s, ok := t.arg.(string)
			if !ok || len(s) > maxRegexLen {
				return nil, configError(op, "must be a regular expression of at most "+strconv.Itoa(maxRegexLen)+" bytes")
			}
			re, err := regexp.Compile(s)
			if err != nil {
				return nil, configError(op, "must be a valid regular expression (RE2 syntax)")
			}
			t.re = re
		default:
			return nil, configError(op, "unknown operator; use $eq $ne $gt $gte $lt $lte $in $nin $regex")
		}
		out = append(out, &t)
	}
	return out, nil
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
