package gateway

import "net/url"

// anthropicVersion is the anthropic-version sent when the caller sends none.
const anthropicVersion = "2023-06-01"

// anthropic is the Provider of Anthropic's API (slug "anthropic"): requests
// go to https://api.anthropic.com/v1 (or the target's base URL) plus the
// provider path; the token travels as x-api-key, never as Authorization;
// anthropic-version is defaulted to 2023-06-01 unless the caller sends its
// own, and anthropic-beta passes through when the caller sends it.
type anthropic struct{ base *url.URL }

func (p anthropic) Rewrite(pr *ProxyRequest) error {
	pr.SetURL(pr.Target.baseURLOr(p.base))
	if pr.Target.APIKey != "" {
		pr.Out.Header.Set("X-Api-Key", pr.Target.APIKey)
	}
	pr.CopyHeaders("Anthropic-Version", "Anthropic-Beta")
	if pr.Out.Header.Get("Anthropic-Version") == "" {
		pr.Out.Header.Set("Anthropic-Version", anthropicVersion)
	}
	return nil
}
