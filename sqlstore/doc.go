// Package sqlstore keeps the gateway's durable state in SQLite or
// Postgres: gateway API keys, virtual keys (provider credentials), saved
// configs with their versions, rate-limits policies, workspaces and the
// control plane's audit log, and request logs, feedback, log exports,
// usage-limits policies and their counters. One *Store implements
// gateway.KeyStore, admin.KeyStore, gateway.VirtualKeyStore,
// admin.VirtualKeyStore, gateway.ConfigStore, admin.ConfigStore,
// gateway.PolicyStore, admin.PolicyCompareAndSwapper,
// admin.WorkspaceStore, observe.AuditStore, observe.Store (with
// observe.Aggregator), observe.FeedbackStore, observe.ExportStore,
// budget.Store and budget.Counter; pass it as each of
// those in gateway.Options. It is also the prompt product's prompt.Store
// (prompts, partials, labels, collections and their versions), which is
// read from the database on every use rather than from the snapshot,
// the users product's users.Store (users, workspace members, invites
// and the keys of people's console sessions), read the same way, and
// the catalogue's catalog.Store (the organisation's integrations):
// a virtual key made from an integration (a provider) is held in the
// snapshot joined with it (catalog.Integration.Join), found only while
// the integration is granted to the key's workspace, at the cost of any
// virtual key's lookup.
//
// Load applies a store file (admin.Decode) as
// admin.Apply does, checked by the same rules: each entry it
// names is created or replaced, every other entry is left alone, all in
// one transaction. PutAPIKey, PutVirtualKey, PutConfig and PutPolicy
// create or replace one record, and the Delete methods remove one; a
// virtual key's slug and a config's id are unique within a workspace, as
// in memstore.Store. The control plane's writes (CreateAPIKey,
// UpdateVirtualKey, UpdateConfig, UpdateWorkspace…) are compare-and-swaps
// against the database, atomic across replicas.
//
// # Databases
//
// Open takes a DSN:
//
//   - a file path, or sqlite:PATH: a SQLite database, created with mode
//     0600 if absent, run in WAL mode with synchronous=FULL, a 10 s busy
//     timeout and foreign keys on (see "SQLite engines" below);
//   - postgres://… or postgresql://…: a Postgres database
//     (github.com/lib/pq), with the URL's usual parameters;
//     without sslmode, TLS is preferred, not required, as libpq does.
//
// The schema is embedded, one migration per version and dialect, and
// applied by Open in one transaction that records the version in the
// schema_version table (replicas opening one Postgres database at once
// queue on an advisory lock). A database whose schema is newer than this
// package knows is refused with a *SchemaVersionError naming both
// versions, rather than used by a binary that would lose what it holds.
//
// # SQLite engines
//
// SQLite comes in one of two engines, chosen when the program is built.
// A build with cgo (the default where a C compiler is installed) gets
// SQLite's C source compiled in (github.com/mattn/go-sqlite3): the
// smaller binary and the cheaper one to run. A build with
// CGO_ENABLED=0, or with the sqlite_wasm build tag, gets SQLite
// compiled to WebAssembly and translated to Go
// (github.com/ncruces/go-sqlite3): a static binary with no C toolchain,
// about 6 MB larger and slower to store request logs:
//
//	CGO_ENABLED=0 go build ./...
//	go build -tags sqlite_wasm ./...
//
// The two write the same database file, times as the same text, so a
// database moves from one engine to the other as it is.
//
// # Secrets at rest
//
// Gateway API keys are stored only as their SHA-256 digests, the form in
// which the gateway looks them up; a copy of the database cannot be used
// to authenticate. Provider credentials — a virtual key's APIKey,
// SecretAccessKey and SessionToken, an integration's key,
// secret_access_key and session_token, and the whole JSON of every saved
// config (which may hold api_key or an AWS key pair) — are sealed with
// AES-256-GCM under Options.MasterKey (32 bytes; ParseMasterKey reads the
// 64 hex digits or base64 of GATEWAY_MASTER_KEY): a random 12-byte nonce
// per value, stored as nonce||ciphertext, with the table, column and row
// id as additional data, so that a sealed value moved to another row
// does not open. Everything else (ids, slugs, workspace ids, hosts,
// access key ids, policies) is stored in clear.
//
// The first Open with a master key seals a check value in the meta
// table. From then on Open under another key fails with
// ErrWrongMasterKey, and without a key with ErrMasterKeyRequired: a wrong
// key is a start-up error, never garbage sent to a provider. A value that
// does not open (altered, or moved from another row) fails the load that
// meets it, naming the record and never the value. The store keeps the
// opened credentials in memory, as memstore.Store does. Protect the
// master key as you would the credentials themselves; losing it loses
// them (keys, policies and the rest stay readable).
//
// # Replicas
//
// Every lookup the gateway makes per request (APIKey, VirtualKey, Config,
// Policies) is served from an in-process snapshot: immutable maps behind
// an atomic pointer, read with no lock, no query and no allocation. A
// write goes to the database in a transaction that also bumps a
// generation counter and names the records it changed in a change log,
// and brings the snapshot up to date before it returns, so the writing
// process sees it at once. Catching up reads again only the records the
// log names since the snapshot's generation, and builds the next
// snapshot sharing every map no change touched: its cost grows with the
// changes, not with the store (a replica more than 100,000 generations
// behind reads everything). Control-plane reads that are not on the
// request path (VirtualKeys, Configs, ConfigVersions, Workspaces,
// AuditRecords) query the database. Each Store polls the generation every
// Options.RefreshInterval (1 s by default) and reloads its snapshot when
// another process changed it: several gateways on one Postgres database
// (or processes on one SQLite file) see each other's writes within about
// a second, and a revoked key stops working everywhere within 2 s. While
// the database cannot be read, a Store keeps serving its last snapshot
// and logs the failure once to Options.ErrorLog.
//
// Writes are serialised by the generation row's lock, which makes the
// compare-and-swap writes (CompareAndSwapPolicy, UpdateAPIKey) atomic
// across replicas.
//
// # Request logs and analytics
//
// AddLogs stores a batch of request logs in one transaction (the
// gateway's log writer calls it off the request path); a record whose id
// is stored already is skipped, so a retried batch is stored once. On
// SQLite these transactions commit with synchronous=NORMAL: a crash of
// the machine, not of the process, can lose the last batches.
// Options.LogRetention deletes older records in the background
// (DeleteLogsBefore).
//
// AggregateLogs computes the analytics routes' figures in SQL. On
// Postgres it reads the records. On SQLite, for the filters the rollups
// keep (workspace, time, status, model) it reads:
//
//   - hourly rollups (sums by workspace, hour, status, provider and model,
//     and by metadata pair), which AddLogs adds each batch to;
//   - latency digests (each hourly row's latencies, sorted and
//     compressed), from which percentiles are exact;
//   - daily rollups and digests of the days that ended;
//   - the records themselves for the parts of an hour at either end of
//     the window, and for any other filter.
//
// Digests and daily rollups are written by CompactLogs, which the store
// runs once a minute in the background: never on the request path, and
// never stale (a digest no longer matching its hour, or a day a late
// record or retention changed, is not read, and is written again).
package sqlstore
