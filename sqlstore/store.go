package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
)

// Options configure a Store. The zero value is a store without a master
// key, refreshed every second, logging to slog.Default().
type Options struct {
	// MasterKey seals provider credentials at rest with AES-256-GCM: 32
	// bytes (ParseMasterKey reads the forms GATEWAY_MASTER_KEY takes).
	// The first Open with a key records a check value sealed under it;
	// from then on Open fails with ErrWrongMasterKey under any other key.
	//
	// Nil means no sealing: Open refuses a database that holds sealed
	// values (ErrMasterKeyRequired), and so do the writes that would seal
	// one: a virtual key with a credential, and any saved config.
	MasterKey []byte

	// RefreshInterval is how often the store asks the database whether
	// another process changed it, and reloads its snapshot if so. Zero
	// means 1s, which puts a change made through another replica in
	// force here within about a second.
	RefreshInterval time.Duration

	// LogRetention, when positive, is how long request logs are kept: a
	// goroutine deletes older ones at Open and then every
	// LogRetentionInterval (zero: every 10 minutes), in batches. Zero
	// keeps them until the host deletes them (DeleteLogsBefore).
	LogRetention         time.Duration
	LogRetentionInterval time.Duration

	// CompactInterval is how often a SQLite store runs CompactLogs in
	// the background, from Open on: zero means every minute; a negative
	// value never, for a host that calls CompactLogs itself. Postgres
	// stores have nothing to compact.
	CompactInterval time.Duration

	// ErrorLog receives the errors of the background refresh, which keeps
	// serving the last snapshot while the database cannot be read. Nil
	// means slog.Default().
	ErrorLog *slog.Logger
}

// Store is every store of the gateway (see the package documentation)
// kept in SQLite or Postgres. See the package documentation for the DSN
// forms, the secrets stance and how replicas stay in step.
//
// Lookups (APIKey, APIKeyByID, APIKeys, VirtualKey, Config, Policies,
// Policy) are served from an in-process snapshot and never query the
// database; writes go to the database and refresh the snapshot before
// they return. A Store is safe for concurrent use.
type Store struct {
	db      *sql.DB
	dialect dialect
	seal    sealer
	errLog  *slog.Logger

	snap atomic.Pointer[snapshot] // never nil once Open returns

	stmts map[string]*sql.Stmt // prepared by Open, read-only after, closed by Close (see logStmt)

	todoDay atomic.Int64 // the day AddLogs last put on log_days_todo (logdays.go)

	reloadMu sync.Mutex // serialises reloads, so that snapshots replace each other in database order

	budgets budgetCache // usage-limits policies, read again when the generation moves (see usagelimits.go)

	stop          context.CancelFunc // stops the background goroutines
	done          chan struct{}      // closed when the refresh goroutine returns
	retentionDone chan struct{}      // closed when the retention goroutine returns; nil without one
	digestDone    chan struct{}      // closed when the CompactLogs goroutine returns; nil without one
	closeOnce     sync.Once
	closeErr      error
}

var (
	_ gateway.KeyStore        = (*Store)(nil)
	_ gateway.VirtualKeyStore = (*Store)(nil)
	_ gateway.ConfigStore     = (*Store)(nil)
	_ gateway.PolicyStore     = (*Store)(nil)

	_ admin.PolicyCompareAndSwapper = (*Store)(nil)
)

// defaultRefreshInterval is the RefreshInterval of the zero Options.
const defaultRefreshInterval = time.Second

// Open opens the database dsn names, brings its schema up to date, checks
// the master key and loads the snapshot, then starts the goroutine that
// keeps the snapshot in step with other processes until Close.
//
// dsn is a SQLite file path, or sqlite:PATH (the file is created, mode
// 0600, if it does not exist), or a postgres:// or postgresql:// URL.
//
// Open fails with a *SchemaVersionError if a newer binary migrated the
// database, ErrWrongMasterKey if its secrets were sealed under another
// key, and ErrMasterKeyRequired if it holds sealed secrets and
// opts.MasterKey is nil.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	seal, err := newSealer(opts.MasterKey)
	if err != nil {
		return nil, err
	}
	db, d, err := openDB(dsn)
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, dialect: d, seal: seal, errLog: opts.ErrorLog}
	if s.errLog == nil {
		s.errLog = slog.Default()
	}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.reload(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.prepareLogStmts(ctx); err != nil {
		for _, st := range s.stmts {
			st.Close()
		}
		db.Close()
		return nil, err
	}
	interval := opts.RefreshInterval
	if interval <= 0 {
		interval = defaultRefreshInterval
	}
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stop, s.done = stop, make(chan struct{})
	go s.refreshLoop(bg, interval)
	if opts.LogRetention > 0 {
		every := opts.LogRetentionInterval
		if every <= 0 {
			every = 10 * time.Minute
		}
		s.retentionDone = make(chan struct{})
		go s.retentionLoop(bg, opts.LogRetention, every)
	}
	if s.dialect == dialectSQLite && opts.CompactInterval >= 0 {
		every := opts.CompactInterval
		if every == 0 {
			every = digestInterval
		}
		s.digestDone = make(chan struct{})
		go s.digestLoop(bg, every)
	}
	return s, nil
}

// Close stops the background refresh and closes the database. Lookups
// keep answering from the last snapshot; writes fail. Close may be called
// more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.stop()
		<-s.done
		if s.retentionDone != nil {
			<-s.retentionDone
		}
		if s.digestDone != nil {
			<-s.digestDone
		}
		for _, st := range s.stmts {
			st.Close()
		}
		s.closeErr = s.db.Close()
	})
	return s.closeErr
}

// refreshLoop polls the database's generation every interval and reloads
// the snapshot when another process changed it. It logs the first error
// of a run of failures and the recovery, not every failed poll.
func (s *Store) refreshLoop(ctx context.Context, interval time.Duration) {
	defer close(s.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := s.Refresh(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && !failing:
			failing = true
			s.errLog.ErrorContext(ctx, "sqlstore: refreshing the snapshot failed; serving the last one", "err", err)
		case err == nil && failing:
			failing = false
			s.errLog.InfoContext(ctx, "sqlstore: refreshing the snapshot works again")
		}
	}
}

// Refresh reloads the snapshot now if the database changed since it was
// taken (by this process or another); otherwise it costs one small query.
// The background refresh calls it every Options.RefreshInterval; tests
// and hosts that need another replica's write in force at once may call
// it too.
func (s *Store) Refresh(ctx context.Context) error {
	var gen int64
	if err := s.db.QueryRowContext(ctx, `SELECT value FROM generation WHERE id = 1`).Scan(&gen); err != nil {
		return fmt.Errorf("sqlstore: reading the generation: %w", err)
	}
	if gen == s.snap.Load().gen {
		return nil
	}
	return s.catchUp(ctx)
}

// notFound reports whether err means no row.
func notFound(err error) bool { return errors.Is(err, sql.ErrNoRows) }

// Ping reports whether the database answers, for a readiness check. The
// lookups keep serving the last snapshot while it does not.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlstore: %w", err)
	}
	return nil
}
