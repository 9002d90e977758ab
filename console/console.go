// Package console is the gateway's web console: pages where a platform
// team watches traffic, finds a request by its trace id and manages keys,
// virtual keys and configs. A host mounts it beside the
// gateway, the way net/http/pprof is mounted:
//
//	g := gateway.New(opts)
//	admin.Mount(g, admin.Options{Keys: store, ...}) // the routes of the key, virtual key and config pages
//	mux := http.NewServeMux()
//	mux.Handle("/console/", console.New(g, console.Options{}))
//	mux.Handle("/", g)
//
// The console reads and writes nothing on its own: every figure and every
// change goes through the gateway's own HTTP API, called in-process with
// the signed-in key, so the API's scopes and workspace rules apply exactly
// (a workspace key sees only its workspace; a key without a scope sees
// the API's 403 on that page), and no number can differ from the API's
// answer for the same filters. The pages of keys, virtual keys and
// configs call the routes that package admin mounts on the gateway: a host
// that offers those pages mounts them too.
//
// # Security
//
// A person signs in with a gateway API key that holds logs.read, or,
// with Options.Users, as a user: with their email and password (argon2id,
// RFC 9106's second recommended parameters: 64 MiB, 3 passes, 4 lanes),
// or through the operator's OpenID Connect provider (Options.OIDC), by
// an ID token whose email is verified and is a user's or that of a
// pending invitation. A user's session is authorised by a key of its
// own: at sign-in the console makes a random session key
// (users.NewSessionKey), kept as a digest in Options.Users, which the
// gateway resolves through users.Keys to the person's role as it is at
// each request (an owner or admin acts as an organisation key of every
// scope, a member within their workspace with their role's scopes). It
// is no API key: no list shows it, it lasts as long as the session, and
// signing out deletes it. Wrong passwords are counted per client address
// and per account like wrong keys, but a sign-in beyond the limits is
// refused even with the right password, since passwords, unlike keys,
// can be guessed. An invitation's page (/invite/{token}) sets the
// person's name and password and creates the user, once.
//
// The key
// stays on the server, in a session (see Options.Sessions); the browser
// gets only a random 256-bit session id in a cookie that is HttpOnly,
// SameSite=Strict, scoped to the console's path, Secure (unless
// Options.LoopbackOnly says the console is reached on loopback only and
// the request is plain HTTP), and lasts Options.SessionTTL (12 hours).
// Every form carries a per-session CSRF token, compared in constant time.
// Every answer carries Content-Security-Policy: default-src 'self' (no
// inline script or style is used), X-Content-Type-Options: nosniff,
// Referrer-Policy: no-referrer and, for pages, Cache-Control: no-store. A
// correct key always signs in; wrong keys are counted per client address
// (the connection's peer: X-Forwarded-For is not trusted) and in total,
// and answered 429 beyond the limits. Sessions live in Options.Sessions
// (the gateway's database, with sqlstore, the key sealed) so that
// replicas share them, or else in one process: replicas behind a load
// balancer then need sticky sessions, and a restart signs everyone out.
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/modelgateway/gateway/observe"
	"github.com/modelgateway/gateway/users"
)

// Options configure a console. The zero value is a console mounted at
// /console in front of a gateway whose prefix is /v1.
type Options struct {
	// Path is where the host mounts the console, e.g. "/console"; every
	// link the console writes starts with it. Empty means "/console".
	Path string

	// APIPrefix is the gateway's Options.Prefix, under which the console
	// calls the API. Empty means "/v1"; "/" means the root.
	APIPrefix string

	// LoopbackOnly says that the host serves the console on loopback
	// addresses only (127.0.0.1, ::1): its cookies are then marked Secure
	// only on requests that arrived over TLS, so that a browser on the
	// same machine keeps them over plain http://127.0.0.1. False (a
	// console reachable from elsewhere, which belongs behind TLS, often a
	// proxy that terminates it) marks every cookie Secure: a browser never
	// sends it over plain HTTP, where the session id could be read.
	LoopbackOnly bool

	// SessionTTL is how long a session lasts from sign-in. Zero means 12
	// hours.
	SessionTTL time.Duration

	// Sessions keeps the sessions, so that replicas share them and a
	// restart signs nobody out: sqlstore.Store does, in the gateway's
	// database, with the signed-in keys sealed. Nil means in this
	// process's memory: replicas then need sticky sessions, and a restart
	// signs everyone out.
	Sessions SessionStore

	// MaxSessions bounds the sessions held at once in memory (without
	// Sessions); signing in beyond it ends the session closest to its
	// end. Zero means 10000.
	MaxSessions int

	// SignInFailures is how many wrong keys one client address may send
	// per minute before its wrong keys are answered 429 instead of 401
	// until the minute ends. A correct key always signs in. Zero means 5.
	SignInFailures int

	// GlobalSignInFailures is the same bound for all clients together.
	// Zero means 100.
	GlobalSignInFailures int

	// Users lets people sign in with an email and a password, take up
	// an invitation on the /invite/{token} page and, with OIDC, through
	// the operator's identity provider: it is where the console finds
	// their accounts and keeps their sessions' keys (see the package
	// documentation). The host finds those keys with users.Keys in
	// gateway.Options.Keys. Nil means API keys only.
	Users users.Store

	// OIDC, with Users, adds a "Sign in with" button for the operator's
	// OpenID Connect provider. Nil means none.
	OIDC *OIDC

	// Audit records the users the console creates from invites (the
	// only writes it makes without the API), as users.create by the new
	// user's session key id, never with the invite's token. Nil records
	// nothing.
	Audit observe.AuditStore

	// Now returns the current time. Nil means time.Now; tests move the
	// clock of sessions and sign-in limits.
	Now func() time.Time
}

//go:embed templates/*.html static/*
var files embed.FS

// console is the handler New returns. It is safe for concurrent use.
type console struct {
	api      http.Handler
	opts     Options
	base     string // Options.Path resolved, without a trailing slash
	prefix   string // Options.APIPrefix resolved, without a trailing slash
	mux      *http.ServeMux
	static   http.Handler
	sessions *sessions
	pages    func() map[string]pageTemplate // parsedPages, but for tests
	limiter  *failureLimiter
	accounts *failureLimiter // wrong passwords per account
	hashing  chan struct{}   // bounds the password hashes computed at once
	oidc     *oidcClient     // nil without Options.OIDC
}

// New returns the console as an http.Handler serving everything under
// opts.Path, reading and writing through api, the gateway's handler (a
// *gateway.Gateway), in-process. It panics if opts.Path or opts.APIPrefix
// is not an absolute path.
func New(api http.Handler, opts Options) http.Handler {
	c := &console{api: api, opts: opts}
	c.base = strings.TrimSuffix(opts.Path, "/")
	if opts.Path == "" {
		c.base = "/console"
	}
	c.prefix = strings.TrimSuffix(opts.APIPrefix, "/")
	if opts.APIPrefix == "" {
		c.prefix = "/v1"
	}
	for _, p := range []string{c.base, c.prefix} {
		if p != "" && (!strings.HasPrefix(p, "/") || strings.ContainsAny(p, "{}?# ")) {
			panic("console: Options.Path and Options.APIPrefix must be absolute paths")
		}
	}
	if c.base == "" {
		panic("console: Options.Path must not be the root")
	}
	if c.opts.SessionTTL <= 0 {
		c.opts.SessionTTL = 12 * time.Hour
	}
	if c.opts.MaxSessions <= 0 {
		c.opts.MaxSessions = 10000
	}
	if c.opts.SignInFailures <= 0 {
		c.opts.SignInFailures = 5
	}
	if c.opts.GlobalSignInFailures <= 0 {
		c.opts.GlobalSignInFailures = 100
	}
	if c.opts.Now == nil {
		c.opts.Now = time.Now
	}
	store := c.opts.Sessions
	if store == nil {
		store = newMemorySessions(c.opts.MaxSessions, c.opts.Now)
	}
	c.sessions = &sessions{store: store, ttl: c.opts.SessionTTL, now: c.opts.Now}
	c.limiter = newFailureLimiter(c.opts.SignInFailures, c.opts.GlobalSignInFailures, time.Minute, c.opts.Now)
	c.accounts = newFailureLimiter(c.opts.SignInFailures, c.opts.GlobalSignInFailures, time.Minute, c.opts.Now)
	c.hashing = make(chan struct{}, 2)
	if c.opts.OIDC != nil && c.opts.Users != nil {
		c.oidc = newOIDCClient(*c.opts.OIDC)
	}
	c.pages = parsedPages
	static, _ := fs.Sub(files, "static")
	c.static = http.StripPrefix(c.base+"/static/", http.FileServerFS(static))
	c.routes()
	return c
}

// routes registers the console's pages under c.base.
func (c *console) routes() {
	b := c.base
	m := http.NewServeMux()
	m.HandleFunc("GET "+b+"/static/", c.serveStatic)
	m.HandleFunc("GET "+b+"/signin", c.signInPage)
	m.HandleFunc("POST "+b+"/signin", c.signIn)
	m.HandleFunc("POST "+b+"/signout", c.signedIn(c.signOut))
	m.HandleFunc("GET "+b+"/invite/{token}", c.invitePage)
	m.HandleFunc("POST "+b+"/invite/{token}", c.acceptInvite)
	m.HandleFunc("GET "+b+"/oidc/signin", c.oidcStart)
	m.HandleFunc("GET "+b+"/oidc/callback", c.oidcCallback)
	m.HandleFunc("GET "+b+"/users", c.signedIn(c.usersPage))
	m.HandleFunc("POST "+b+"/users/invites", c.signedIn(c.createInvite))
	m.HandleFunc("POST "+b+"/users/invites/{id}/{action}", c.signedIn(c.changeInvite))
	m.HandleFunc("POST "+b+"/users/{id}/{action}", c.signedIn(c.changeUser))
	m.HandleFunc("GET "+b+"/{$}", c.signedIn(c.overview))
	m.HandleFunc("GET "+b+"/logs", c.signedIn(c.logs))
	m.HandleFunc("GET "+b+"/logs/{id}", c.signedIn(c.logDetail))
	m.HandleFunc("GET "+b+"/api-keys", c.signedIn(c.apiKeys))
	m.HandleFunc("POST "+b+"/api-keys", c.signedIn(c.createAPIKey))
	m.HandleFunc("GET "+b+"/api-keys/{id}/{action}", c.signedIn(c.confirmAPIKey))
	m.HandleFunc("POST "+b+"/api-keys/{id}/{action}", c.signedIn(c.changeAPIKey))
	m.HandleFunc("GET "+b+"/virtual-keys", c.signedIn(c.virtualKeys))
	m.HandleFunc("POST "+b+"/virtual-keys", c.signedIn(c.createVirtualKey))
	m.HandleFunc("GET "+b+"/virtual-keys/{slug}/{action}", c.signedIn(c.confirmVirtualKey))
	m.HandleFunc("POST "+b+"/virtual-keys/{slug}/{action}", c.signedIn(c.changeVirtualKey))
	m.HandleFunc("GET "+b+"/configs", c.signedIn(c.configs))
	m.HandleFunc("POST "+b+"/configs", c.signedIn(c.createConfig))
	m.HandleFunc("GET "+b+"/configs/{slug}", c.signedIn(c.configDetail))
	m.HandleFunc("POST "+b+"/configs/{slug}", c.signedIn(c.updateConfig))
	m.HandleFunc("GET "+b+"/configs/{slug}/delete", c.signedIn(c.confirmDeleteConfig))
	m.HandleFunc("POST "+b+"/configs/{slug}/delete", c.signedIn(c.deleteConfig))
	m.HandleFunc("GET "+b+"/prompts", c.signedIn(c.prompts))
	m.HandleFunc("GET "+b+"/prompts/{id}", c.signedIn(c.promptDetail))
	m.HandleFunc("POST "+b+"/prompts/{id}", c.signedIn(c.promptDetail))
	m.HandleFunc("GET "+b+"/guardrails", c.signedIn(c.guardrails))
	m.HandleFunc("GET "+b+"/guardrails/{id}", c.signedIn(c.guardrailDetail))
	m.HandleFunc("GET "+b+"/workspaces", c.signedIn(c.workspaces))
	m.HandleFunc("GET "+b+"/integrations", c.signedIn(c.integrations))
	m.HandleFunc("GET "+b+"/integrations/{slug}", c.signedIn(c.integrationDetail))
	m.HandleFunc("GET "+b+"/providers", c.signedIn(c.providers))
	m.HandleFunc("GET "+b+"/models", c.signedIn(c.models))
	m.HandleFunc("GET "+b+"/policies", c.signedIn(c.policies))
	m.HandleFunc("GET "+b+"/audit", c.signedIn(c.audit))
	m.HandleFunc(b+"/", c.notFound)
	m.HandleFunc("GET "+b, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, b+"/", http.StatusMovedPermanently)
	})
	c.mux = m
}

// ServeHTTP sets the security headers every answer carries and serves r.
func (c *console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	c.mux.ServeHTTP(w, r)
}

// serveStatic serves the embedded style sheet and script, which hold no
// data and may be cached for a day.
func (c *console) serveStatic(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/") {
		c.notFound(w, r) // no directory listing
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=86400")
	c.static.ServeHTTP(w, r)
}

func (c *console) notFound(w http.ResponseWriter, r *http.Request) {
	s, _ := c.session(r)
	c.render(w, r, http.StatusNotFound, "error", s, &pageData{Title: "Not found",
		Error: "There is no console page at " + r.URL.Path + "."})
}
