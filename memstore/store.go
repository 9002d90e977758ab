// Package memstore keeps every store of the gateway and its products in
// memory: for tests, examples and a single process that may lose its
// state on exit.
//
// A *Store implements the root package's read-only stores
// (gateway.KeyStore, gateway.VirtualKeyStore, gateway.ConfigStore,
// gateway.PolicyStore) and gateway.ResponseStore; admin's stores of keys,
// virtual keys, configs, workspaces and rate-limits policies
// (admin.KeyStore, admin.VirtualKeyStore, admin.ConfigStore,
// admin.WorkspaceStore, admin.PolicyStore with
// admin.PolicyCompareAndSwapper); catalog's integrations (catalog.Store),
// whose providers it finds joined with them; budget's usage-limits policies and the
// workspaces its budgets read (budget.Store, budget.Workspaces); and
// observe's request logs, analytics, feedback, exports and audit log
// (observe.Store, observe.Aggregator, observe.FeedbackStore,
// observe.ExportStore, observe.AuditStore); and users' people
// (users.Store).
package memstore

import (
	"crypto/sha256"
	"sync"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/budget"
	"github.com/modelgateway/gateway/catalog"
	"github.com/modelgateway/gateway/observe"
)

// Store is an in-memory store of every interface, made by New or used
// as its zero value. It is safe for concurrent use. It keeps the newest
// 10,000 request logs, 10,000 audit records, 100,000 feedback and 1,000
// log exports: past those, the oldest go. Policy ids are compared without
// regard to case.
type Store struct {
	mu         sync.RWMutex // guards keys, prevKeys, vkeys, configs, policies, workspaces, integrations, joined and audit
	keys       map[[sha256.Size]byte]*gateway.APIKey
	prevKeys   map[[sha256.Size]byte]*gateway.APIKey     // by PreviousDigest, while rotated (see keys.go)
	vkeys      map[string]map[string]*gateway.VirtualKey // by slug, then workspace id (see virtualkeys.go)
	configs    map[string]map[string]*configHistory      // by id, then workspace id (see configs.go)
	policies   map[string]*gateway.RateLimitsPolicy      // by lower-case id (see policies.go)
	workspaces map[string]*gateway.Workspace             // by id (see workspaces.go)

	integrations map[string]*catalog.Integration             // by slug (see catalog.go)
	joined       map[*gateway.VirtualKey]*gateway.VirtualKey // vkeys made from integrations, joined (see catalog.go)
	audit        []observe.AuditRecord                       // oldest first, at most memoryAuditMax (see audit.go)

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

	people people // users.Store: see users.go
}

// What a *Store implements.
var (
	_ gateway.KeyStore        = (*Store)(nil)
	_ gateway.VirtualKeyStore = (*Store)(nil)
	_ gateway.ConfigStore     = (*Store)(nil)
	_ gateway.PolicyStore     = (*Store)(nil)
	_ gateway.ResponseStore   = (*Store)(nil)

	_ admin.KeyStore                = (*Store)(nil)
	_ admin.VirtualKeyStore         = (*Store)(nil)
	_ admin.ConfigStore             = (*Store)(nil)
	_ admin.WorkspaceStore          = (*Store)(nil)
	_ admin.PolicyStore             = (*Store)(nil)
	_ admin.PolicyCompareAndSwapper = (*Store)(nil)

	_ catalog.Store = (*Store)(nil)

	_ budget.Store      = (*Store)(nil)
	_ budget.Workspaces = (*Store)(nil)

	_ observe.Store         = (*Store)(nil)
	_ observe.Aggregator    = (*Store)(nil)
	_ observe.FeedbackStore = (*Store)(nil)
	_ observe.ExportStore   = (*Store)(nil)
	_ observe.AuditStore    = (*Store)(nil)
)

// New returns an empty Store, ready to use like the zero Store.
func New() *Store { return &Store{} }
