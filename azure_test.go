package gateway

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// hostsProxyRequest returns the ProxyRequest a provider sees for a caller's
// path and query, with host settings h.
func hostsProxyRequest(path, query string, h HostSettings) *ProxyRequest {
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return &ProxyRequest{
		In:      httptest.NewRequest(http.MethodPost, "/v1/x", nil),
		Out:     &http.Request{Method: http.MethodPost, Header: http.Header{}, URL: &url.URL{RawQuery: query}},
		Path:    path,
		RawPath: (&url.URL{Path: path}).EscapedPath(),
		Target:  &Target{APIKey: "k", Host: h},
	}
}

// hostsRefusal fails unless err is a 400 naming one of params.
func hostsRefusal(t *testing.T, err error, params ...string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Status != http.StatusBadRequest {
		t.Fatalf("error %v, want a 400 *Error", err)
	}
	for _, p := range params {
		if e.Param == p {
			return
		}
	}
	t.Fatalf("error names %q, want one of %q", e.Param, params)
}

// FuzzAzureOpenAIURL checks that whatever the settings, the request either
// is refused with a 400 naming a hostA header, or goes to the resource's
// own host, under its deployment for inference paths, with the API version
// as given.
func FuzzAzureOpenAIURL(f *testing.F) {
	f.Add("my-res", "gpt-4o", "2024-10-21", "/chat/completions", "x=1")
	f.Add("My-Res", "gpt-4o", "", "/files", "api-version=2024-06-01")
	f.Add("evil.com/", "../x", "a&b", "/images/generations", "")
	f.Add("a@b", "a%2Fb", "v#1", "/embeddings", "api-version=1&api-version=2")
	f.Fuzz(func(t *testing.T, res, dep, ver, path, query string) {
		if _, err := url.ParseRequestURI("/?" + query); err != nil {
			t.Skip("no request line carries this query")
		}
		pr := hostsProxyRequest(path, query, HostSettings{ResourceName: res, DeploymentID: dep, APIVersion: ver})
		if err := (azureOpenAI{}).Rewrite(pr); err != nil {
			hostsRefusal(t, err, HeaderHostAResourceName, HeaderHostADeploymentID, HeaderHostAAPIVersion)
			return
		}
		u, err := url.Parse(pr.Out.URL.String())
		if err != nil {
			t.Fatalf("outbound URL %q does not parse: %v", pr.Out.URL, err)
		}
		if u.Scheme != "https" || u.Host != strings.ToLower(res)+".openai.azure.com" || u.User != nil {
			t.Fatalf("request for resource %q sent to %q", res, u.Redacted())
		}
		prefix := "/openai/"
		if azureInference(pr.Path) {
			prefix = "/openai/deployments/" + dep + "/"
		}
		if !strings.HasPrefix(u.EscapedPath(), prefix) {
			t.Fatalf("path %q does not start with %q", u.EscapedPath(), prefix)
		}
		want := ver
		if want == "" {
			want = queryValue(query, "api-version")
		}
		if got := u.Query()["api-version"]; len(got) != 1 || got[0] != want {
			t.Fatalf("api-version %q, want [%q]", got, want)
		}
		if pr.Out.Header.Get("Api-Key") != "k" || pr.Out.Header.Get("Authorization") != "" {
			t.Fatalf("auth headers %v", pr.Out.Header)
		}
	})
}
