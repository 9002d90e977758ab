package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/memstore"
)

// whereSent is a Transport standing in for the cloud hosts: it answers
// every request itself, saying where the gateway sent it and with which
// credential header.
type whereSent struct{}

func (whereSent) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		r.Body.Close()
	}
	var auth string
	for _, h := range []string{"Api-Key", "Authorization", "X-Api-Key"} {
		if v := r.Header.Get(h); v != "" {
			auth = h + ": " + v
		}
	}
	body := r.Method + " " + r.URL.String() + "\n" + auth + "\n"
	return &http.Response{
		StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"text/plain"}}, ContentLength: int64(len(body)),
		Body: io.NopCloser(strings.NewReader(body)), Request: r,
	}, nil
}

// Azure OpenAI (hostA) by headers: the deployment, resource and API version
// build the URL, and the bearer token becomes api-key. A header set that is
// incomplete for the path is refused, naming the missing header.
func Example_azureOpenAI() {
	store := memstore.New()
	store.AddAPIKey(gateway.APIKey{ID: "k", Digest: gateway.HashAPIKey("gw-secret"), WorkspaceID: "ws-1"})
	g := gateway.New(gateway.Options{Keys: store, Transport: whereSent{}})
	defer g.Close()

	send := func(path string, deployment string) {
		req := httptest.NewRequest("POST", path, strings.NewReader(`{"messages":[]}`))
		req.Header.Set("x-gateway-api-key", "gw-secret")
		req.Header.Set("x-gateway-provider", "azure-openai")
		req.Header.Set("Authorization", "Bearer az-token")
		req.Header.Set("x-gateway-hosta-resource-name", "contoso")
		req.Header.Set("x-gateway-hosta-api-version", "2024-10-21")
		if deployment != "" {
			req.Header.Set("x-gateway-hosta-deployment-id", deployment)
		}
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		fmt.Print(rec.Code, " ", rec.Body.String())
	}
	send("/v1/chat/completions", "gpt-4o")
	send("/v1/files", "")
	send("/v1/chat/completions", "")
	// Output:
	// 200 POST https://contoso.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21
	// Api-Key: az-token
	// 200 POST https://contoso.openai.azure.com/openai/files?api-version=2024-10-21
	// Api-Key: az-token
	// 400 {"error":{"message":"azure-openai needs x-gateway-hosta-deployment-id (or deployment_id on the virtual key or config target)","type":"invalid_request_error","param":"x-gateway-hosta-deployment-id","code":"invalid_header"}}
}

// Vertex AI (hostB) and Anthropic through virtual keys loaded from the
// store file: each stored credential carries its host's settings, and the
// caller names only the key.
func Example_virtualKeysForCloudHosts() {
	f, err := admin.Decode(strings.NewReader(`{
	  "api_keys": [{"id": "k", "key": "gw-secret", "workspace_id": "ws-1"}],
	  "virtual_keys": [
	    {"slug": "gemini", "provider": "vertex-ai", "api_key": "ya29.stored", "project_id": "my-proj", "region": "europe-west4"},
	    {"slug": "claude", "provider": "anthropic", "api_key": "sk-ant-stored"}
	  ]}`))
	if err != nil {
		panic(err)
	}
	store := memstore.New()
	if err := admin.Apply(context.Background(), f, store); err != nil {
		panic(err)
	}
	g := gateway.New(gateway.Options{Keys: store, VirtualKeys: store, Transport: whereSent{}})
	defer g.Close()

	for _, c := range []struct{ vk, path string }{{"gemini", "/v1/chat/completions"}, {"claude", "/v1/messages"}} {
		req := httptest.NewRequest("POST", c.path, strings.NewReader(`{}`))
		req.Header.Set("x-gateway-api-key", "gw-secret")
		req.Header.Set("x-gateway-virtual-key", c.vk)
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		fmt.Print(rec.Body.String())
	}
	// Output:
	// POST https://europe-west4-aiplatform.googleapis.com/v1/projects/my-proj/locations/europe-west4/endpoints/openapi/chat/completions
	// Authorization: Bearer ya29.stored
	// POST https://api.anthropic.com/v1/messages
	// X-Api-Key: sk-ant-stored
}
