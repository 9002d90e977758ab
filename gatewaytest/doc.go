// Package gatewaytest provides a fake model provider for tests, in the
// spirit of net/http/httptest. It speaks OpenAI's chat completions and
// Responses APIs and Anthropic's Messages API, so an agent or a gateway can
// be tested offline.
//
// [NewServer] starts a [Server] on a loopback address. Point a gateway
// virtual key's base URL, a custom host, or any OpenAI or Anthropic client at
// [Server.URL] (it ends in "/v1"), and the server answers completions, chat
// completions, embeddings, models, fine-tuning jobs, files, Anthropic
// messages and OpenAI responses with deterministic JSON in each API's own
// shape. Streamed answers are real server-sent event streams, flushed one
// event at a time, with each API's own event sequence.
//
// Answers echo the prompt (see [CompletionText]) and, on the agent
// protocols, call a tool when the last user message names it, so an agent
// loop runs to its end: tool call, tool result, final answer.
//
// Tests steer the server instead of sleeping:
//
//   - [Server.Script] queues responses for a path: error statuses with
//     Retry-After headers, delays released by a channel the test closes, or
//     streams that break mid-way by aborting the connection.
//   - [Server.HoldStream] stops a stream after a chosen number of events
//     until the test releases it, which proves that a proxy in front of the
//     server delivers events as they come rather than buffering them.
//   - [Server.SetJobStatus] drives a fine-tuning job through its states,
//     filling the fields the state rules require.
//   - [Server.Requests] and [Server.Count] record what arrived, and
//     [Server.RequireToken] checks the Authorization header (the x-api-key
//     header on Anthropic's paths).
//
// The package does not import the gateway package; its JSON is written from
// its own small types that follow OpenAI's published schemas.
package gatewaytest
