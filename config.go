package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
)

// Config is a routing config, saved under an id or sent inline in
// x-gateway-config. The top level and every target share this shape:
// targets nest, and a target inherits the settings it lacks from its parent.
type Config struct {
	Name     string    `json:"name,omitempty"`
	Strategy *Strategy `json:"strategy,omitempty"`
	Targets  []*Config `json:"targets,omitempty"`

	// Provider selection.
	Provider   string `json:"provider,omitempty"`
	VirtualKey string `json:"virtual_key,omitempty"`
	APIKey     string `json:"api_key,omitempty"`
	CustomHost string `json:"custom_host,omitempty"`
	HostSettings

	// Weight is the share of a loadbalance parent's traffic; nil means 1.
	Weight *float64 `json:"weight,omitempty"`

	OverrideParams map[string]any `json:"override_params,omitempty"`
	Retry          *RetryConfig   `json:"retry,omitempty"`
	Cache          *CacheConfig   `json:"cache,omitempty"`
	RequestTimeout int64          `json:"request_timeout,omitempty"` // milliseconds
	ForwardHeaders []string       `json:"forward_headers,omitempty"`
}

// Strategy says how a config node picks among its targets.
type Strategy struct {
	Mode          string      `json:"mode"`
	OnStatusCodes []int       `json:"on_status_codes,omitempty"`
	Conditions    []Condition `json:"conditions,omitempty"`
	Default       string      `json:"default,omitempty"`
}

// Strategy modes.
const (
	ModeSingle      = "single"
	ModeFallback    = "fallback"
	ModeLoadbalance = "loadbalance"
	ModeConditional = "conditional"
)

// Condition routes to the target named Then when Query matches.
type Condition struct {
	Query map[string]any `json:"query"`
	Then  string         `json:"then"`
}

// RetryConfig says how often an attempt is retried. Attempts is the number
// of retries after the first try.
type RetryConfig struct {
	Attempts            int   `json:"attempts"`
	OnStatusCodes       []int `json:"on_status_codes,omitempty"`
	UseRetryAfterHeader bool  `json:"use_retry_after_header,omitempty"`
}

// CacheConfig enables the response cache. MaxAge is in seconds; zero means
// seven days.
type CacheConfig struct {
	Mode   string `json:"mode"`
	MaxAge int64  `json:"max_age,omitempty"`
}

// ParseConfig decodes and validates a routing config. Errors are *Error
// values (400 invalid_config) whose message names the JSON path of the
// offending field, e.g. "targets[1].weight: must be ≥ 0".
func ParseConfig(data []byte) (*Config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, configError("", "invalid JSON: "+jsonErrorText(err))
	}
	if dec.More() {
		return nil, configError("", "trailing data after the JSON object")
	}
	if err := c.validate(""); err != nil {
		return nil, err
	}
	return &c, nil
}

func jsonErrorText(err error) string {
	switch e := err.(type) {
	case *json.UnmarshalTypeError:
		return e.Field + ": must be " + e.Type.String()
	default:
		return err.Error()
	}
}

func configError(path, msg string) *Error {
	if path != "" {
		msg = path + ": " + msg
	}
	return &Error{Status: http.StatusBadRequest, Type: TypeInvalidRequest, Code: CodeInvalidConfig, Param: HeaderConfig, Message: "invalid config: " + msg}
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func (c *Config) validate(path string) error {
	mode := ModeSingle
	if c.Strategy != nil {
		mode = c.Strategy.Mode
		switch mode {
		case ModeSingle, ModeFallback, ModeLoadbalance, ModeConditional:
		default:
			return configError(join(path, "strategy.mode"), "must be single, fallback, loadbalance or conditional")
		}
	}
	if c.Weight != nil && !(*c.Weight >= 0) {
		return configError(join(path, "weight"), "must be ≥ 0")
	}
	if c.RequestTimeout < 0 {
		return configError(join(path, "request_timeout"), "must be a positive number of milliseconds")
	}
	if c.Retry != nil && (c.Retry.Attempts < 0 || c.Retry.Attempts > 5) {
		return configError(join(path, "retry.attempts"), "must be 0 to 5")
	}
	if c.Cache != nil {
		if c.Cache.Mode != "simple" {
			return configError(join(path, "cache.mode"), "must be simple")
		}
		if c.Cache.MaxAge < 0 {
			return configError(join(path, "cache.max_age"), "must be ≥ 0")
		}
	}
	if c.VirtualKey != "" && c.CustomHost != "" {
		return configError(join(path, "custom_host"), "cannot be combined with virtual_key: a stored credential only goes to its own host")
	}
	for i, h := range c.ForwardHeaders {
		if _, err := ParseForwardHeaders(h); err != nil {
			return configError(fmt.Sprintf("%s[%d]", join(path, "forward_headers"), i), "cannot be forwarded")
		}
	}
	if len(c.Targets) == 0 && mode != ModeSingle {
		return configError(join(path, "targets"), "must not be empty for strategy mode "+mode)
	}
	total := 0.0
	for i, t := range c.Targets {
		if t == nil {
			return configError(fmt.Sprintf("%s[%d]", join(path, "targets"), i), "must be an object")
		}
		if err := t.validate(fmt.Sprintf("%s[%d]", join(path, "targets"), i)); err != nil {
			return err
		}
		total += t.weight()
	}
	if mode == ModeLoadbalance && total == 0 {
		return configError(join(path, "targets"), "weights must not all be 0")
	}
	return nil
}

func (c *Config) weight() float64 {
	if c.Weight == nil {
		return 1
	}
	return *c.Weight
}
