// Package messages translates Anthropic's Messages API (POST /v1/messages)
// to and from OpenAI chat completions, for targets that speak chat and not
// Messages: the caller's request becomes a chat request (Request), the
// chat answer becomes a Messages answer (Answer), a chat stream becomes the
// Messages event stream (Stream), and an OpenAI-shaped error becomes an
// Anthropic-shaped one (ErrorBody). CountTokens estimates the input tokens
// of a request for /v1/messages/count_tokens without asking a provider.
//
// Targets that speak Messages themselves (Anthropic, Claude on Bedrock or
// Vertex) get the caller's bytes instead: this package is only for the
// others, which is why cache_control, which only Anthropic honours, is
// dropped here.
//
// The functions are pure and safe for concurrent use; a Stream belongs to
// one answer and is not.
package messages

// Dialect says what the chat target accepts beyond OpenAI's own chat
// completions. Its zero value is OpenAI's: no reasoning text in messages,
// no top_k.
type Dialect struct {
	// Reasoning names the member of chat messages that carries the
	// model's reasoning text: "reasoning_content" (DeepSeek, vLLM, Qwen,
	// xAI) or "reasoning" (OpenRouter, Ollama, Groq). Empty means the
	// target has none: thinking blocks in the conversation are dropped
	// and listed in Translation.Dropped. Answers and streams are read
	// for both members whatever it says.
	Reasoning string

	// TopK sends top_k as a top_k member (vLLM, SGLang, Ollama and
	// others take it). False answers a request with top_k as an
	// unsupported_parameter error.
	TopK bool
}
