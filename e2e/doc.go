// Package e2e holds end-to-end tests that drive the gateway's standalone
// server (examples/server) with the official OpenAI Go SDK. It is a module
// of its own so that the SDK and its dependencies stay out of the core
// module.
package e2e
