package gateway

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelgateway/gateway/internal/chat"
	"github.com/modelgateway/gateway/internal/sse"
)

// geminiFinish maps a candidate's finishReason to OpenAI's finish_reason:
// a candidate that calls functions finishes with tool_calls.
func geminiFinish(reason string, calls bool) string {
	switch reason {
	case "MAX_TOKENS":
		return "length"
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT":
		return "content_filter"
	}
	if calls {
		return "tool_calls"
	}
	return "stop" // STOP, LANGUAGE, OTHER, MALFORMED_FUNCTION_CALL, …
}

// openAI returns the usage of a Gemini answer: thinking tokens are
// completion tokens, as OpenAI counts reasoning tokens.
func (u gemUsage) openAI() *chat.Usage {
	prompt := u.PromptTokenCount + u.ToolUsePromptTokenCount
	completion := u.CandidatesTokenCount + u.ThoughtsTokenCount
	total := u.TotalTokenCount
	if total == 0 {
		total = prompt + completion
	}
	return &chat.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: total,
		PromptTokensDetails: &chat.PromptDetails{CachedTokens: u.CachedContentTokenCount}}
}

// geminiAnswerID returns the id of a translated answer: Gemini's
// responseId, else a random one.
func geminiAnswerID(responseID string) string {
	if responseID != "" && len(responseID) <= 128 {
		return "chatcmpl-" + responseID
	}
	return "chatcmpl-" + randomHex(12)
}

// geminiCallID returns the id of a function call: Gemini's own when it
// gave one, else a random one, so that ids stay unique across the turns of
// a conversation, which other kinds it may fall back to require.
func geminiCallID(fc *gemFunctionCall) string {
	if fc.ID != "" {
		return fc.ID
	}
	return "call_" + randomHex(12)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// callArguments returns a function call's args as OpenAI's arguments text.
func callArguments(args json.RawMessage) string {
	if a := bytes.TrimSpace(args); len(a) > 0 && !bytes.Equal(a, []byte("null")) {
		return string(a)
	}
	return "{}"
}

// googleBadAnswer is the error for an answer that cannot be translated:
// the caller gets a 502, as when no provider answered.
func googleBadAnswer(kind, what string) error {
	return errors.Join(ErrUpstreamUnreachable, errors.New("gateway: "+kind+" answered with "+what))
}

// geminiResponse turns a generateContent answer into OpenAI's, in place.
func geminiResponse(kind string, req *chat.Request, res *http.Response) error {
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return googleError(kind, res)
	}
	if req.Stream && strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		res.Body = geminiStream(kind, req, res.Body)
		setTranslatedBody(res, "text/event-stream", nil)
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, maxProviderAnswer))
	res.Body.Close()
	if err != nil {
		return err
	}
	var g gemResponse
	if err := json.Unmarshal(b, &g); err != nil {
		return googleBadAnswer(kind, "invalid JSON")
	}
	c := &chat.Completion{ID: geminiAnswerID(g.ResponseID), Object: chat.ObjectCompletion, Created: time.Now().Unix(),
		Model: g.ModelVersion, Choices: []chat.Choice{}}
	if c.Model == "" {
		c.Model = req.Model
	}
	for _, cand := range g.Candidates {
		msg := chat.AssistantMessage{Role: "assistant"}
		var text strings.Builder
		for _, p := range cand.Content.Parts {
			switch {
			case p.Thought:
			case p.FunctionCall != nil:
				msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: geminiCallID(p.FunctionCall), Type: "function",
					Function: chat.FunctionCall{Name: p.FunctionCall.Name, Arguments: callArguments(p.FunctionCall.Args)}})
			default:
				text.WriteString(p.Text)
			}
		}
		if text.Len() > 0 || len(msg.ToolCalls) == 0 {
			s := text.String()
			msg.Content = &s
		}
		c.Choices = append(c.Choices, chat.Choice{Index: cand.Index, Message: msg, FinishReason: geminiFinish(cand.FinishReason, len(msg.ToolCalls) > 0)})
	}
	if len(c.Choices) == 0 {
		// No candidate: the prompt itself was blocked.
		empty, finish := "", "stop"
		if g.PromptFeedback != nil && g.PromptFeedback.BlockReason != "" {
			finish = "content_filter"
		}
		c.Choices = append(c.Choices, chat.Choice{Message: chat.AssistantMessage{Role: "assistant", Content: &empty}, FinishReason: finish})
	}
	var u gemUsage
	if g.UsageMetadata != nil {
		u = *g.UsageMetadata
	}
	c.Usage = u.openAI()
	setTranslatedBody(res, "application/json", chat.Encode(c))
	return nil
}

// googleErrorOf decodes a Google error answer, {"error": {…}}, or the
// one-element array Vertex AI's streaming methods send.
func googleErrorOf(b []byte) *gemError {
	var one struct {
		Error *gemError `json:"error"`
	}
	if json.Unmarshal(b, &one) == nil && one.Error != nil {
		return one.Error
	}
	var many []struct {
		Error *gemError `json:"error"`
	}
	if json.Unmarshal(b, &many) == nil && len(many) > 0 && many[0].Error != nil {
		return many[0].Error
	}
	return nil
}

// googleErrorBody returns e as an OpenAI error: Google's status (e.g.
// INVALID_ARGUMENT) is the code, and, lower-cased, the type.
func googleErrorBody(kind string, e *gemError, status int) []byte {
	var msg, code string
	if e != nil {
		msg, code = e.Message, e.Status
	}
	if msg == "" {
		msg = kind + " answered " + strconv.Itoa(status) + " " + http.StatusText(status)
	}
	typ := strings.ToLower(code)
	if typ == "" {
		typ = TypeGateway
	}
	return chat.ErrorBody(msg, typ, code, "")
}

// googleError turns a Google error answer into an OpenAI-shaped one with
// the same status.
func googleError(kind string, res *http.Response) error {
	b, err := io.ReadAll(io.LimitReader(res.Body, maxHeldBody))
	res.Body.Close()
	if err != nil {
		return err
	}
	setTranslatedBody(res, "application/json", googleErrorBody(kind, googleErrorOf(b), res.StatusCode))
	return nil
}

// geminiStream translates streamGenerateContent's events (alt=sse: each
// one a whole GenerateContentResponse holding the next parts) into OpenAI
// chunks: for each choice the role first, then text and tool-call deltas
// in the order of the parts (each function call arrives whole, with an
// index and id of its own), then its finish reason; after the last event
// a usage chunk when the request asked for one, then data: [DONE]. A
// stream that ends before every choice has a finish reason was cut, and
// is an error (io.ErrUnexpectedEOF), so the caller's connection is
// aborted rather than ended as if whole. An error event is passed on as
// an OpenAI error event, and the stream ends without [DONE].
func geminiStream(kind string, req *chat.Request, body io.ReadCloser) io.ReadCloser {
	type choice struct {
		calls    int
		finished bool
	}
	events := sse.NewReader(body, maxProviderEvent)
	var (
		id, model string
		created   = time.Now().Unix()
		usage     gemUsage
		choices   = map[int]*choice{}
		done      bool
	)
	chunk := func(i int, d chat.Delta, finish *string) []byte {
		return chat.Event(&chat.Chunk{ID: id, Object: chat.ObjectChunk, Created: created, Model: model,
			Choices: []chat.ChunkChoice{{Index: i, Delta: d, FinishReason: finish}}})
	}
	open := func(out []byte, i int) ([]byte, *choice) {
		c := choices[i]
		if c == nil {
			c = &choice{}
			choices[i] = c
			empty := ""
			out = append(out, chunk(i, chat.Delta{Role: "assistant", Content: &empty}, nil)...)
		}
		return out, c
	}
	complete := func() bool {
		for _, c := range choices {
			if !c.finished {
				return false
			}
		}
		return len(choices) > 0
	}
	next := func() ([]byte, error) {
		if done {
			return nil, io.EOF
		}
		_, data, err := events.Next()
		if err == io.EOF {
			if !complete() {
				return nil, io.ErrUnexpectedEOF // cut before the finish reason
			}
			done = true
			var out []byte
			if req.IncludeUsage() {
				out = chat.Event(&chat.Chunk{ID: id, Object: chat.ObjectChunk, Created: created, Model: model,
					Choices: []chat.ChunkChoice{}, Usage: usage.openAI()})
			}
			return append(out, chat.Done...), io.EOF
		}
		if err != nil {
			return nil, err
		}
		var ev gemResponse
		if json.Unmarshal(data, &ev) != nil {
			return nil, errors.New("gateway: " + kind + " sent an event that is not JSON")
		}
		if ev.Error != nil {
			done = true
			return append(append([]byte("data: "), googleErrorBody(kind, ev.Error, ev.Error.Code)...), '\n', '\n'), io.EOF
		}
		if id == "" {
			id, model = geminiAnswerID(ev.ResponseID), ev.ModelVersion
			if model == "" {
				model = req.Model
			}
		}
		if ev.UsageMetadata != nil {
			usage = *ev.UsageMetadata
		}
		var out []byte
		if len(ev.Candidates) == 0 && ev.PromptFeedback != nil && ev.PromptFeedback.BlockReason != "" {
			var c *choice
			if out, c = open(out, 0); !c.finished {
				c.finished = true
				f := "content_filter"
				out = append(out, chunk(0, chat.Delta{}, &f)...)
			}
			return out, nil
		}
		for _, cand := range ev.Candidates {
			var c *choice
			out, c = open(out, cand.Index)
			if c.finished {
				continue
			}
			for _, p := range cand.Content.Parts {
				switch {
				case p.Thought:
				case p.FunctionCall != nil:
					i := c.calls
					c.calls++
					out = append(out, chunk(cand.Index, chat.Delta{ToolCalls: []chat.ToolCall{{Index: &i, ID: geminiCallID(p.FunctionCall),
						Type: "function", Function: chat.FunctionCall{Name: p.FunctionCall.Name, Arguments: callArguments(p.FunctionCall.Args)}}}}, nil)...)
				case p.Text != "":
					t := p.Text
					out = append(out, chunk(cand.Index, chat.Delta{Content: &t}, nil)...)
				}
			}
			if cand.FinishReason != "" {
				c.finished = true
				f := geminiFinish(cand.FinishReason, c.calls > 0)
				out = append(out, chunk(cand.Index, chat.Delta{}, &f)...)
			}
		}
		return out, nil
	}
	return chat.NewStream(body, next)
}

// embeddingsResponse turns a Google embeddings answer into OpenAI's, in
// place; decode returns its vectors, one per input in order, and the
// prompt tokens it counted.
func embeddingsResponse(kind string, req *chat.EmbeddingRequest, res *http.Response, decode func([]byte) ([][]float64, int, error)) error {
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return googleError(kind, res)
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, maxProviderAnswer))
	res.Body.Close()
	if err != nil {
		return err
	}
	vectors, tokens, err := decode(b)
	if err != nil {
		return googleBadAnswer(kind, "invalid JSON")
	}
	if len(vectors) != len(req.Input.Texts) {
		return googleBadAnswer(kind, strconv.Itoa(len(vectors))+" embeddings for "+strconv.Itoa(len(req.Input.Texts))+" inputs")
	}
	setTranslatedBody(res, "application/json", chat.EncodeEmbeddings(req, vectors, tokens))
	return nil
}
