// Package responses translates OpenAI's Responses API (POST /v1/responses)
// to and from OpenAI chat completions, so that a caller speaking Responses
// (Codex, the OpenAI SDKs' Responses clients) can reach any provider the
// gateway can send chat completions to.
//
// One direction per file: request.go turns a Responses request into a
// chat completion request, answer.go turns a chat completion into a
// Response object, stream.go turns a chat completion stream into the
// Responses stream events, and errors.go maps failures. The package is a
// leaf: it reads and writes bytes and never calls a provider, a store or
// the network. Storing responses and resolving previous_response_id are
// the caller's: Request.Prepend takes a stored response's items.
//
// What a chat completion cannot express (built-in tools, file inputs,
// background mode, prompt templates) is refused with an *Error whose
// Code is "unsupported_parameter" and whose Param is the JSON path of the
// member, so the caller can answer 400 naming it. Hints a chat model can
// do without (text.verbosity, prompt_cache_key, include, service_tier)
// are dropped and listed in Translation.Notes.
package responses
