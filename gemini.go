package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/modelgateway/gateway/internal/chat"
)

// ProviderGoogle is the slug of the Gemini API kind (Google AI Studio).
const ProviderGoogle = "google"

// geminiAPI is the Provider of Google's Gemini API (slug "google", the
// spec's Google AI Studio). Requests go to the target's base URL
// (https://generativelanguage.googleapis.com/v1beta when it has none) plus
// the provider path, keeping the caller's query, as OpenAICompatible's do.
// The key is sent as x-goog-api-key: never as Authorization, and never in
// the query, where access logs would keep it. POST /chat/completions and
// POST /embeddings are translated (see Translate); every other path (e.g.
// /models/gemini-2.0-flash:countTokens, /files) passes through as sent.
type geminiAPI struct{ base *url.URL }

var (
	_ Translator = geminiAPI{}
	_ Translator = vertexAI{}
)

func (p geminiAPI) Rewrite(pr *ProxyRequest) error {
	pr.SetURL(pr.Target.baseURLOr(p.base))
	if pr.Target.APIKey != "" {
		pr.Out.Header.Set("X-Goog-Api-Key", pr.Target.APIKey)
	}
	return nil
}

// Translate turns an OpenAI chat completion into a Gemini generateContent
// request (POST /models/{model}:generateContent, or
// :streamGenerateContent?alt=sse when streamed), and an OpenAI embeddings
// request into one batchEmbedContents call (POST
// /models/{model}:batchEmbedContents, one request per input). The model
// may be named with Gemini's "models/" prefix or without it.
func (geminiAPI) Translate(route string, _ *Target, body []byte) (*Translation, error) {
	if route == RouteEmbeddings {
		return geminiAPIEmbeddings(body)
	}
	return geminiChat(ProviderGoogle, "/models/", body)
}

// geminiModel returns the model id of a Gemini request as one path
// segment: the caller's, without a "models/" prefix. An id that is not a
// plain segment (a '/', '?', '%', "..") is refused, so that no model name
// can move the request to another path of the provider.
func geminiModel(model string) (string, error) {
	m := strings.TrimPrefix(model, "models/")
	ok := m != "" && len(m) <= 256 && isAlnum(m[0])
	for i := 0; ok && i < len(m); i++ {
		c := m[i]
		ok = isAlnum(c) || c == '-' || c == '_' || c == '.' || c == '@'
	}
	if !ok {
		return "", badRequest(CodeInvalidJSON, "model", "model: "+quoteShort(model)+" is not a Gemini model id")
	}
	return m, nil
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// geminiChat translates a chat completion for kind (ProviderGoogle or
// ProviderVertexAI), whose models live under prefix.
func geminiChat(kind, prefix string, body []byte) (*Translation, error) {
	req, err := chat.ParseRequest(body)
	if err != nil {
		return nil, paramError(err)
	}
	model, err := geminiModel(req.Model)
	if err != nil {
		return nil, err
	}
	native, err := geminiRequest(kind, req)
	if err != nil {
		return nil, err
	}
	tl := &Translation{Path: prefix + model + ":generateContent", Body: native}
	if req.Stream {
		tl.Path, tl.Query = prefix+model+":streamGenerateContent", "alt=sse"
	}
	tl.Response = func(res *http.Response) error { return geminiResponse(kind, req, res) }
	return tl, nil
}

// Gemini generateContent wire types, shared by the Gemini API and Vertex
// AI.
type (
	gemContent struct {
		Role  string    `json:"role,omitempty"`
		Parts []gemPart `json:"parts"`
	}
	gemPart struct {
		Text             string               `json:"text,omitempty"`
		Thought          bool                 `json:"thought,omitempty"`
		InlineData       *gemBlob             `json:"inlineData,omitempty"`
		FileData         *gemFile             `json:"fileData,omitempty"`
		FunctionCall     *gemFunctionCall     `json:"functionCall,omitempty"`
		FunctionResponse *gemFunctionResponse `json:"functionResponse,omitempty"`
	}
	gemBlob struct {
		MimeType string `json:"mimeType"`
		Data     string `json:"data"`
	}
	gemFile struct {
		MimeType string `json:"mimeType"`
		FileURI  string `json:"fileUri"`
	}
	gemFunctionCall struct {
		ID   string          `json:"id,omitempty"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args,omitempty"`
	}
	gemFunctionResponse struct {
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	}
	gemFunction struct {
		Name                 string          `json:"name"`
		Description          string          `json:"description,omitempty"`
		ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
	}
	gemTool struct {
		FunctionDeclarations []gemFunction `json:"functionDeclarations"`
	}
	gemToolConfig struct {
		FunctionCallingConfig struct {
			Mode                 string   `json:"mode"`
			AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
		} `json:"functionCallingConfig"`
	}
	gemGenerationConfig struct {
		Temperature        *float64        `json:"temperature,omitempty"`
		TopP               *float64        `json:"topP,omitempty"`
		MaxOutputTokens    int             `json:"maxOutputTokens,omitempty"`
		StopSequences      []string        `json:"stopSequences,omitempty"`
		CandidateCount     int             `json:"candidateCount,omitempty"`
		ResponseMimeType   string          `json:"responseMimeType,omitempty"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
		Seed               *int64          `json:"seed,omitempty"`
		PresencePenalty    *float64        `json:"presencePenalty,omitempty"`
		FrequencyPenalty   *float64        `json:"frequencyPenalty,omitempty"`
	}
	gemRequest struct {
		Contents          []gemContent         `json:"contents"`
		SystemInstruction *gemContent          `json:"systemInstruction,omitempty"`
		Tools             []gemTool            `json:"tools,omitempty"`
		ToolConfig        *gemToolConfig       `json:"toolConfig,omitempty"`
		GenerationConfig  *gemGenerationConfig `json:"generationConfig,omitempty"`
	}
	gemUsage struct {
		PromptTokenCount        int `json:"promptTokenCount"`
		CandidatesTokenCount    int `json:"candidatesTokenCount"`
		TotalTokenCount         int `json:"totalTokenCount"`
		CachedContentTokenCount int `json:"cachedContentTokenCount"`
		ThoughtsTokenCount      int `json:"thoughtsTokenCount"`
		ToolUsePromptTokenCount int `json:"toolUsePromptTokenCount"`
	}
	gemCandidate struct {
		Index        int        `json:"index"`
		Content      gemContent `json:"content"`
		FinishReason string     `json:"finishReason"`
	}
	gemError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
	}
	gemResponse struct {
		Candidates     []gemCandidate `json:"candidates"`
		PromptFeedback *struct {
			BlockReason string `json:"blockReason"`
		} `json:"promptFeedback"`
		UsageMetadata *gemUsage `json:"usageMetadata"`
		ModelVersion  string    `json:"modelVersion"`
		ResponseID    string    `json:"responseId"`
		Error         *gemError `json:"error"`
	}
)

// geminiUnsupported are OpenAI parameters Gemini's generateContent has no
// translation for here.
var geminiUnsupported = []string{"top_logprobs", "logit_bias", "audio", "modalities", "prediction"}

// geminiRequest builds the generateContent body of an OpenAI request.
func geminiRequest(kind string, r *chat.Request) ([]byte, error) {
	for _, p := range geminiUnsupported {
		if _, ok := r.Extra[p]; ok {
			return nil, unsupported(kind, p, "has no equivalent")
		}
	}
	if lp, ok := r.Extra["logprobs"]; ok && !bytes.Equal(bytes.TrimSpace(lp), []byte("false")) {
		return nil, unsupported(kind, "logprobs", "has no equivalent")
	}
	if len(r.Stop) > 4 {
		return nil, badRequest(CodeInvalidJSON, "stop", "stop: at most 4 sequences")
	}
	gc := gemGenerationConfig{Temperature: r.Temperature, TopP: r.TopP, MaxOutputTokens: r.MaxOutputTokens(), StopSequences: r.Stop}
	if r.N != nil {
		if *r.N < 1 {
			return nil, badRequest(CodeInvalidJSON, "n", "n: must be at least 1")
		}
		if *r.N > 1 {
			gc.CandidateCount = *r.N
		}
	}
	if rf := r.ResponseFormat; rf != nil {
		switch rf.Type {
		case "", "text":
		case "json_object":
			gc.ResponseMimeType = "application/json"
		case "json_schema":
			if rf.JSONSchema == nil || len(bytes.TrimSpace(rf.JSONSchema.Schema)) == 0 {
				return nil, badRequest(CodeInvalidJSON, "response_format", "response_format: json_schema.schema is required")
			}
			gc.ResponseMimeType, gc.ResponseJSONSchema = "application/json", rf.JSONSchema.Schema
		default:
			return nil, unsupported(kind, "response_format", strconv.Quote(rf.Type)+" has no equivalent")
		}
	}
	var err error
	if gc.PresencePenalty, err = extraNumber(r, "presence_penalty"); err != nil {
		return nil, err
	}
	if gc.FrequencyPenalty, err = extraNumber(r, "frequency_penalty"); err != nil {
		return nil, err
	}
	if raw, ok := r.Extra["seed"]; ok {
		var seed int64
		if json.Unmarshal(raw, &seed) != nil {
			return nil, badRequest(CodeInvalidJSON, "seed", "seed: must be an integer")
		}
		gc.Seed = &seed
	}

	out := gemRequest{}
	if b, _ := json.Marshal(gc); string(b) != "{}" {
		out.GenerationConfig = &gc
	}
	names := map[string]string{} // tool call id → function name, of the assistant messages so far
	for i, m := range r.Messages {
		param := "messages[" + strconv.Itoa(i) + "]"
		switch m.Role {
		case "system", "developer":
			if s := m.Content.String(); s != "" {
				if out.SystemInstruction == nil {
					out.SystemInstruction = &gemContent{}
				}
				out.SystemInstruction.Parts = append(out.SystemInstruction.Parts, gemPart{Text: s})
			}
		case "tool":
			name, ok := names[m.ToolCallID]
			if !ok {
				return nil, badRequest(CodeInvalidJSON, param+".tool_call_id", param+".tool_call_id: names no tool call of an earlier assistant message")
			}
			out.Contents = appendGemini(out.Contents, "user", gemPart{FunctionResponse: &gemFunctionResponse{Name: name, Response: functionResult(m.Content.String())}})
		default: // user, assistant
			parts, err := geminiParts(kind, m.Content, param)
			if err != nil {
				return nil, err
			}
			role := "user"
			if m.Role == "assistant" {
				role = "model"
				for _, tc := range m.ToolCalls {
					args := json.RawMessage(bytes.TrimSpace([]byte(tc.Function.Arguments)))
					if len(args) == 0 {
						args = json.RawMessage("{}")
					}
					if tc.Function.Name == "" || args[0] != '{' || !json.Valid(args) {
						return nil, badRequest(CodeInvalidJSON, param+".tool_calls", param+".tool_calls: each needs a function name, and arguments that are a JSON object")
					}
					names[tc.ID] = tc.Function.Name
					parts = append(parts, gemPart{FunctionCall: &gemFunctionCall{Name: tc.Function.Name, Args: args}})
				}
			}
			if len(parts) > 0 {
				out.Contents = appendGemini(out.Contents, role, parts...)
			}
		}
	}
	if len(out.Contents) == 0 {
		return nil, badRequest(CodeInvalidJSON, "messages", "messages: "+kind+" needs at least one user or assistant message with content")
	}
	if len(r.Tools) > 0 {
		decls := make([]gemFunction, 0, len(r.Tools))
		for i, t := range r.Tools {
			param := "tools[" + strconv.Itoa(i) + "]"
			if t.Type != "function" {
				return nil, unsupported(kind, param+".type", "only function tools can be translated")
			}
			if t.Function.Name == "" {
				return nil, badRequest(CodeInvalidJSON, param+".function.name", param+".function.name: is required")
			}
			decls = append(decls, gemFunction{Name: t.Function.Name, Description: t.Function.Description, ParametersJSONSchema: t.Function.Parameters})
		}
		out.Tools = []gemTool{{FunctionDeclarations: decls}}
		if r.ParallelToolCalls != nil && !*r.ParallelToolCalls {
			return nil, unsupported(kind, "parallel_tool_calls", "false has no equivalent")
		}
		tc, err := r.ParseToolChoice()
		if err != nil {
			return nil, paramError(err)
		}
		mode := map[string]string{"auto": "AUTO", "none": "NONE", "required": "ANY", "function": "ANY"}[tc.Mode]
		if mode != "" {
			out.ToolConfig = &gemToolConfig{}
			out.ToolConfig.FunctionCallingConfig.Mode = mode
			if tc.Mode == "function" {
				out.ToolConfig.FunctionCallingConfig.AllowedFunctionNames = []string{tc.Name}
			}
		}
	}
	return json.Marshal(out)
}

// extraNumber returns the number a request member the chat types do not
// name holds, nil when absent.
func extraNumber(r *chat.Request, name string) (*float64, error) {
	raw, ok := r.Extra[name]
	if !ok {
		return nil, nil
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil {
		return nil, badRequest(CodeInvalidJSON, name, name+": must be a number")
	}
	return &f, nil
}

// appendGemini adds parts as a content of role, merged into the last
// content when it has the same role: Gemini wants the turns to alternate,
// and the answers to parallel function calls in one turn.
func appendGemini(cs []gemContent, role string, parts ...gemPart) []gemContent {
	if n := len(cs); n > 0 && cs[n-1].Role == role {
		cs[n-1].Parts = append(cs[n-1].Parts, parts...)
		return cs
	}
	return append(cs, gemContent{Role: role, Parts: parts})
}

// functionResult is a tool message's text as a functionResponse's
// response, which must be a JSON object: the text itself when it is one,
// else {"content": text}.
func functionResult(s string) json.RawMessage {
	if t := bytes.TrimSpace([]byte(s)); len(t) > 0 && t[0] == '{' && json.Valid(t) {
		return t
	}
	b, _ := json.Marshal(map[string]string{"content": s})
	return b
}

// geminiParts turns a user or assistant message's content into parts:
// text, base64 data: URL images as inlineData, and https images (gs://
// ones too on Vertex AI) as fileData, which the provider fetches itself.
func geminiParts(kind string, c chat.Content, param string) ([]gemPart, error) {
	if c.Text != nil {
		if *c.Text == "" {
			return nil, nil
		}
		return []gemPart{{Text: *c.Text}}, nil
	}
	var out []gemPart
	for j, p := range c.Parts {
		switch p.Type {
		case "text":
			if p.Text != "" {
				out = append(out, gemPart{Text: p.Text})
			}
		case "image_url":
			if p.ImageURL == nil {
				return nil, badRequest(CodeInvalidJSON, param+".content", param+".content["+strconv.Itoa(j)+"]: image_url is required")
			}
			u := p.ImageURL.URL
			if mt, data, ok := chat.DataURL(u); ok {
				out = append(out, gemPart{InlineData: &gemBlob{MimeType: mt, Data: data}})
			} else if strings.HasPrefix(u, "https://") || kind == ProviderVertexAI && strings.HasPrefix(u, "gs://") {
				out = append(out, gemPart{FileData: &gemFile{MimeType: imageType(u), FileURI: u}})
			} else {
				return nil, badRequest(CodeInvalidJSON, param+".content", param+".content["+strconv.Itoa(j)+"]: an image must be a base64 data: URL or an https URL")
			}
		default:
			return nil, unsupported(kind, param+".content", "content parts of type "+strconv.Quote(p.Type))
		}
	}
	return out, nil
}

// imageType guesses an image URL's media type from its extension, as
// fileData needs one; JPEG when the URL does not say.
func imageType(u string) string {
	p := u
	if pu, err := url.Parse(u); err == nil {
		p = pu.Path
	}
	switch strings.ToLower(path.Ext(p)) {
	case ".png":
		return "image/png"
	case ".gif":
		return "image/gif"
	case ".webp":
		return "image/webp"
	case ".heic":
		return "image/heic"
	case ".heif":
		return "image/heif"
	}
	return "image/jpeg"
}

// geminiAPIEmbeddings translates an embeddings request for the Gemini API:
// one batchEmbedContents call holding one request per input.
func geminiAPIEmbeddings(body []byte) (*Translation, error) {
	req, err := chat.ParseEmbeddingRequest(body)
	if err != nil {
		return nil, paramError(err)
	}
	model, err := geminiModel(req.Model)
	if err != nil {
		return nil, err
	}
	if req.Dimensions != nil && *req.Dimensions <= 0 {
		return nil, badRequest(CodeInvalidJSON, "dimensions", "dimensions: must be positive")
	}
	type embedRequest struct {
		Model                string     `json:"model"`
		Content              gemContent `json:"content"`
		OutputDimensionality *int       `json:"outputDimensionality,omitempty"`
	}
	var native struct {
		Requests []embedRequest `json:"requests"`
	}
	for _, text := range req.Input.Texts {
		native.Requests = append(native.Requests, embedRequest{Model: "models/" + model,
			Content: gemContent{Parts: []gemPart{{Text: text}}}, OutputDimensionality: req.Dimensions})
	}
	b, err := json.Marshal(native)
	if err != nil {
		return nil, err
	}
	return &Translation{Path: "/models/" + model + ":batchEmbedContents", Body: b, Response: func(res *http.Response) error {
		return embeddingsResponse(ProviderGoogle, req, res, func(b []byte) ([][]float64, int, error) {
			var a struct {
				Embeddings []struct {
					Values []float64 `json:"values"`
				} `json:"embeddings"`
				UsageMetadata *gemUsage `json:"usageMetadata"`
			}
			if err := json.Unmarshal(b, &a); err != nil {
				return nil, 0, err
			}
			vs := make([][]float64, len(a.Embeddings))
			for i, e := range a.Embeddings {
				vs[i] = e.Values
			}
			tokens := 0
			if a.UsageMetadata != nil {
				tokens = a.UsageMetadata.PromptTokenCount
			}
			return vs, tokens, nil
		})
	}}, nil
}
