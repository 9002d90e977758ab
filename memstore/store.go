// Package memstore keeps every store of the gateway and its products in
// memory: for tests, examples and a single process that may lose its
// state on exit. A *Store implements the root package's read-only
// stores and each product's own.
package memstore

import "github.com/modelgateway/gateway"

// Store is an in-memory store of every interface, made by New. It is
// safe for concurrent use.
//
// While the products move out of the root package, the part of the state
// the root still declares is kept by the embedded *gateway.MemoryStore.
type Store struct {
	*gateway.MemoryStore

	prompts   prompts   // prompt.Store: see prompts.go
	responses responses // gateway.ResponseStore: see responses.go
}

// New returns an empty Store.
func New() *Store { return &Store{MemoryStore: &gateway.MemoryStore{}} }
