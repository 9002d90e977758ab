package main

import (
	"net/http"
	"strings"

	"github.com/modelgateway/gateway/console"
)

// consolePath is where the server mounts the web console.
const consolePath = "/console"

// withConsole serves the web console (the console package) under
// /console/, reading and writing through api, the gateway, in-process;
// every other request goes to next as it came. A plain prefix test is
// used rather than an http.ServeMux, which would clean (and redirect)
// the provider paths passed through.
func withConsole(api, next http.Handler) http.Handler {
	c := console.New(api, console.Options{Path: consolePath})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == consolePath || strings.HasPrefix(r.URL.Path, consolePath+"/") {
			c.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
