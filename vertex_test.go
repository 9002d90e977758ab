package gateway

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzVertexAIURL checks that whatever the project and region, the request
// either is refused with a 400 naming a hostB header, or goes to Google's
// regional host under /v1/projects/{project}/locations/{region}/.
func FuzzVertexAIURL(f *testing.F) {
	f.Add("my-proj", "us-central1", "/chat/completions")
	f.Add("123456789012", "global", "/publishers/google/models/gemini-2.0-flash:generateContent")
	f.Add("evil.com/", "us-central1.evil.com", "/x")
	f.Add("p:q", "a@b", "/..%2F")
	f.Fuzz(func(t *testing.T, project, region, path string) {
		pr := hostsProxyRequest(path, "", HostSettings{ProjectID: project, Region: region})
		if err := (vertexAI{}).Rewrite(pr); err != nil {
			hostsRefusal(t, err, HeaderHostBProjectID, HeaderHostBRegion)
			return
		}
		u, err := url.Parse(pr.Out.URL.String())
		if err != nil {
			t.Fatalf("outbound URL %q does not parse: %v", pr.Out.URL, err)
		}
		host := region + "-aiplatform.googleapis.com"
		if region == "global" {
			host = "aiplatform.googleapis.com"
		}
		if u.Scheme != "https" || u.Host != host || u.User != nil {
			t.Fatalf("request for region %q sent to %q", region, u.Redacted())
		}
		prefix := "/v1/projects/" + project + "/locations/" + region + "/"
		if !strings.HasPrefix(u.EscapedPath(), prefix) {
			t.Fatalf("path %q does not start with %q", u.EscapedPath(), prefix)
		}
		if pr.Out.Header.Get("Authorization") != "Bearer k" {
			t.Fatalf("auth headers %v", pr.Out.Header)
		}
	})
}
