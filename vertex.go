package gateway

import "net/url"

// vertexAI is the Provider of Google Vertex AI (slug "vertex-ai", the
// spec's hostB). Requests go to
//
//	https://{host}/v1/projects/{project}/locations/{region}{path}
//
// where host is aiplatform.googleapis.com for region "global" and
// {region}-aiplatform.googleapis.com otherwise; a target base URL (from a
// virtual key, a config or a custom host) replaces https://{host}. The
// OpenAI-compatible chat path /chat/completions maps to
// /endpoints/openapi/chat/completions; every other path (e.g.
// /publishers/google/models/gemini-2.0-flash:generateContent) is appended
// as sent. The token (a Google OAuth access token) is sent as
// Authorization: Bearer, and Vertex's X-Vertex-AI-LLM-Request-Type header
// passes through.
//
// The project (HostSettings.ProjectID) must be a project id or number:
// lower-case letters, digits and hyphens. The region must be a DNS label
// starting with a letter. Both are checked before they reach the host name
// or the path, so neither can redirect the request.
type vertexAI struct{}

func (vertexAI) Rewrite(pr *ProxyRequest) error {
	h := &pr.Target.Host
	switch {
	case h.ProjectID == "":
		return missingSetting(HeaderHostBProjectID, "project_id", ProviderVertexAI)
	case !gcpProjectID(h.ProjectID):
		return invalidHeader(HeaderHostBProjectID, "must be a project id or number: 1 to 63 lower-case letters, digits or hyphens")
	case h.Region == "":
		return missingSetting(HeaderHostBRegion, "region", ProviderVertexAI)
	case !cloudRegion(h.Region):
		return invalidHeader(HeaderHostBRegion, "must be a region name such as us-central1, or global")
	}
	base := pr.Target.BaseURL
	if base == nil {
		host := "aiplatform.googleapis.com"
		if h.Region != "global" {
			host = h.Region + "-" + host
		}
		base = &url.URL{Scheme: "https", Host: host}
	}
	prefix := "/v1/projects/" + h.ProjectID + "/locations/" + h.Region
	if pr.Path == "/chat/completions" {
		prefix += "/endpoints/openapi"
	}
	pr.SetURL(appendPath(base, prefix))
	if pr.Target.APIKey != "" {
		pr.Out.Header.Set("Authorization", "Bearer "+pr.Target.APIKey)
	}
	pr.CopyHeaders("X-Vertex-Ai-Llm-Request-Type")
	return nil
}

// gcpProjectID reports whether s can be a Google Cloud project id (6 to 30
// lower-case letters, digits and hyphens) or project number, checked
// loosely as a lower-case DNS label: what matters here is that it is one
// safe path segment.
func gcpProjectID(s string) bool {
	return dnsLabel(s) && lowerLabel(s)
}

// cloudRegion reports whether s is a plausible region name of a cloud
// host: a lower-case DNS label that starts with a letter, e.g. us-central1,
// europe-west4, us-east-1 or global.
func cloudRegion(s string) bool {
	return dnsLabel(s) && lowerLabel(s) && s[0] >= 'a' && s[0] <= 'z'
}

// lowerLabel reports whether s has no upper-case ASCII letters.
func lowerLabel(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' {
			return false
		}
	}
	return true
}
