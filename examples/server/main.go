package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"regexp"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/bedrock"
	"github.com/modelgateway/gateway/budget"
	"github.com/modelgateway/gateway/catalog"
	"github.com/modelgateway/gateway/console"
	"github.com/modelgateway/gateway/guardrail"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/observe"
	"github.com/modelgateway/gateway/prompt"
	"github.com/modelgateway/gateway/users"
)

func main() {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	ctx, shutdown := context.WithCancel(context.Background())
	force, hurry := context.WithCancel(context.Background())
	go func() {
		<-sig
		shutdown()
		<-sig
		hurry()
		// Restore the default handling, so that a third signal ends the
		// process even if the shutdown is stuck.
		signal.Stop(sig)
	}()
	setGCPercent(os.Getenv("GOGC"))
	if err := run(ctx, force, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Server limits. There is deliberately no WriteTimeout: it bounds the
// whole response, and a streamed completion may last minutes. Nor is there
// a ReadTimeout, which would cut large uploads streamed through to the
// provider. Slow clients are bounded by readHeaderTimeout before a request
// starts, by idleTimeout between requests, and while a response is written
// by the -write-timeout flag: a write to the client may block at most that
// long (see stallWriter), so a client that stops reading a stream releases
// its handler, its provider connection and its policy slot.
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 120 * time.Second
	maxHeaderBytes    = 64 << 10

	defaultWriteTimeout = 60 * time.Second // -write-timeout
	defaultDrain        = 5 * time.Second  // -drain
)

// run is the whole program: it parses args, builds the gateway and serves
// until ctx is cancelled, then drains and shuts down gracefully; cancelling
// force ends the drain and the grace period at once. Request logs go to
// stdout, everything else to stderr. It returns an error for bad flags, a
// bad config file, or an address it cannot listen on.
func run(ctx, force context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "`address` to listen on")
	configPath := fs.String("config", "", "JSON config `file` (API keys, virtual keys, configs, policies, custom hosts) whose entries are created or replaced in the -db store at every start, others left alone; an api_keys entry without workspace_id is an organisation key")
	demo := fs.Bool("demo", false, "also start a fake OpenAI-compatible provider on loopback, add the virtual key demo for it and print a curl command that calls it")
	drain := fs.Duration("drain", defaultDrain, "how long the server keeps serving after SIGINT or SIGTERM with /readyz answering 503, before it closes its listener")
	grace := fs.Duration("grace", 30*time.Second, "how long in-flight requests and streams may run once the listener is closed")
	writeTimeout := fs.Duration("write-timeout", defaultWriteTimeout, "how long one write to a client may block before its connection is dropped (0: no limit)")
	requestLog := fs.String("request-log", "stdout", "where the JSON line per request goes: `stdout` or off")
	adminAddr := fs.String("admin-addr", "", "`address` of the operators' listener serving /metrics and /debug/pprof/ (empty: none)")
	pricesPath := fs.String("prices", "", "JSON `file` of model prices in USD per 1M tokens, {\"provider/model\": {\"input\": 2.5, \"output\": 10}}, replacing the built-in table")
	dbFlag := fs.String("db", defaultDB, "the `DSN` of the database that keeps the gateway's state: a SQLite file path or sqlite:PATH, a postgres:// URL, or :memory: for none (nothing survives a restart); "+
		"the default holds with or without -config, and only -demo without -db runs in memory")
	publicURL := fs.String("public-url", "", "the `URL` at which clients reach this gateway, such as https://gateway.example.com, that the signed URLs it hands out (log export downloads) start with "+
		"(empty: they are relative paths); never taken from a request's Host or X-Forwarded-* headers")
	storeLogs := fs.Bool("store-logs", true, "keep every data-plane request's record in the store, for GET /logs (false: the -request-log line only)")
	logBodies := fs.Bool("log-bodies", false, "keep each data-plane request's body and its answer's in its stored record, for GET /logs/{id}: capped (-log-body-max), credentials redacted")
	logBodyMax := fs.Int("log-body-max", 16<<10, "the most `bytes` of each body -log-bodies keeps")
	logRetention := fs.Duration("log-retention", 720*time.Hour, "how long a database keeps request logs; older ones are deleted in batches (0: kept until deleted by hand)")
	otelEndpoint := fs.String("otel-endpoint", "", "`URL` of an OpenTelemetry collector's OTLP/HTTP endpoint, such as http://localhost:4318, to which a span per request is exported (empty: no tracing)")
	oidcIssuer := fs.String("oidc-issuer", "", "the issuer `URL` of an OpenID Connect provider through which people sign in to the console (with -oidc-client-id, -oidc-client-secret and -public-url; empty: none)")
	oidcClientID := fs.String("oidc-client-id", "", "the console's client `id` at the -oidc-issuer provider")
	oidcSecret := fs.String("oidc-client-secret", "", "the console's client `secret` at the -oidc-issuer provider (or the environment's GATEWAY_OIDC_CLIENT_SECRET)")
	redisURL := fs.String("redis", "", "redis://HOST:PORT/DB `URL` of a Redis that keeps the rate-limit buckets, the budget counters, the response cache and the circuit breakers, shared by every replica using it (empty: in memory, per process)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return fmt.Errorf("gateway: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("gateway: unexpected argument %q", fs.Arg(0))
	}
	if *grace < 0 {
		return errors.New("gateway: -grace must not be negative")
	}
	if *drain < 0 {
		return errors.New("gateway: -drain must not be negative")
	}
	if *writeTimeout < 0 {
		return errors.New("gateway: -write-timeout must not be negative")
	}
	sink, err := requestLogSink(*requestLog, stdout)
	if err != nil {
		return err
	}
	spec, err := parseDB(chooseDB(*dbFlag, flagSet(fs, "db"), *demo))
	if err != nil {
		return err
	}
	if *demo && spec.kind != dbMemory {
		return errors.New("gateway: -demo keeps its fake provider and virtual key in memory, and runs only with -db :memory: (its default)")
	}
	if err := checkPublicURL(*publicURL); err != nil {
		return err
	}
	oidc, err := consoleOIDC(*oidcIssuer, *oidcClientID, *oidcSecret, *publicURL)
	if err != nil {
		return err
	}
	var file *admin.File
	if *configPath != "" {
		if file, err = readConfig(*configPath, stderr); err != nil {
			return err
		}
	}

	errLog := slog.New(slog.NewTextHandler(stderr, nil))
	tr, err := startTracing(ctx, *otelEndpoint, errLog)
	if err != nil {
		return err
	}
	defer tr.shutdown(stderr) // after the gateway, whose requests end spans, has stopped
	var opts gateway.Options
	var prods products
	if *redisURL != "" {
		rc, err := openRedis(ctx, *redisURL)
		if err != nil {
			return err
		}
		defer rc.Close() // after the gateway, whose requests use it, has stopped
		setRedis(&opts, &prods.budget, rc)
	}
	st, err := openBackend(ctx, spec, *logRetention, errLog, stderr)
	if err != nil {
		return err
	}
	defer closeBackend(st, stderr) // after the gateway has stopped
	fmt.Fprintf(stderr, "gateway: state kept %s\n", spec.where())
	key, err := loadState(ctx, st, file, *configPath, *demo, stderr)
	if err != nil {
		return err
	}
	var allow []string
	if file != nil {
		allow = file.CustomHosts.Allow
	}
	var curl string // the demo's command, once the address is known
	if *demo {
		fake, err := startDemo(st.mem)
		if err != nil {
			return err
		}
		defer fake.Close() // after the server, whose requests it answers, has stopped
		fmt.Fprintf(stderr, "gateway: demo: a fake OpenAI-compatible provider listens on %s (virtual key demo)\n", fake.URL)
	}

	setStores(&opts, &prods, st.store())
	prods.observe.PublicURL, prods.observe.URLSigningKey = *publicURL, st.urlSigningKey
	prods.users.PublicURL = *publicURL
	if !*storeLogs {
		prods.observe.Logs = nil
	}
	if *logBodyMax <= 0 {
		return errors.New("gateway: -log-body-max must be above 0")
	}
	opts.LogBodies, opts.LogBodyMax = *logBodies, *logBodyMax
	if *pricesPath != "" {
		if opts.Prices, err = readPrices(*pricesPath); err != nil {
			return err
		}
	}
	// With an admin listener, the request logs also feed /metrics there.
	var metrics *gatewayMetrics
	if *adminAddr != "" {
		metrics = newGatewayMetrics(sink)
		sink = metrics.collector
	}
	tr.instrument(&opts)
	g, routes := newGateway(opts, prods, allow, sink, errLog)
	defer g.Close()
	defer routes.Close() // before the gateway: stops the log exports running here
	if metrics != nil {
		metrics.watch(g)
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	if *demo {
		curl = demoCurl(ln.Addr(), key)
	}
	// serving is read-locked by every request being served, so that after
	// a forced close run can wait for the cut requests to be logged.
	var serving sync.RWMutex
	var ready atomic.Bool
	ready.Store(true)
	srv := &http.Server{
		Handler: serverHandler(withConsole(g, tr.handler(g), console.Options{LoopbackOnly: loopbackOnly(ln.Addr()), Sessions: st.consoleSessions(),
			Users: prods.users.Store, OIDC: oidc, Audit: prods.audit}), &serving, *writeTimeout, &ready, st.ping),
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          log.New(stderr, "gateway: http: ", 0),
		ConnContext:       connContext,
		// Every request must reach the handler, which takes one framing
		// verdict per request of a connection: net/http's own answer to
		// "OPTIONS *" would skip it.
		DisableGeneralOptionsHandler: true,
		// BaseContext is left alone on purpose: request contexts must not
		// derive from ctx, or the shutdown signal would cancel every
		// stream at once instead of letting it finish.
	}
	if *adminAddr != "" {
		admin, err := serveAdmin(*adminAddr, metrics.handler(), adminReadyz(&ready, st.ping, g), stderr)
		if err != nil {
			return err
		}
		defer admin.Close()
	}
	announced := make(chan struct{})
	srv.RegisterOnShutdown(func() {
		// Shutdown calls this once the listener is closed.
		fmt.Fprintf(stderr, "gateway: shutting down; in-flight requests have %s to finish\n", *grace)
		close(announced)
	})
	fmt.Fprintf(stderr, "gateway: listening on http://%s\n", ln.Addr())
	if curl != "" {
		fmt.Fprintf(stderr, "gateway: demo: try\n%s\n", curl)
	}

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(framingListener{ln}) }()
	select {
	case err := <-serveErr:
		return fmt.Errorf("gateway: %w", err)
	case <-ctx.Done():
	}

	// Drain: load balancers see /readyz fail and stop sending, while what
	// they still send is served. Keep-alive connections close after their
	// current response, idle ones at once, so clients move elsewhere.
	ready.Store(false)
	srv.SetKeepAlivesEnabled(false)
	if *drain > 0 {
		fmt.Fprintf(stderr, "gateway: draining for %s: /readyz answers 503, requests are still served; a second signal stops at once\n", *drain)
		t := time.NewTimer(*drain)
		select {
		case <-t.C:
		case <-force.Done():
		}
		t.Stop()
	}

	sctx, cancel := context.WithTimeout(context.Background(), *grace)
	defer cancel()
	stopForcing := context.AfterFunc(force, cancel)
	defer stopForcing()
	err = srv.Shutdown(sctx)
	<-announced
	if err != nil {
		// The grace period ran out, or a second signal came: cut what is
		// left. The process still exits 0, since stopping was what was
		// asked for.
		srv.Close()
		// Wait for the cut requests, which see their connections closed and
		// return, so that their logs are written too.
		serving.Lock()
		//lint:ignore SA2001 the empty critical section is the wait
		serving.Unlock()
		why := "grace period expired"
		if force.Err() != nil {
			why = "second signal"
		}
		fmt.Fprintf(stderr, "gateway: %s; closed the remaining connections\n", why)
	}
	<-serveErr     // http.ErrServerClosed
	routes.Close() // stops the log exports running here
	g.Close()      // hands every queued request log to stdout and the store
	// Counted here too, so that a run without -admin-addr (whose /metrics
	// and /readyz?verbose count them as it goes) says whether every
	// request's log was kept.
	fmt.Fprintf(stderr, "gateway: request logs dropped: %d\n", g.DroppedLogs())
	fmt.Fprintln(stderr, "gateway: stopped")
	return nil
}

// requestLogSink returns the sink of the -request-log mode: one JSON line
// per request on stdout for "stdout", none (nil) for "off".
func requestLogSink(mode string, stdout io.Writer) (gateway.LogSink, error) {
	switch mode {
	case "stdout":
		return gateway.JSONLineSink{W: stdout}, nil
	case "off":
		return nil, nil
	default:
		return nil, fmt.Errorf("gateway: -request-log must be stdout or off, not %q", mode)
	}
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// newGateway returns the gateway the server runs: opts, which holds its
// stores and shared state, with the server's extra providers, the custom
// hosts in allow, and its logs; and the products of p: the budgets
// (priced as opts prices the logs), the first of its admissions, and the
// administration and observability routes, writes audited in p.audit,
// the request logs stored in p.observe.Logs; the prompts and the
// catalogue; and the guardrails, when the store keeps them.
func newGateway(opts gateway.Options, p products, allow []string, sink gateway.LogSink, errLog *slog.Logger) (*gateway.Gateway, *observe.Routes) {
	opts.Providers = providers()
	opts.CustomHostAllow = allow
	opts.LogSink = sink
	opts.ErrorLog = errLog
	b := p.budget
	b.Prices, b.ErrorLog = opts.Prices, errLog
	budgets := budget.New(b)
	opts.Admissions = append([]gateway.Admission{budgets}, opts.Admissions...)
	obs := p.observe
	if obs.Logs != nil {
		opts.LogSinks = append(opts.LogSinks, observe.Sink(obs.Logs))
	}
	var hooks *guardrail.Hooks
	if p.guardrails != nil {
		hooks = &guardrail.Hooks{Store: p.guardrails, Feedback: obs.Feedback, ErrorLog: errLog}
		opts.Hooks = hooks
	}
	g := gateway.New(opts)
	audit := &observe.Auditor{Store: p.audit, ErrorLog: errLog}
	a := p.admin
	a.ErrorLog, a.Audit = errLog, audit
	if hooks != nil {
		a.Guardrails = hooks // the guardrail ids keys, workspaces and configs name are checked when written
	}
	admin.Mount(g, a)
	budgets.Mount(g, audit)
	pr := p.prompt
	pr.Audit, pr.ErrorLog = audit, errLog
	prompt.Mount(g, pr)
	us := p.users
	us.Audit, us.ErrorLog, us.ConsolePath = audit, errLog, consolePath
	users.Mount(g, us)
	c := p.catalog
	c.Audit, c.ErrorLog, c.Prices = audit, errLog, opts.Prices
	catalog.Mount(g, c)
	if hooks != nil {
		hooks.Auditor = audit
		hooks.Mount(g)
	}
	obs.Audit = audit
	obs.ErrorLog = errLog
	return g, observe.Mount(g, obs)
}

// closeBackend closes the store once the server has stopped, and reports
// a failure on stderr.
func closeBackend(st *backend, stderr io.Writer) {
	if err := st.Close(); err != nil {
		fmt.Fprintf(stderr, "gateway: closing %s: %v\n", st.name, err)
	}
}

// serverHandler returns the handler the http.Server runs: g, behind the
// health probes (see health, which reads ready and calls ping, the
// store's check) and the refusal of requests with ambiguous framing (see
// refuseAmbiguousFraming), with each write to the client bounded by
// writeTimeout (0: no limit; see stallWriter), and each request holding
// serving read-locked while it is served, so that after a forced close
// run can wait for the cut requests to be logged.
func serverHandler(g http.Handler, serving *sync.RWMutex, writeTimeout time.Duration, ready *atomic.Bool, ping func(context.Context) error) http.Handler {
	h := refuseAmbiguousFraming(health(ready, ping, g))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serving.RLock()
		defer serving.RUnlock()
		if writeTimeout > 0 {
			var moved *time.Time // the connection's, in HTTP/1.x, which serves a request at a time
			if fc, ok := r.Context().Value(framingConnKey{}).(*framingConn); ok && r.ProtoMajor == 1 {
				moved = &fc.deadlineMoved
			}
			sw := newStallWriter(w, writeTimeout, moved)
			defer sw.extend() // bounds the server's own final flush too
			w = sw
		}
		h.ServeHTTP(w, r)
	})
}

// readyPingTimeout bounds the store check of one /readyz probe.
const readyPingTimeout = 2 * time.Second

// health answers the probes of orchestrators and load balancers, and hands
// every other request to next: GET (or HEAD) /healthz answers 200 while
// the process runs; /readyz answers 200 while ready holds true and ping
// (the store's check) succeeds within 2 s, and 503 once the shutdown has
// begun or while the store does not answer. Neither asks for a key nor
// says anything about the server, and neither reaches the gateway, so
// neither is request-logged.
func health(ready *atomic.Bool, ping func(context.Context) error, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" && r.URL.Path != "/readyz" {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			w.WriteHeader(http.StatusMethodNotAllowed)
			io.WriteString(w, "method not allowed\n")
			return
		}
		if r.URL.Path == "/readyz" && !ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "draining\n")
			return
		}
		if r.URL.Path == "/readyz" && !storeAnswers(r.Context(), ping) {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "unavailable\n")
			return
		}
		io.WriteString(w, "ok\n")
	})
}

// storeAnswers reports whether ping succeeds within readyPingTimeout.
// The failure itself is not logged here: a store that cannot be read
// logs it once on its own (sqlstore.Options.ErrorLog), while probes come
// every few seconds.
func storeAnswers(ctx context.Context, ping func(context.Context) error) bool {
	ctx, cancel := context.WithTimeout(ctx, readyPingTimeout)
	defer cancel()
	return ping(ctx) == nil
}

// providers returns the provider kinds this server adds to the gateway's
// built-in ones, by slug.
func providers() map[string]gateway.Provider {
	return map[string]gateway.Provider{
		// Extra provider kinds are registered here, beside the built-in
		// ones. Bedrock lives in its own module so that the core does not
		// depend on the AWS SDK.
		gateway.ProviderBedrock: bedrock.New(bedrock.Options{}),
	}
}

// envRef matches the ${VAR} references admin.Decode expands.
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// readConfig reads and checks the config file at path. It warns on stderr
// about ${VAR} references to unset variables (naming the variable, never a
// value), since they expand to empty strings.
func readConfig(path string, stderr io.Writer) (*admin.File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gateway: config: %w", err)
	}
	seen := make(map[string]bool)
	for _, m := range envRef.FindAllSubmatch(data, -1) {
		name := string(m[1])
		if _, ok := os.LookupEnv(name); !ok && !seen[name] {
			seen[name] = true
			fmt.Fprintf(stderr, "gateway: warning: %s refers to ${%s}, which is not set\n", path, name)
		}
	}
	f, err := admin.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	// The entries are checked here, with admin.Apply's rules, so
	// that a bad file fails before any database is opened or changed.
	if err := admin.Apply(context.Background(), f, memstore.New()); err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return f, nil
}

// serveAdmin serves the operators' endpoints on their own listener, kept
// apart from the gateway's so that it can stay on a private address:
// /metrics for Prometheus (see gatewayMetrics), /readyz (with ?verbose,
// the health of each target: see adminReadyz) and /debug/pprof/, which
// profiles the running server. It asks for no key; whoever reaches the
// address may read the metrics and target health and profile the process.
func serveAdmin(addr string, metrics, readyz http.Handler, stderr io.Writer) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("gateway: -admin-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("GET /metrics", metrics)
	mux.Handle("/readyz", readyz)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: readHeaderTimeout, ErrorLog: log.New(stderr, "gateway: admin: ", 0)}
	fmt.Fprintf(stderr, "gateway: admin listening on http://%s\n", ln.Addr())
	go srv.Serve(ln)
	return srv, nil
}
