package gateway

import (
	"github.com/modelgateway/gateway/internal/bounds"
	"net/url"
	"strings"
)

// azureOpenAI is the Provider of Azure OpenAI (slug "azure-openai", the
// spec's hostA).
//
// Inference paths (/completions, /chat/completions, /embeddings, /images/…,
// /audio/…) go to
//
//	https://{resource}.openai.azure.com/openai/deployments/{deployment}{path}?api-version={v}
//
// and every other path (files, fine-tuning jobs, batches, models, …) to
//
//	https://{resource}.openai.azure.com/openai{path}?api-version={v}
//
// with the caller's query kept beside api-version. A target base URL (from
// a virtual key, a config or a custom host) replaces
// https://{resource}.openai.azure.com, and the resource name is then not
// needed. The token is sent as api-key; Authorization never reaches Azure.
//
// Settings come from HostSettings: ResourceName, DeploymentID, APIVersion
// (or, when no setting gives one, the caller's api-version query
// parameter). The resource name must be a DNS label, and the deployment id
// and API version may hold only letters, digits, '.', '_' and '-', so that
// no setting can change the host or the path the request goes to.
type azureOpenAI struct{}

func (azureOpenAI) Rewrite(pr *ProxyRequest) error {
	h := &pr.Target.Host
	base := pr.Target.BaseURL
	if h.ResourceName != "" && !bounds.DNSLabel(h.ResourceName) {
		return invalidHeader(HeaderHostAResourceName, "must be a DNS label: 1 to 63 letters, digits or hyphens, not starting or ending with a hyphen")
	}
	if base == nil {
		if h.ResourceName == "" {
			return missingSetting(HeaderHostAResourceName, "resource_name", ProviderAzureOpenAI)
		}
		base = &url.URL{Scheme: "https", Host: strings.ToLower(h.ResourceName) + ".openai.azure.com"}
	}

	version := h.APIVersion
	if version == "" {
		version = queryValue(pr.Out.URL.RawQuery, "api-version")
	}
	if version == "" {
		return missingSetting(HeaderHostAAPIVersion, "api_version", ProviderAzureOpenAI)
	}
	if !azureToken(version, 64) {
		return invalidHeader(HeaderHostAAPIVersion, "may hold only letters, digits, '.', '_' and '-', at most 64")
	}

	prefix := "/openai"
	if azureInference(pr.Path) {
		if h.DeploymentID == "" {
			return missingSetting(HeaderHostADeploymentID, "deployment_id", ProviderAzureOpenAI)
		}
		if !azureToken(h.DeploymentID, 64) {
			return invalidHeader(HeaderHostADeploymentID, "may hold only letters, digits, '.', '_' and '-', at most 64")
		}
		prefix += "/deployments/" + h.DeploymentID
	}
	pr.SetURL(appendPath(base, prefix))
	pr.Out.URL.RawQuery = setQueryValue(pr.Out.URL.RawQuery, "api-version", version)

	if pr.Target.APIKey != "" {
		pr.Out.Header.Set("Api-Key", pr.Target.APIKey)
	}
	pr.CopyHeaders("X-Ms-Client-Request-Id")
	return nil
}

// azureInference reports whether an Azure OpenAI provider path is served by
// a deployment rather than by the resource.
func azureInference(path string) bool {
	switch path {
	case "/completions", "/chat/completions", "/embeddings":
		return true
	}
	return strings.HasPrefix(path, "/images/") || strings.HasPrefix(path, "/audio/")
}

// missingSetting returns the 400 for a cloud-host setting a provider kind
// needs and the request did not give, naming the header (and the field of
// a virtual key or config target that may carry it instead).
func missingSetting(header, field, provider string) *Error {
	return badRequest(CodeInvalidHeader, header, provider+" needs "+header+" (or "+field+" on the virtual key or config target)")
}

// azureToken reports whether s is 1 to max letters, digits, '.', '_' and
// '-', and is not made of dots alone (".", ".."), so that it is one safe
// path segment or query value.
func azureToken(s string, max int) bool {
	if len(s) == 0 || len(s) > max || strings.Trim(s, ".") == "" || strings.Contains(s, "..") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// appendPath returns a copy of base whose path ends with elem, which must
// need no escaping.
func appendPath(base *url.URL, elem string) *url.URL {
	u := *base
	u.Path = strings.TrimSuffix(base.Path, "/") + elem
	if base.RawPath != "" {
		u.RawPath = strings.TrimSuffix(base.RawPath, "/") + elem
	}
	return &u
}

// queryValue returns the first value of key in the raw query, or "".
func queryValue(raw, key string) string {
	for part := range strings.SplitSeq(raw, "&") {
		k, v, _ := strings.Cut(part, "=")
		if uk, err := url.QueryUnescape(k); err == nil && uk == key {
			if uv, err := url.QueryUnescape(v); err == nil {
				return uv
			}
		}
	}
	return ""
}

// setQueryValue returns raw with every key parameter removed and key=value
// appended; the other parameters keep their order and escaping, except that
// a '#' (which a request line may carry) is escaped so that it cannot cut
// the parameter appended after it into a fragment.
func setQueryValue(raw, key, value string) string {
	var b strings.Builder
	for part := range strings.SplitSeq(raw, "&") {
		if part == "" {
			continue
		}
		k, _, _ := strings.Cut(part, "=")
		if uk, err := url.QueryUnescape(k); err == nil && uk == key {
			continue
		}
		b.WriteString(strings.ReplaceAll(part, "#", "%23"))
		b.WriteByte('&')
	}
	b.WriteString(url.QueryEscape(key))
	b.WriteByte('=')
	b.WriteString(url.QueryEscape(value))
	return b.String()
}
