package gatewaytest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"strconv"
	"strings"
	"unicode"
)

// CompletionText returns the text the [Server] completes prompt with:
// "Echo: " followed by the prompt. For a chat completion the prompt is the
// text of the last message. A prompt given as tokens is written as the
// decimal token numbers separated by spaces; a missing prompt is
// "<|endoftext|>".
//
// A streamed answer sends the text in pieces, one per event: the text is cut
// before every run of white space, so "Echo: hello world" streams as
// "Echo:", " hello", " world". The number of pieces is the completion's token
// count; the prompt's token count is counted the same way. max_tokens, when
// set, keeps only that many pieces and makes finish_reason "length".
func CompletionText(prompt string) string { return "Echo: " + prompt }

// pieces cuts text before every run of white space; joined, the pieces give
// text back.
func pieces(text string) []string {
	var out []string
	start := 0
	prevSpace := false
	for i, r := range text {
		space := unicode.IsSpace(r)
		if space && !prevSpace && i > start {
			out = append(out, text[start:i])
			start = i
		}
		prevSpace = space
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// reply returns the pieces of the completion of prompt and its finish reason.
func reply(prompt string, maxTokens *int) ([]string, string) {
	p := pieces(CompletionText(prompt))
	if maxTokens != nil && *maxTokens >= 0 && len(p) > *maxTokens {
		return p[:*maxTokens], "length"
	}
	return p, "stop"
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type completionRequest struct {
	Model         string          `json:"model"`
	Prompt        json.RawMessage `json:"prompt"`
	N             *int            `json:"n"`
	MaxTokens     *int            `json:"max_tokens"`
	Stream        *bool           `json:"stream"`
	StreamOptions *streamOptions  `json:"stream_options"`
}

// prompts turns the prompt field (string, strings, tokens or token arrays)
// into one string per prompt.
func prompts(raw json.RawMessage) ([]string, bool) {
	if len(raw) == 0 || string(raw) == nullJSON {
		return []string{"<|endoftext|>"}, true
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, true
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		return many, true
	}
	var tokens []int
	if json.Unmarshal(raw, &tokens) == nil {
		return []string{joinTokens(tokens)}, true
	}
	var batches [][]int
	if json.Unmarshal(raw, &batches) == nil {
		out := make([]string, len(batches))
		for i, b := range batches {
			out[i] = joinTokens(b)
		}
		return out, true
	}
	return nil, false
}

func joinTokens(tokens []int) string {
	s := make([]string, len(tokens))
	for i, t := range tokens {
		s[i] = strconv.Itoa(t)
	}
	return strings.Join(s, " ")
}

func streamRequested(b *bool) bool { return b != nil && *b }

func usageJSON(u usage) json.RawMessage {
	b, _ := json.Marshal(u) // three ints always marshal
	return b
}

func strPtr(s string) *string { return &s }

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("gatewaytest: marshal event: " + err.Error())
	}
	return b
}

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Model == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error",
			"you must provide a model parameter", "model", "")
		return
	}
	ps, ok := prompts(req.Prompt)
	if !ok {
		writeError(w, http.StatusBadRequest, "invalid_request_error",
			"Invalid type for 'prompt'.", "prompt", "invalid_type")
		return
	}
	n := 1
	if req.N != nil {
		n = *req.N
	}
	if n < 1 || n > 128 {
		writeError(w, http.StatusBadRequest, "invalid_request_error",
			fmt.Sprintf("%d is not a valid value for 'n': it must be between 1 and 128.", n), "n", "integer_out_of_range")
		return
	}

	id := s.nextID("cmpl-")
	created := s.clock().Unix()
	base := completion{ID: id, Object: "text_completion", Created: created, Model: req.Model, SystemFingerprint: "fp_gatewaytest"}
	var u usage
	type answer struct {
		pieces []string
		finish string
	}
	var answers []answer
	for _, p := range ps {
		u.PromptTokens += len(pieces(p))
		for range n {
			pc, finish := reply(p, req.MaxTokens)
			answers = append(answers, answer{pc, finish})
			u.CompletionTokens += len(pc)
		}
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens

	if !streamRequested(req.Stream) {
		out := base
		out.Usage = usageJSON(u)
		out.Choices = make([]completionChoice, len(answers))
		for i, a := range answers {
			out.Choices[i] = completionChoice{
				Text: strings.Join(a.pieces, ""), Index: i,
				Logprobs: json.RawMessage(nullJSON), FinishReason: strPtr(a.finish),
			}
		}
		writeOK(w, r, out)
		return
	}

	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	var events [][]byte
	chunk := func(choices []completionChoice, u json.RawMessage) {
		c := base
		c.Choices = choices
		if includeUsage {
			c.Usage = u
			if c.Usage == nil {
				c.Usage = json.RawMessage(nullJSON)
			}
		}
		events = append(events, mustMarshal(c))
	}
	for i, a := range answers {
		for _, p := range a.pieces {
			chunk([]completionChoice{{Text: p, Index: i, Logprobs: json.RawMessage(nullJSON)}}, nil)
		}
		chunk([]completionChoice{{Text: "", Index: i, Logprobs: json.RawMessage(nullJSON), FinishReason: strPtr(a.finish)}}, nil)
	}
	if includeUsage {
		chunk([]completionChoice{}, usageJSON(u))
	}
	s.writeStream(w, r, http.StatusOK, events, -1)
}

type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	N             *int           `json:"n"`
	MaxTokens     *int           `json:"max_tokens"`
	MaxCompletion *int           `json:"max_completion_tokens"`
	Stream        *bool          `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options"`
}

// messageText returns the text of a message content: a string, or the
// concatenated "text" of an array of content parts.
func messageText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return ""
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Model == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error",
			"you must provide a model parameter", "model", "")
		return
	}
	if len(req.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error",
			"[] is too short - 'messages'", "messages", "empty_array")
		return
	}
	n := 1
	if req.N != nil {
		n = *req.N
	}
	if n < 1 || n > 128 {
		writeError(w, http.StatusBadRequest, "invalid_request_error",
			fmt.Sprintf("%d is not a valid value for 'n': it must be between 1 and 128.", n), "n", "integer_out_of_range")
		return
	}
	maxTokens := req.MaxCompletion
	if maxTokens == nil {
		maxTokens = req.MaxTokens
	}
	var u usage
	for _, m := range req.Messages {
		u.PromptTokens += len(pieces(messageText(m.Content)))
	}
	pc, finish := reply(messageText(req.Messages[len(req.Messages)-1].Content), maxTokens)
	u.CompletionTokens = n * len(pc)
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	text := strings.Join(pc, "")

	id := s.nextID("chatcmpl-")
	created := s.clock().Unix()
	if !streamRequested(req.Stream) {
		out := chatCompletion{ID: id, Object: "chat.completion", Created: created, Model: req.Model,
			SystemFingerprint: "fp_gatewaytest", Usage: usageJSON(u)}
		for i := range n {
			out.Choices = append(out.Choices, chatChoice{
				Index:        i,
				Message:      &chatMessage{Role: "assistant", Content: strPtr(text), Refusal: json.RawMessage(nullJSON)},
				Logprobs:     json.RawMessage(nullJSON),
				FinishReason: strPtr(finish),
			})
		}
		writeOK(w, r, out)
		return
	}

	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	var events [][]byte
	chunk := func(choices []chatChoice, u json.RawMessage) {
		c := chatCompletion{ID: id, Object: "chat.completion.chunk", Created: created, Model: req.Model,
			SystemFingerprint: "fp_gatewaytest", Choices: choices}
		if includeUsage {
			c.Usage = u
			if c.Usage == nil {
				c.Usage = json.RawMessage(nullJSON)
			}
		}
		events = append(events, mustMarshal(c))
	}
	for i := range n {
		chunk([]chatChoice{{Index: i, Delta: &chatMessage{Role: "assistant", Content: strPtr(""), Refusal: json.RawMessage(nullJSON)},
			Logprobs: json.RawMessage(nullJSON)}}, nil)
		for _, p := range pc {
			chunk([]chatChoice{{Index: i, Delta: &chatMessage{Content: strPtr(p)}, Logprobs: json.RawMessage(nullJSON)}}, nil)
		}
		chunk([]chatChoice{{Index: i, Delta: &chatMessage{}, Logprobs: json.RawMessage(nullJSON), FinishReason: strPtr(finish)}}, nil)
	}
	if includeUsage {
		chunk([]chatChoice{}, usageJSON(u))
	}
	s.writeStream(w, r, http.StatusOK, events, -1)
}

type embeddingRequest struct {
	Model      string          `json:"model"`
	Input      json.RawMessage `json:"input"`
	Dimensions *int            `json:"dimensions"`
}

// embeddingDimensions is the length of the vectors the server returns when
// the request does not ask for a number of dimensions.
const embeddingDimensions = 8

// vector returns a deterministic unit-free vector in [-1, 1] derived from text.
func vector(text string, dims int) []float64 {
	v := make([]float64, dims)
	for i := range v {
		h := fnv.New64a()
		fmt.Fprintf(h, "%d\x00%s", i, text)
		x := float64(h.Sum64()%2000001)/1000000 - 1
		v[i] = math.Round(x*1e6) / 1e6
	}
	return v
}

func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	var req embeddingRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Model == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error",
			"you must provide a model parameter", "model", "")
		return
	}
	inputs, ok := prompts(req.Input)
	if !ok || len(req.Input) == 0 || string(req.Input) == nullJSON {
		writeError(w, http.StatusBadRequest, "invalid_request_error",
			"'input' is a required property", "input", "")
		return
	}
	dims := embeddingDimensions
	if req.Dimensions != nil {
		dims = *req.Dimensions
	}
	if dims < 1 || dims > 4096 {
		writeError(w, http.StatusBadRequest, "invalid_request_error",
			"'dimensions' must be between 1 and 4096.", "dimensions", "")
		return
	}
	out := embeddingList{Object: "list", Model: req.Model, Data: make([]embedding, len(inputs))}
	for i, in := range inputs {
		out.Data[i] = embedding{Object: "embedding", Index: i, Embedding: vector(in, dims)}
		out.Usage.PromptTokens += len(pieces(in))
	}
	out.Usage.TotalTokens = out.Usage.PromptTokens
	writeOK(w, r, out)
}

// models lists the model ids that GET /v1/models returns. Completions accept
// any model name, listed or not.
var models = [...]string{"gpt-4o-mini", "gpt-3.5-turbo-instruct", "text-embedding-3-small"}

func (s *Server) modelList() modelList {
	created := s.clock().Unix()
	out := modelList{Object: "list"}
	for _, id := range models {
		out.Data = append(out.Data, model{ID: id, Object: "model", Created: created, OwnedBy: "system"})
	}
	return out
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	writeOK(w, r, s.modelList())
}

func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("model")
	for _, m := range s.modelList().Data {
		if m.ID == id {
			writeOK(w, r, m)
			return
		}
	}
	writeError(w, http.StatusNotFound, "invalid_request_error",
		fmt.Sprintf("The model '%s' does not exist", id), "model", "model_not_found")
}
