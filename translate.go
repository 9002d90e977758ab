package gateway

import (
	"net/http"
	"net/url"
)

// Routes whose OpenAI-shaped requests are translated for a Translator.
const (
	RouteChatCompletions = "/chat/completions"
	RouteEmbeddings      = "/embeddings"
)

// Translator is implemented by a Provider whose native API is not
// OpenAI's (Anthropic Messages, Gemini, Bedrock Converse). For POST
// /chat/completions and POST /embeddings the gateway hands it the caller's
// OpenAI request before Rewrite, and the provider's answer after, so that
// one OpenAI-shaped body reaches every kind and may fall back or be load
// balanced across kinds. Every other path of a Translator is passed
// through untranslated, byte for byte. OpenAI-compatible kinds do not
// implement it: they get the caller's bytes as sent.
type Translator interface {
	Provider

	// Translate returns the provider's own request for the OpenAI request
	// body of route (RouteChatCompletions or RouteEmbeddings) sent to t.
	// What the provider cannot do (n > 1, embeddings on a chat-only
	// kind, …) is an *Error with status 400 naming the parameter. A nil
	// Translation leaves the request as the caller sent it, for a model
	// the kind serves in OpenAI's shape already. It is called once per
	// target, from the request's goroutine.
	Translate(route string, t *Target, body []byte) (*Translation, error)
}

// Translation is one OpenAI request as a provider's own.
type Translation struct {
	// Path replaces the provider path the caller sent (e.g. "/messages"),
	// and Query, when not empty, the caller's query; Rewrite then maps
	// them as it maps any path. A request of an agents' protocol
	// (RouteMessages, RouteResponses) that is translated never passes the
	// caller's query on: it is the protocol's, not the target's. RawPath, when not empty, is Path's
	// escaped form, for segments that hold a '/' (a Bedrock model ARN).
	Path, RawPath, Query string

	// Body is the request body to send, as application/json.
	Body []byte

	// Response turns the provider's answer to Body into OpenAI's shape,
	// in place: the status stays (errors become OpenAI-shaped error
	// bodies), the body is replaced (a streamed answer as it is read, as
	// chat.completion.chunk events ended by data: [DONE]), and so are
	// Content-Type and Content-Length. It runs on the goroutine that
	// reads the answer; the answer it leaves is what the cache stores and
	// what policies count tokens on.
	Response func(res *http.Response) error
}

// translatedRoute reports whether a request of method to provider path is
// translated for Translator targets.
func translatedRoute(method, path string) bool {
	return method == http.MethodPost && (path == RouteChatCompletions || path == RouteEmbeddings)
}

// isTranslator reports whether the provider kind slug translates.
func (g *Gateway) isTranslator(slug string) bool {
	_, ok := g.providers[slug].(Translator)
	return ok
}

// escapedPath returns the escaped form of a path a Translation gives.
func escapedPath(p string) string { return (&url.URL{Path: p}).EscapedPath() }
