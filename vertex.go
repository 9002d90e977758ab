package gateway

import (
	"encoding/json"
	"github.com/modelgateway/gateway/internal/bounds"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelgateway/gateway/internal/chat"
)

// vertexAI is the Provider of Google Vertex AI (slug "vertex-ai", the
// spec's hostB). Requests go to
//
//	https://{host}/v1/projects/{project}/locations/{region}{path}
//
// where host is aiplatform.googleapis.com for region "global" and
// {region}-aiplatform.googleapis.com otherwise; a target base URL (from a
// virtual key, a config or a custom host) replaces https://{host}.
//
// POST /chat/completions for a Gemini model and POST /embeddings are
// translated to Vertex AI's own API (see Translate). Any other chat
// completion goes to Vertex AI's OpenAI-compatible endpoint,
// /endpoints/openapi/chat/completions, as the caller sent it. Every other
// path (e.g.
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
	case !bounds.ProjectID(h.ProjectID):
		return invalidHeader(HeaderHostBProjectID, "must be a project id or number: 1 to 63 lower-case letters, digits or hyphens")
	case h.Region == "":
		return missingSetting(HeaderHostBRegion, "region", ProviderVertexAI)
	case !bounds.Region(h.Region):
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

// Translate turns an OpenAI chat completion for a Gemini model (an id
// starting with "gemini-") into a generateContent request (POST
// /publishers/google/models/{model}:generateContent, or
// :streamGenerateContent?alt=sse when streamed), and an OpenAI embeddings
// request into a text embeddings predict call (POST
// /publishers/google/models/{model}:predict).
//
// A chat request for any other model (a publisher-qualified id such as
// google/gemini-2.0-flash-001 or meta/llama-3.3-70b-instruct-maas) is left
// as the caller sent it, for Vertex AI's own OpenAI-compatible endpoint
// (/endpoints/openapi/chat/completions), which serves those ids and
// answers in OpenAI's shape already.
func (vertexAI) Translate(route string, _ *Target, body []byte) (*Translation, error) {
	if route == RouteEmbeddings {
		return vertexEmbeddings(body)
	}
	var m struct {
		Model string `json:"model"`
	}
	json.Unmarshal(body, &m)
	if !strings.HasPrefix(m.Model, "gemini-") {
		return nil, nil
	}
	return geminiChat(ProviderVertexAI, "/publishers/google/models/", body)
}

// vertexEmbeddings translates an embeddings request into Vertex AI's text
// embeddings predict call: one instance per input. The gemini-embedding
// models take one instance per call, so several inputs for them are
// refused: one Translation is one call. A model may be named with the
// "google/" publisher prefix of the OpenAI-compatible endpoint.
func vertexEmbeddings(body []byte) (*Translation, error) {
	req, err := chat.ParseEmbeddingRequest(body)
	if err != nil {
		return nil, paramError(err)
	}
	model, err := geminiModel(strings.TrimPrefix(req.Model, "google/"))
	if err != nil {
		return nil, err
	}
	if req.Dimensions != nil && *req.Dimensions <= 0 {
		return nil, badRequest(CodeInvalidJSON, "dimensions", "dimensions: must be positive")
	}
	if strings.HasPrefix(model, "gemini-embedding") && len(req.Input.Texts) > 1 {
		return nil, unsupported(ProviderVertexAI, "input", model+" embeds one input per request")
	}
	type instance struct {
		Content string `json:"content"`
	}
	var native struct {
		Instances  []instance `json:"instances"`
		Parameters *struct {
			OutputDimensionality int `json:"outputDimensionality"`
		} `json:"parameters,omitempty"`
	}
	for _, text := range req.Input.Texts {
		native.Instances = append(native.Instances, instance{Content: text})
	}
	if req.Dimensions != nil {
		native.Parameters = &struct {
			OutputDimensionality int `json:"outputDimensionality"`
		}{*req.Dimensions}
	}
	b, err := json.Marshal(native)
	if err != nil {
		return nil, err
	}
	return &Translation{Path: "/publishers/google/models/" + model + ":predict", Body: b, Response: func(res *http.Response) error {
		return embeddingsResponse(ProviderVertexAI, req, res, decodeVertexEmbeddings)
	}}, nil
}

// decodeVertexEmbeddings reads a text embeddings predict answer: its
// vectors, and the tokens its statistics count.
func decodeVertexEmbeddings(b []byte) ([][]float64, int, error) {
	var a struct {
		Predictions []struct {
			Embeddings struct {
				Values     []float64 `json:"values"`
				Statistics struct {
					TokenCount  float64 `json:"token_count"`
					TokenCount2 float64 `json:"tokenCount"`
				} `json:"statistics"`
			} `json:"embeddings"`
		} `json:"predictions"`
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, 0, err
	}
	vs := make([][]float64, len(a.Predictions))
	tokens := 0
	for i, p := range a.Predictions {
		vs[i] = p.Embeddings.Values
		tokens += int(p.Embeddings.Statistics.TokenCount + p.Embeddings.Statistics.TokenCount2)
	}
	return vs, tokens, nil
}
