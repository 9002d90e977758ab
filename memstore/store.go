// Package memstore keeps every store of the gateway and its products in
// memory: for tests, examples and a single process that may lose its
// state on exit. A *Store implements the root package's read-only
// stores and each product's own.
package memstore

import (
	"sync"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/budget"
	"github.com/modelgateway/gateway/observe"
)

// Store is an in-memory store of every interface, made by New. It is
// safe for concurrent use. It keeps the newest 10,000 request logs,
// 100,000 feedback and 1,000 log exports: past those, the oldest go.
//
// While the products move out of the root package, the part of the state
// the root still declares is kept by the embedded *gateway.MemoryStore.
type Store struct {
	*gateway.MemoryStore

	prompts   prompts   // prompt.Store: see prompts.go
	responses responses // gateway.ResponseStore: see responses.go

	budgetMu sync.RWMutex              // guards budgets
	budgets  map[string]*budget.Policy // usage-limits policies, by lower-case id (see budget.go)

	logMu   sync.RWMutex             // guards logs and exports
	logs    []*gateway.RequestLog    // oldest added first, at most memoryLogsMax (see logs.go)
	exports map[string]*memoryExport // the log exports, by id (see logexports.go)

	feedbackMu sync.RWMutex        // guards feedback
	feedback   []*observe.Feedback // oldest added first, at most memoryFeedbackMax (see feedback.go)

	guardrails guardrails // see guardrails.go
}

// New returns an empty Store.
func New() *Store { return &Store{MemoryStore: &gateway.MemoryStore{}} }
