// Package gatewaytest provides a fake OpenAI-compatible model provider for
// tests, in the spirit of net/http/httptest.
//
// [NewServer] starts a [Server] on a loopback address. Point a gateway
// virtual key's base URL, a custom host, or any OpenAI client at
// [Server.URL] (it ends in "/v1"), and the server answers completions, chat
// completions, embeddings, models, fine-tuning jobs and files with
// deterministic, OpenAI-shaped JSON. Streamed completions are real
// server-sent event streams, flushed one event at a time.
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
//     [Server.RequireToken] checks the Authorization header.
//
// The package does not import the gateway package; its JSON is written from
// its own small types that follow OpenAI's published schemas.
package gatewaytest
