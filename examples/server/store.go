package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/budget"
	"github.com/modelgateway/gateway/catalog"
	"github.com/modelgateway/gateway/console"
	"github.com/modelgateway/gateway/guardrail"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
	"github.com/modelgateway/gateway/prompt"
	"github.com/modelgateway/gateway/sqlstore"
	"github.com/modelgateway/gateway/users"
)

// defaultDB is the -db of a server started without -db (and without
// -demo): a SQLite file in the working directory.
const defaultDB = "gateway.db"

// memoryDB is the -db value that keeps state in memory only.
const memoryDB = ":memory:"

// dbForms lists the forms of a -db value, for error messages.
const dbForms = "want a file path, sqlite:PATH, postgres://… or :memory:"

// dbKind is the kind of store a -db value names.
type dbKind int

const (
	dbMemory dbKind = iota
	dbSQLite
	dbPostgres
)

// dbSpec is a parsed -db value.
type dbSpec struct {
	kind dbKind
	dsn  string // what sqlstore.Open takes; empty for dbMemory
	path string // the SQLite file; empty otherwise
	name string // how messages name the database: never a password
}

// chooseDB returns the -db value the server runs with: flagValue when -db
// was given (set), else :memory: with -demo (a throwaway demo, whose fake
// provider and virtual key live as long as the process), else
// flagValue, which is then gateway.db, with or without -config (keys and
// virtual keys made over HTTP must survive a restart).
func chooseDB(flagValue string, set, demo bool) string {
	if demo && !set {
		return memoryDB
	}
	return flagValue
}

// parseDB parses a -db value: :memory:, a postgres:// or postgresql://
// URL, sqlite:PATH, or a file path. Its errors never quote a URL, which
// may hold a password.
func parseDB(v string) (dbSpec, error) {
	switch {
	case v == memoryDB:
		return dbSpec{kind: dbMemory, name: memoryDB}, nil
	case strings.HasPrefix(v, "postgres://"), strings.HasPrefix(v, "postgresql://"):
		return dbSpec{kind: dbPostgres, dsn: v, name: postgresName(v)}, nil
	}
	path := strings.TrimPrefix(v, "sqlite:")
	switch {
	case path == "":
		return dbSpec{}, errors.New("gateway: -db: empty database name (" + dbForms + ")")
	case path == memoryDB:
		return dbSpec{}, errors.New("gateway: -db: sqlite::memory: is not supported; -db :memory: keeps no durable state")
	case strings.HasPrefix(path, "file:"):
		return dbSpec{}, errors.New("gateway: -db: SQLite URIs (file:…) are not supported (" + dbForms + ")")
	case strings.Contains(path, "://"):
		scheme, _, _ := strings.Cut(path, "://")
		return dbSpec{}, fmt.Errorf("gateway: -db: unknown database scheme %q (%s)", scheme, dbForms)
	}
	return dbSpec{kind: dbSQLite, dsn: "sqlite:" + path, path: path, name: path}, nil
}

// where says where the state of spec is kept, for the line the server
// prints at start: the database, never its password.
func (spec dbSpec) where() string {
	switch spec.kind {
	case dbSQLite:
		path := spec.path
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		return "in the SQLite database " + path
	case dbPostgres:
		return "in the Postgres database " + spec.name
	default:
		return "in memory: nothing survives a restart"
	}
}

// postgresName names the Postgres database of dsn in messages: its host
// and database, without the user, password or parameters.
func postgresName(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		return "the Postgres database"
	}
	return "postgres://" + u.Host + u.Path
}

// backend is the store the server keeps its state in: a memstore.Store for
// -db :memory:, else a sqlstore.Store. Exactly one of mem and db is set.
type backend struct {
	mem  *memstore.Store
	db   *sqlstore.Store
	name string // how messages name the database (see dbSpec.name)

	// urlSigningKey is observe.Options.URLSigningKey: derived from the
	// database's master key, so that replicas sharing it accept each
	// other's signed URLs; nil for :memory: (a random key per process).
	urlSigningKey []byte
}

// openBackend opens the store spec names. For a database it finds the
// master key first (see masterKey), and reports a key file it created on
// stderr; the key itself is never written anywhere else. A key file it
// created is removed again when the database does not open.
//
// logRetention is how long a database keeps request logs (0: until
// deleted by hand).
func openBackend(ctx context.Context, spec dbSpec, logRetention time.Duration, errLog *slog.Logger, stderr io.Writer) (*backend, error) {
	if spec.kind == dbMemory {
		return &backend{mem: memstore.New(), name: spec.name}, nil
	}
	key, err := masterKey(spec)
	if err != nil {
		return nil, err
	}
	db, err := sqlstore.Open(ctx, spec.dsn, sqlstore.Options{MasterKey: key.value, ErrorLog: errLog, LogRetention: logRetention})
	if err != nil {
		if key.created {
			os.Remove(key.file)
		}
		return nil, openError(spec, key, err)
	}
	if key.created {
		fmt.Fprintf(stderr, "gateway: created master key file %s; back it up with the database\n", key.file)
	}
	return &backend{db: db, name: spec.name, urlSigningKey: urlSigningKey(key.value)}, nil
}

// urlSigningKey derives the key that signs the gateway's URLs from the
// master key: HMAC-SHA256 of a fixed label under it, so that the master
// key itself signs nothing and cannot be learnt from a signature, while
// every replica holding the master key derives the same key.
func urlSigningKey(master []byte) []byte {
	m := hmac.New(sha256.New, master)
	m.Write([]byte("modelgateway: URL signing key v1"))
	return m.Sum(nil)
}

// openError explains why the database of spec did not open with key.
func openError(spec dbSpec, key masterKeySource, err error) error {
	switch {
	case errors.Is(err, sqlstore.ErrWrongMasterKey) && key.created:
		return fmt.Errorf("gateway: -db %s: its provider credentials were sealed under a master key that is not here: "+
			"restore its key file %s or set GATEWAY_MASTER_KEY to that key (%w)", spec.name, key.file, err)
	case errors.Is(err, sqlstore.ErrWrongMasterKey):
		return fmt.Errorf("gateway: -db %s: the master key from %s is not the one its provider credentials were sealed under (%w)",
			spec.name, key.from(), err)
	default:
		return fmt.Errorf("gateway: -db %s: %w", spec.name, err)
	}
}

// store returns the store itself, to be passed as every store of
// gateway.Options it implements (see setStores).
func (b *backend) store() any {
	if b.db != nil {
		return b.db
	}
	return b.mem
}

// durable reports whether the store outlives the process.
func (b *backend) durable() bool { return b.db != nil }

// load creates or replaces every entry f names, and leaves the others
// alone. The guardrails f's keys and workspaces attach by default are
// checked first against those stored, as the admin routes check them.
func (b *backend) load(ctx context.Context, f *admin.File) error {
	if gs, ok := b.store().(guardrail.Store); ok {
		if err := f.CheckGuardrails(ctx, &guardrail.Hooks{Store: gs}); err != nil {
			return err
		}
	}
	if b.db != nil {
		return b.db.Load(ctx, f)
	}
	return admin.Apply(ctx, f, b.mem)
}

// apiKey returns the stored key of digest d, or gateway.ErrNotFound.
func (b *backend) apiKey(ctx context.Context, d [sha256.Size]byte) (*gateway.APIKey, error) {
	if b.db != nil {
		return b.db.APIKey(ctx, d)
	}
	return b.mem.APIKey(ctx, d)
}

// hasAPIKeys reports whether the store holds any gateway API key.
func (b *backend) hasAPIKeys(ctx context.Context) (bool, error) {
	var keys []gateway.APIKey
	var err error
	if b.db != nil {
		keys, err = b.db.APIKeys(ctx, "")
	} else {
		keys, err = b.mem.APIKeys(ctx, "")
	}
	return len(keys) > 0, err
}

// putAPIKey creates or replaces the key k.ID.
func (b *backend) putAPIKey(ctx context.Context, k gateway.APIKey) error {
	if b.db != nil {
		return b.db.PutAPIKey(ctx, &k)
	}
	b.mem.AddAPIKey(k)
	return nil
}

// consoleSessions returns the store of the console's sessions: the
// database, or nil (in memory) for :memory:.
func (b *backend) consoleSessions() console.SessionStore {
	if b.db != nil {
		return b.db
	}
	return nil
}

// ping reports whether the database answers; a memstore.Store always does.
func (b *backend) ping(ctx context.Context) error {
	if b.db != nil {
		return b.db.Ping(ctx)
	}
	return nil
}

// Close closes the database, if any. Call it once the gateway is closed.
func (b *backend) Close() error {
	if b.db != nil {
		return b.db.Close()
	}
	return nil
}

// products are the options of the products the server mounts beside the
// data plane: the administration routes, the budgets (an admission of
// the gateway's), the observability routes, the guardrails, the prompts,
// the catalogue (integrations, providers, models), and the audit log of
// their writes.
type products struct {
	admin      admin.Options
	budget     budget.Options
	observe    observe.Options
	guardrails guardrail.AdminStore
	audit      observe.AuditStore // where every product's writes are audited
	prompt     prompt.Options
	users      users.Options
	catalog    catalog.Options
}

// setStores sets every store of o and of the products p that st
// implements. The optional stores (the administration stores, the audit
// log, the observability stores, the budgets' Store and Counter) are found by type assertion, so
// that a store gains those routes as soon as it implements them. A budget
// Counter already set (by -redis) is kept.
func setStores(o *gateway.Options, p *products, st any) {
	a, b, ob := &p.admin, &p.budget, &p.observe
	if s, ok := st.(gateway.KeyStore); ok {
		o.Keys = s
	}
	if s, ok := st.(gateway.VirtualKeyStore); ok {
		o.VirtualKeys = s
	}
	if s, ok := st.(gateway.ConfigStore); ok {
		o.Configs = s
	}
	if s, ok := st.(gateway.PolicyStore); ok {
		o.Policies = s
	}
	if s, ok := st.(gateway.WorkspaceStore); ok {
		o.Workspaces = s // the workspaces' default guardrails
	}
	a.Keys, _ = st.(admin.KeyStore)
	a.VirtualKeys, _ = st.(admin.VirtualKeyStore)
	a.Configs, _ = st.(admin.ConfigStore)
	a.Workspaces, _ = st.(admin.WorkspaceStore)
	a.Policies, _ = st.(admin.PolicyStore)
	if s, ok := st.(observe.AuditStore); ok {
		p.audit = s
	}
	if s, ok := st.(observe.Store); ok {
		ob.Logs = s
	}
	if s, ok := st.(observe.ExportStore); ok {
		ob.Exports = s
	}
	if s, ok := st.(observe.FeedbackStore); ok {
		ob.Feedback = s
	}
	if s, ok := st.(budget.Workspaces); ok {
		b.Workspaces = s
	}
	if s, ok := st.(gateway.ResponseStore); ok {
		o.Responses = s // the responses kept for previous_response_id and GET /responses/{id}
	}
	b.Audit = p.audit
	if s, ok := st.(budget.Store); ok {
		b.Store = s
	}
	if s, ok := st.(prompt.Store); ok {
		p.prompt.Store = s
	}
	if s, ok := st.(guardrail.AdminStore); ok {
		p.guardrails = s
	}
	if s, ok := st.(users.Store); ok {
		// People's console sessions authenticate through their session
		// keys, found after the API keys.
		o.Keys = users.Keys(o.Keys, s)
		p.users.Store, p.users.Workspaces = s, o.Workspaces
	}
	if s, ok := st.(catalog.Store); ok {
		c := &p.catalog
		c.Store, c.VirtualKeys, c.Workspaces, c.Policies, c.Budgets = s, a.VirtualKeys, a.Workspaces, a.Policies, b.Store
	}
	if s, ok := st.(budget.Counter); ok && b.Counter == nil {
		b.Counter = s // budget counters in the database, unless -redis keeps them
	}
}
