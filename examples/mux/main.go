// Command mux shows the gateway mounted on a host's own http.ServeMux,
// beside routes that have nothing to do with it.
//
//	GATEWAY_API_KEY=gw-dev OPENAI_API_KEY=sk-... go run ./examples/mux [-addr 127.0.0.1:8080]
//
// The host serves /healthz and /app/ itself; everything under /v1/ goes to
// the gateway:
//
//	g := gateway.New(gateway.Options{Prefix: "/v1", Keys: store, ...})
//	admin.Mount(g, admin.Options{Keys: store, ...}) // the /v1/api-keys… routes
//	mux.Handle("/v1/", g)
//
// The pattern given to the host's mux and Options.Prefix must agree: the
// gateway sees the full request path (no http.StripPrefix) and treats
// whatever follows its prefix as the provider path, so /v1/chat/completions
// reaches the provider as <base URL>/chat/completions. Requests outside
// /v1/ never reach the gateway, so the host's routes need no gateway API
// key, and the gateway's errors (OpenAI-shaped JSON) apply only under
// /v1/.
//
// The store is built in code here, as a host with its own user database
// would: one admin API key (GATEWAY_API_KEY, or a random key printed once on
// standard error) and a virtual key "openai" holding OPENAI_API_KEY, sent
// to OPENAI_BASE_URL (default https://api.openai.com/v1). A client calls
//
//	curl -H 'x-gateway-api-key: gw-dev' -H 'x-gateway-virtual-key: openai' \
//	     -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}' \
//	     http://127.0.0.1:8080/v1/chat/completions
//
// Request logs are JSON lines on standard output; the host's messages,
// among them "gateway: listening on http://ADDR", go to standard error. On
// SIGINT or SIGTERM the server lets in-flight requests finish for up to
// 30 seconds, then exits 0.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/memstore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// A second signal ends the process at once.
		<-ctx.Done()
		stop()
	}()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run serves the host's mux until ctx is cancelled, then shuts down
// gracefully. Request logs go to stdout, everything else to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mux", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "`address` to listen on")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return fmt.Errorf("gateway: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("gateway: unexpected argument %q", fs.Arg(0))
	}

	store := memstore.New()
	key := os.Getenv("GATEWAY_API_KEY")
	if key == "" {
		key = "gw-" + rand.Text()
		fmt.Fprintf(stderr, "gateway: generated API key %s; set GATEWAY_API_KEY to keep it\n", key)
	}
	store.AddAPIKey(gateway.APIKey{ID: "key-default", Digest: gateway.HashAPIKey(key), WorkspaceID: "default", Role: gateway.RoleAdmin})
	baseURL := os.Getenv("OPENAI_BASE_URL")
	if baseURL == "" {
		baseURL = "https://api.openai.com/v1"
	}
	store.AddVirtualKey(gateway.VirtualKey{Slug: "openai", Provider: gateway.ProviderOpenAI, APIKey: os.Getenv("OPENAI_API_KEY"), BaseURL: baseURL})

	g := gateway.New(gateway.Options{
		Prefix:      "/v1", // must match the pattern below
		Keys:        store,
		VirtualKeys: store,
		Configs:     store,
		Policies:    store,
		LogSink:     gateway.SlogSink{Logger: slog.New(slog.NewJSONHandler(stdout, nil))},
		ErrorLog:    slog.New(slog.NewTextHandler(stderr, nil)),
	})
	defer g.Close()
	// The administration routes (/v1/api-keys, /v1/virtual-keys, /v1/configs,
	// /v1/policies/rate-limits) are a product of their own, mounted on the
	// gateway over the same store.
	admin.Mount(g, admin.Options{Keys: store, VirtualKeys: store, Configs: store, Policies: store})

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /app/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "the host's own page at %s\n", r.URL.Path)
	})
	mux.Handle("/v1/", g)

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	// No WriteTimeout: it would cut streamed completions, which may last
	// minutes. Request contexts do not derive from ctx, so a shutdown
	// signal lets streams finish instead of cancelling them.
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          log.New(stderr, "gateway: http: ", 0),
	}
	fmt.Fprintf(stderr, "gateway: listening on http://%s\n", ln.Addr())

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	select {
	case err := <-serveErr:
		return fmt.Errorf("gateway: %w", err)
	case <-ctx.Done():
	}
	fmt.Fprintln(stderr, "gateway: shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		fmt.Fprintln(stderr, "gateway: grace period expired; closed the remaining connections")
	}
	<-serveErr
	g.Close() // hands every queued request log to stdout
	fmt.Fprintln(stderr, "gateway: stopped")
	return nil
}
