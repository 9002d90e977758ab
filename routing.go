package gateway

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// selectPlan applies the provider-selection rules to the request: exactly
// one of config, virtual key, custom host + provider, provider + token.
func (g *Gateway) selectPlan(ctx context.Context, id Identity, o *RequestOptions) (*planNode, error) {
	switch {
	case o.Config != "":
		if o.VirtualKey != "" {
			return nil, badRequest(CodeAmbiguousProvider, HeaderVirtualKey, "send either "+HeaderConfig+" or "+HeaderVirtualKey+", not both")
		}
		return g.configPlan(ctx, id, o, o.Config)
	case o.VirtualKey != "":
		if o.Provider != "" || o.CustomHost != "" {
			return nil, badRequest(CodeAmbiguousProvider, HeaderVirtualKey, "a virtual key names its provider and host: do not send "+HeaderProvider+" or "+HeaderCustomHost+" beside it")
		}
		t, err := g.virtualKeyTarget(ctx, id, o.VirtualKey, HeaderVirtualKey)
		if err != nil {
			return nil, err
		}
		t.Host.mergeUnderStored(o.Host)
		t.forwardHeaders = o.ForwardHeaders
		return &planNode{mode: ModeSingle, target: t}, nil
	case o.CustomHost != "":
		if o.Provider == "" {
			return nil, badRequest(CodeMissingProvider, HeaderProvider, HeaderCustomHost+" needs "+HeaderProvider+" to name the kind of provider at that host")
		}
		if _, err := g.provider(o.Provider, HeaderProvider); err != nil {
			return nil, err
		}
		u, err := g.guard.checkURL(o.CustomHost, HeaderCustomHost)
		if err != nil {
			return nil, err
		}
		return &planNode{mode: ModeSingle, target: &routedTarget{Target: Target{Provider: o.Provider, BaseURL: u, CustomHost: true, APIKey: o.Token, Host: o.Host}, forwardHeaders: o.ForwardHeaders}}, nil
	case o.Provider != "":
		if _, err := g.provider(o.Provider, HeaderProvider); err != nil {
			return nil, err
		}
		return &planNode{mode: ModeSingle, target: &routedTarget{Target: Target{Provider: o.Provider, APIKey: o.Token, Host: o.Host}, forwardHeaders: o.ForwardHeaders}}, nil
	case id.DefaultConfig != "":
		return g.configPlan(ctx, id, o, id.DefaultConfig)
	}
	return nil, badRequest(CodeMissingProvider, "", "no provider selected: send "+HeaderVirtualKey+", "+HeaderConfig+", or "+HeaderProvider+" with Authorization")
}

func (g *Gateway) provider(slug, param string) (Provider, error) {
	if p, ok := g.providers[slug]; ok {
		return p, nil
	}
	return nil, badRequest(CodeUnknownProvider, param, "unknown provider "+quoteShort(slug))
}

// quoteShort quotes s for an error message, cut to a sane length.
func quoteShort(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// virtualKeyTarget returns the plan leaf of a virtual key, its routing
// settings empty.
func (g *Gateway) virtualKeyTarget(ctx context.Context, id Identity, slug, param string) (*routedTarget, error) {
	vk, err := g.lookupVirtualKey(ctx, id, slug)
	if errors.Is(err, ErrNotFound) {
		return nil, badRequest(CodeUnknownVirtualKey, param, "unknown virtual key "+quoteShort(slug))
	} else if err != nil {
		return nil, err
	}
	if vk.NamedOnly && param == HeaderConfig {
		return nil, badRequest(CodeUnknownVirtualKey, param, "virtual key "+quoteShort(slug)+
			" has limits of its own: name it in "+HeaderVirtualKey+" or as @"+slug+"/{model}, not in a config")
	}
	return g.keyTarget(ctx, vk, slug, param)
}

// lookupVirtualKey finds the virtual key slug for a caller of id's
// workspace: ErrNotFound for another workspace's key too, so that no
// caller learns it exists (docs/architecture.md, Trust).
func (g *Gateway) lookupVirtualKey(ctx context.Context, id Identity, slug string) (*VirtualKey, error) {
	if g.opts.VirtualKeys == nil {
		return nil, ErrNotFound
	}
	vk, err := findVirtualKey(ctx, g.opts.VirtualKeys, id.WorkspaceID, slug)
	if err == nil && vk.WorkspaceID != "" && vk.WorkspaceID != id.WorkspaceID {
		return nil, ErrNotFound
	}
	return vk, err
}

// keyTarget returns the plan leaf of vk, found under slug.
func (g *Gateway) keyTarget(ctx context.Context, vk *VirtualKey, slug, param string) (*routedTarget, error) {
	if err := g.checkVirtualKeyRoute(ctx, vk, param); err != nil {
		return nil, err
	}
	if _, err := g.provider(vk.Provider, param); err != nil {
		return nil, err
	}
	t := &routedTarget{Target: Target{Provider: vk.Provider, APIKey: vk.APIKey, VirtualKey: vk.Slug, Host: vk.HostSettings}, workspace: vk.WorkspaceID,
		prices: vk.Prices}
	if vk.BaseURL != "" {
		if vk.Tenant {
			// A tenant's host is guarded like a caller's: checked here,
			// and its names resolved and checked at every dial.
			u, err := g.guard.checkURL(vk.BaseURL, param)
			if err != nil {
				var ge *Error
				if errors.As(err, &ge) {
					c := *ge
					c.Message = "virtual key " + quoteShort(slug) + " base_url: " + ge.Message
					return nil, &c
				}
				return nil, err
			}
			t.BaseURL, t.CustomHost = u, true
			return t, nil
		}
		u, err := g.baseURL(vk.BaseURL)
		if err != nil {
			return nil, &Error{Status: http.StatusInternalServerError, Type: TypeGateway, Code: CodeInternal,
				Message: "virtual key " + quoteShort(slug) + " has an invalid base_url"}
		}
		t.BaseURL = u
	}
	return t, nil
}

// maxBaseURLs bounds the parsed base URLs of virtual keys kept for reuse.
const maxBaseURLs = 4096

// baseURL parses an operator's base URL (a virtual key's), which must be an
// absolute http(s) URL. Parsed URLs are kept for the next request, and
// shared: nothing changes a Target's BaseURL (ProxyRequest.SetURL copies
// it).
func (g *Gateway) baseURL(raw string) (*url.URL, error) {
	if u, ok := g.baseURLs.Get(raw); ok {
		return u, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("gateway: not an absolute http(s) URL")
	}
	g.baseURLs.Add(raw, u)
	return u, nil
}

// maxCachedInlineConfig is the longest inline config, in bytes, whose
// parsed form is kept for the next request that sends it.
const maxCachedInlineConfig = 16 << 10

// configPlan resolves a saved config id or an inline JSON config.
func (g *Gateway) configPlan(ctx context.Context, id Identity, o *RequestOptions, ref string) (*planNode, error) {
	var cfg *Config
	trusted := true     // a saved config: its credentials are stored ones
	tenantHosts := true // its custom hosts are guarded: a caller's or a tenant's
	if strings.HasPrefix(ref, "{") {
		trusted = false
		key := sha256.Sum256([]byte(ref))
		if c, ok := g.inlineConfigs.Get(key); ok {
			cfg = c
		} else {
			c, err := ParseConfig([]byte(ref))
			if err != nil {
				return nil, fromConfigHeader(err)
			}
			if len(ref) <= maxCachedInlineConfig {
				// Larger ones are parsed each time, so that callers cannot
				// pin more than about 1,024 × 16 KiB of parsed configs.
				g.inlineConfigs.Add(key, c)
			}
			cfg = c
		}
	} else {
		var err error
		if cfg, tenantHosts, err = g.savedConfigHosts(ctx, id, ref); err != nil {
			return nil, err
		}
	}
	inh := inherited{
		provider:       o.Provider,
		callerProvider: o.Provider != "",
		callerToken:    o.Token,
		callerHost:     o.Host,
		hostStored:     trusted,
		tenantHosts:    tenantHosts,
		forwardHeaders: o.ForwardHeaders,
	}
	if o.CustomHost != "" {
		inh.customHost, inh.customHostParam, inh.customHostTrusted, inh.customHostCaller = o.CustomHost, HeaderCustomHost, false, true
	}
	n, err := g.buildNode(ctx, id, cfg, "config", inh, trusted)
	if err == nil && trusted {
		n.config = ref // a saved config (an inline one is not trusted)
	}
	return n, err
}

// savedConfig returns the saved config ref of the caller's workspace (or
// of no workspace).
func (g *Gateway) savedConfig(ctx context.Context, id Identity, ref string) (*Config, error) {
	cfg, _, err := g.savedConfigHosts(ctx, id, ref)
	return cfg, err
}

// savedConfigHosts is savedConfig, also reporting whether the config's
// custom hosts were written by a tenant (SavedConfig.Tenant).
func (g *Gateway) savedConfigHosts(ctx context.Context, id Identity, ref string) (*Config, bool, error) {
	if g.opts.Configs == nil {
		return nil, false, unknownConfig(ref)
	}
	sc, err := findConfig(ctx, g.opts.Configs, id.WorkspaceID, ref)
	// Another workspace's config answers as an unknown one: no existence
	// oracle (docs/architecture.md, Trust).
	if errors.Is(err, ErrNotFound) || err == nil && sc.WorkspaceID != "" && sc.WorkspaceID != id.WorkspaceID {
		return nil, false, unknownConfig(ref)
	} else if err != nil {
		return nil, false, err
	}
	cfg, err := g.savedConfigs.parse(sc)
	if err != nil {
		return nil, false, fromConfigHeader(err)
	}
	return cfg, sc.Tenant, nil
}

// fromConfigHeader returns a ParseConfig error for a config the request
// named in x-gateway-config, with that header as its Param. ParseConfig
// leaves Param empty, so that a config loaded from elsewhere (a store
// file) is not blamed on a header.
func fromConfigHeader(err error) error {
	var ge *Error
	if !errors.As(err, &ge) || ge.Param != "" {
		return err
	}
	c := *ge
	c.Param = HeaderConfig
	return &c
}

// unknownConfig is built only when needed: a hot request with a known id
// allocates nothing to find its config.
func unknownConfig(ref string) error {
	return badRequest(CodeUnknownConfig, HeaderConfig, "unknown config "+quoteShort(ref))
}

// inherited holds what a config node passes down to its targets.
type inherited struct {
	provider          string
	callerProvider    bool   // provider is the caller's x-gateway-provider
	apiKey            string // from the config; a stored credential when the config is saved
	apiKeyStored      bool
	callerToken       string       // the caller's own bearer token
	callerHost        HostSettings // the caller's x-gateway-host* headers
	hostStored        bool         // host comes from a saved config: its key pair is a stored credential
	tenantHosts       bool         // the config's custom hosts are a tenant's or a caller's, not the operator's
	virtualKey        string
	customHost        string
	customHostParam   string
	customHostTrusted bool // customHost is the operator's: dialed without the guard
	customHostCaller  bool // customHost is the caller's (header or inline config): stored credentials never go there
	host              HostSettings
	forwardHeaders    []string
	overrides         map[string]any
	retry             *RetryConfig
	cache             *CacheConfig
	timeout           time.Duration
	idleTimeout       time.Duration
	hookIn, hookOut   []HookRef // the guardrails of the nodes between the top and the target
	breaker           *BreakerConfig
}

func (g *Gateway) buildNode(ctx context.Context, id Identity, c *Config, path string, inh inherited, trusted bool) (*planNode, error) {
	// A node's own provider settings replace the inherited ones as a unit,
	// so that an inherited credential never travels to another host.
	if c.VirtualKey != "" || c.Provider != "" {
		inh.provider, inh.virtualKey, inh.apiKey, inh.apiKeyStored = c.Provider, c.VirtualKey, c.APIKey, trusted && c.APIKey != ""
		inh.callerProvider = false
		if c.VirtualKey != "" {
			inh.customHost = ""
		}
	} else if c.APIKey != "" {
		// ParseConfig refuses an api_key under an inherited virtual key,
		// which would override it, so this key goes with a provider.
		inh.apiKey, inh.apiKeyStored = c.APIKey, trusted
	}
	if c.CustomHost != "" {
		inh.customHost, inh.customHostParam = c.CustomHost, HeaderConfig
		inh.customHostTrusted, inh.customHostCaller = trusted && !inh.tenantHosts, !trusted
	}
	own := c.HostSettings
	own.merge(inh.host)
	inh.host = own
	if len(c.ForwardHeaders) > 0 {
		inh.forwardHeaders = canonicalNames(c.ForwardHeaders)
	}
	if len(c.OverrideParams) > 0 {
		m := make(map[string]any, len(inh.overrides)+len(c.OverrideParams))
		for k, v := range inh.overrides {
			m[k] = v
		}
		for k, v := range c.OverrideParams {
			m[k] = v
		}
		inh.overrides = m
	}
	if c.Retry != nil {
		inh.retry = c.Retry
	}
	if c.Cache != nil {
		inh.cache = c.Cache
	}
	if c.StreamIdleTimeout > 0 {
		inh.idleTimeout = time.Duration(c.StreamIdleTimeout) * time.Millisecond
	}
	if c.RequestTimeout > 0 {
		inh.timeout = time.Duration(c.RequestTimeout) * time.Millisecond
	}

	n := &planNode{mode: c.mode(), name: c.Name, weight: c.weight()}
	if path == "config" {
		n.input, n.output = hookRefs(nil, c.InputGuardrails, "input_guardrails"), hookRefs(nil, c.OutputGuardrails, "output_guardrails")
		n.hooked = len(n.input) > 0 || len(n.output) > 0
	} else if len(c.InputGuardrails) > 0 || len(c.OutputGuardrails) > 0 {
		at := strings.TrimPrefix(path, "config.") + "."
		inh.hookIn = hookRefs(slices.Clip(inh.hookIn), c.InputGuardrails, at+"input_guardrails")
		inh.hookOut = hookRefs(slices.Clip(inh.hookOut), c.OutputGuardrails, at+"output_guardrails")
	}
	if s := c.Strategy; s != nil {
		n.onStatusCodes, n.conditions, n.def = s.OnStatusCodes, s.Conditions, s.Default
		if s.CBConfig != nil {
			inh.breaker = s.CBConfig
		}
		if s.Sticky != nil {
			n.sticky = s.Sticky.Key
		}
	}
	if len(c.Targets) > 0 {
		n.children = make([]*planNode, len(c.Targets))
		for i, ct := range c.Targets {
			child, err := g.buildNode(ctx, id, ct, fmt.Sprintf("%s.targets[%d]", path, i), inh, trusted)
			if err != nil {
				return nil, err
			}
			n.children[i] = child
			n.hooked = n.hooked || child.hooked
		}
		return n, nil
	}
	t, err := g.leafTarget(ctx, id, inh, path)
	if err != nil {
		return nil, err
	}
	n.target = t
	t.hookIn, t.hookOut = inh.hookIn, inh.hookOut
	n.hooked = n.hooked || len(t.hookIn) > 0 || len(t.hookOut) > 0
	return n, nil
}

func (g *Gateway) leafTarget(ctx context.Context, id Identity, inh inherited, path string) (*routedTarget, error) {
	var t *routedTarget
	switch {
	case inh.virtualKey != "":
		vt, err := g.virtualKeyTarget(ctx, id, inh.virtualKey, HeaderConfig)
		if err != nil {
			return nil, err
		}
		vt.Host.mergeUnderStored(inh.host)
		vt.Host.mergeUnderStored(inh.callerHost)
		t = vt
	case inh.provider != "":
		if _, err := g.provider(inh.provider, HeaderConfig); err != nil {
			return nil, err
		}
		if inh.callerProvider && (inh.apiKeyStored || inh.hostStored && hasKeyPair(inh.host)) {
			// A stored credential goes only to the provider its config
			// names, never to one the caller picks.
			return nil, badRequest(CodeMissingProvider, HeaderConfig, path+" holds a stored credential but names no provider; set provider beside it")
		}
		t = &routedTarget{Target: Target{Provider: inh.provider, APIKey: inh.apiKey, Host: inh.host}}
		if t.APIKey == "" {
			// The caller's own token fills in a target without credentials.
			t.APIKey = inh.callerToken
		}
		if inh.customHost != "" {
			var u *url.URL
			var err error
			if inh.customHostTrusted {
				// An operator's saved config is trusted like a virtual key.
				u, err = url.Parse(inh.customHost)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return nil, fromConfigHeader(configError(path+".custom_host", "must be an absolute http(s) URL"))
				}
			} else if u, err = g.guard.checkURL(inh.customHost, inh.customHostParam); err != nil {
				return nil, err
			}
			t.BaseURL = u
			// A caller's or a tenant's host is dialed through the guard.
			t.CustomHost = !inh.customHostTrusted
			if inh.customHostCaller && inh.apiKeyStored {
				// A saved config's credential never follows a caller's host.
				t.APIKey = inh.callerToken
			}
			if inh.customHostCaller && inh.hostStored {
				// Nor does its AWS key pair or session token: a request
				// signed with them is as good as the key.
				t.Host.AccessKeyID, t.Host.SecretAccessKey, t.Host.SessionToken = "", "", ""
			}
		}
		if inh.apiKeyStored && t.APIKey == inh.apiKey {
			t.Host.mergeUnderStored(inh.callerHost)
		} else {
			t.Host.merge(inh.callerHost)
		}
	default:
		return nil, badRequest(CodeMissingProvider, HeaderConfig, path+" names no provider: set provider or virtual_key, or send "+HeaderProvider)
	}
	t.Index = path
	t.forwardHeaders = inh.forwardHeaders
	t.overrideParams = inh.overrides
	t.retry = inh.retry
	t.cache = inh.cache
	t.requestTimeout = inh.timeout
	t.idleTimeout = inh.idleTimeout
	if inh.breaker != nil {
		t.breaker, t.breakerKey = inh.breaker, breakerKey(&t.Target, t.workspace)
	}
	return t, nil
}

// hasKeyPair reports whether h holds any part of an AWS key pair.
func hasKeyPair(h HostSettings) bool {
	return h.AccessKeyID != "" || h.SecretAccessKey != "" || h.SessionToken != ""
}

func canonicalNames(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = http.CanonicalHeaderKey(n)
	}
	return out
}
