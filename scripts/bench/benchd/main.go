// Command benchd is the other half of scripts/bench.sh: the instant mock
// provider the servers under test call, and the bare httputil.ReverseProxy
// the gateway is compared with. Both listen on loopback only.
//
//	benchd -mode mock  -addr 127.0.0.1:18101
//	benchd -mode proxy -addr 127.0.0.1:18102 -upstream http://127.0.0.1:18101
//
// The mock answers every POST with the same small chat completion, usage
// included, so that the gateway reads its tokens as it would a provider's.
// The proxy is the thinnest Go reverse proxy that can carry the load: the
// standard one, with an upstream connection pool sized for it (the default
// of 2 idle connections per host would dial most requests anew). Both
// answer GET /health.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
)

// completion is the mock's answer to every request.
const completion = `{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello from the bench mock"},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":5,"completion_tokens":6,"total_tokens":11}}`

func main() {
	mode := flag.String("mode", "", "mock or proxy")
	addr := flag.String("addr", "", "loopback `address` to listen on")
	upstream := flag.String("upstream", "", "the proxy's upstream base `URL`")
	flag.Parse()
	if err := run(*mode, *addr, *upstream); err != nil {
		fmt.Fprintln(os.Stderr, "benchd:", err)
		os.Exit(2)
	}
}

func run(mode, addr, upstream string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-addr %q: a loopback address only", addr)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	switch mode {
	case "mock":
		mux.HandleFunc("POST /", func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, completion)
		})
	case "proxy":
		target, err := url.Parse(upstream)
		if err != nil || target.Host == "" {
			return fmt.Errorf("-upstream %q: an absolute URL is needed", upstream)
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns = 1024
		tr.MaxIdleConnsPerHost = 1024
		mux.Handle("/", &httputil.ReverseProxy{
			Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
			Transport: tr,
		})
	default:
		return fmt.Errorf("-mode %q: mock or proxy", mode)
	}
	log.Printf("benchd %s on http://%s", mode, addr)
	return http.ListenAndServe(addr, mux)
}
