package main

import (
	"net"
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
// the provider paths passed through. loopback says that the server
// listens on a loopback address only: the console's cookies are then not
// marked Secure, so that a browser on the same machine keeps them over
// plain http://127.0.0.1; on any other address they are, since the
// console is then meant to be reached through TLS. sessions keeps the
// console's sessions (the database, so that replicas share them and a
// restart signs nobody out); nil keeps them in memory.
func withConsole(api, next http.Handler, loopback bool, sessions console.SessionStore) http.Handler {
	c := console.New(api, console.Options{Path: consolePath, LoopbackOnly: loopback, Sessions: sessions})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == consolePath || strings.HasPrefix(r.URL.Path, consolePath+"/") {
			c.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackOnly reports whether the listener address a accepts loopback
// connections only (127.0.0.0/8 or ::1); an unspecified address (0.0.0.0,
// ::) listens everywhere.
func loopbackOnly(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}
