package gateway

import (
	"net/http"
	"net/url"
	"strings"
)

// Provider slugs of the built-in provider kinds.
const (
	ProviderOpenAI      = "openai"
	ProviderAnthropic   = "anthropic"
	ProviderAzureOpenAI = "azure-openai"
	ProviderVertexAI    = "vertex-ai"
	ProviderBedrock     = "bedrock" // not built in: see the bedrock sub-module
)

// Provider turns a routed request into a request to one kind of model
// provider: base URL, path mapping, auth conversion, signing. Rewrite is
// called once per attempt, from the request's goroutine; implementations
// must be safe for concurrent use.
//
// Rewrite returns an *Error (status 400) for settings that are missing or
// malformed for this kind, naming the header or field in Param.
type Provider interface {
	Rewrite(pr *ProxyRequest) error
}

// ProviderFunc adapts a function to the Provider interface.
type ProviderFunc func(pr *ProxyRequest) error

// Rewrite calls f(pr).
func (f ProviderFunc) Rewrite(pr *ProxyRequest) error { return f(pr) }

// ProxyRequest is one attempt at reaching a provider.
type ProxyRequest struct {
	// In is the caller's request. It must not be modified.
	In *http.Request

	// Out is the request to the provider. On entry to Rewrite its method,
	// body and query are the caller's, its URL is not yet set, and its
	// headers hold only Content-Type, Accept, Content-Encoding and the
	// caller's forward-headers list; the gateway's own headers and query
	// parameters (x-gateway-*), the caller's Authorization and the headers
	// the caller's Connection header lists are never in it.
	Out *http.Request

	// Path is the provider path: the caller's path with the gateway prefix
	// removed, e.g. "/chat/completions". RawPath is its escaped form as the
	// caller sent it.
	Path, RawPath string

	// Target is where the request goes and with what credentials.
	Target *Target
}

// SetURL points Out at base + Path, keeping the caller's query. The path is
// appended as the caller escaped it, so ids holding %2F stay one segment.
func (pr *ProxyRequest) SetURL(base *url.URL) {
	u := *base
	u.Path = strings.TrimSuffix(base.Path, "/") + pr.Path
	u.RawPath = strings.TrimSuffix(base.EscapedPath(), "/") + pr.RawPath
	if u.RawPath == u.Path {
		u.RawPath = ""
	}
	u.RawQuery = pr.Out.URL.RawQuery
	u.User = nil
	pr.Out.URL = &u
	pr.Out.Host = ""
}

// CopyHeaders copies the named headers of the caller's request to Out, as
// sent; a provider uses it for its own well-known headers. A header the
// caller's Connection header lists is hop-by-hop and never copied.
func (pr *ProxyRequest) CopyHeaders(names ...string) {
	conn := pr.In.Header["Connection"]
	for _, n := range names {
		if v := pr.In.Header.Values(n); len(v) > 0 && !connectionListed(conn, n) {
			pr.Out.Header[http.CanonicalHeaderKey(n)] = v
		}
	}
}

// Target is one resolved destination of a request: a provider kind, where
// it lives and the credentials it takes.
type Target struct {
	// Provider is the provider kind's slug.
	Provider string

	// BaseURL is where the provider is reached; nil means the kind's
	// default. It comes from a virtual key, a config or a custom host.
	BaseURL *url.URL

	// APIKey is the provider token: the caller's bearer token, a virtual
	// key's api_key or a config's api_key. A secret.
	APIKey string

	// VirtualKey is the slug of the virtual key that supplied the
	// credentials, if any.
	VirtualKey string

	// Host holds the cloud-host settings.
	Host HostSettings

	// CustomHost reports that BaseURL was supplied by the caller or
	// stored by a tenant (not the operator), so it is dialed only through
	// the custom-host guard.
	CustomHost bool

	// Index names the target in its config, e.g. "config.targets[1]";
	// "" when no config was used.
	Index string
}

// baseURLOr returns t.BaseURL, or def when t has none.
func (t *Target) baseURLOr(def *url.URL) *url.URL {
	if t.BaseURL != nil {
		return t.BaseURL
	}
	return def
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic("gateway: bad built-in URL " + s)
	}
	return u
}

// OpenAICompatible returns the Provider for a host that speaks OpenAI's API:
// requests go to the target's base URL (defaultBaseURL when it has none)
// plus the provider path, the token goes in Authorization as a bearer token,
// and OpenAI's own headers (OpenAI-Organization, OpenAI-Project,
// OpenAI-Beta) pass through. It panics if defaultBaseURL is not an absolute
// http(s) URL.
func OpenAICompatible(defaultBaseURL string) Provider {
	u, err := url.Parse(defaultBaseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		panic("gateway: OpenAICompatible: base URL must be an absolute http(s) URL")
	}
	return openAI{base: u}
}

type openAI struct{ base *url.URL }

func (p openAI) Rewrite(pr *ProxyRequest) error {
	pr.SetURL(pr.Target.baseURLOr(p.base))
	if pr.Target.APIKey != "" {
		pr.Out.Header.Set("Authorization", "Bearer "+pr.Target.APIKey)
	}
	pr.CopyHeaders("Openai-Organization", "Openai-Project", "Openai-Beta")
	return nil
}

// builtinProviders returns the provider kinds every gateway knows.
func builtinProviders() map[string]Provider {
	return map[string]Provider{
		ProviderOpenAI:      OpenAICompatible("https://api.openai.com/v1"),
		ProviderAnthropic:   anthropic{base: mustURL("https://api.anthropic.com/v1")},
		ProviderAzureOpenAI: azureOpenAI{},
		ProviderVertexAI:    vertexAI{},
		ProviderGoogle:      geminiAPI{base: mustURL("https://generativelanguage.googleapis.com/v1beta")},
		"groq":              OpenAICompatible("https://api.groq.com/openai/v1"),
		"together-ai":       OpenAICompatible("https://api.together.xyz/v1"),
		"mistral-ai":        OpenAICompatible("https://api.mistral.ai/v1"),
		"deepseek":          OpenAICompatible("https://api.deepseek.com/v1"),
		"fireworks-ai":      OpenAICompatible("https://api.fireworks.ai/inference/v1"),
	}
}
