package main

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/modelgateway/gateway/console"
)

// consolePath is where the server mounts the web console.
const consolePath = "/console"

// withConsole serves the web console (the console package) under
// /console/, reading and writing through api, the gateway, in-process;
// every other request goes to next as it came. A plain prefix test is
// used rather than an http.ServeMux, which would clean (and redirect)
// the provider paths passed through. LoopbackOnly says that the server
// listens on a loopback address only: the console's cookies are then not
// marked Secure, so that a browser on the same machine keeps them over
// plain http://127.0.0.1; on any other address they are, since the
// console is then meant to be reached through TLS. Sessions keeps the
// console's sessions (the database, so that replicas share them and a
// restart signs nobody out); nil keeps them in memory. o holds those
// (LoopbackOnly, Sessions), and the people who may sign in (Users, OIDC).
func withConsole(api, next http.Handler, o console.Options) http.Handler {
	o.Path = consolePath
	c := console.New(api, o)
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

// consoleOIDC returns the console's OIDC sign-in of the -oidc-* flags:
// nil without -oidc-issuer; otherwise the client id and secret (the flag,
// else GATEWAY_OIDC_CLIENT_SECRET) and -public-url, on which the
// provider sends people back to /console/oidc/callback, are required.
func consoleOIDC(issuer, clientID, secret, publicURL string) (*console.OIDC, error) {
	if issuer == "" {
		if clientID != "" || secret != "" {
			return nil, errors.New("gateway: -oidc-client-id and -oidc-client-secret need -oidc-issuer")
		}
		return nil, nil
	}
	if secret == "" {
		secret = os.Getenv("GATEWAY_OIDC_CLIENT_SECRET")
	}
	if u, err := url.Parse(issuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, errors.New("gateway: -oidc-issuer must be an absolute http or https URL")
	}
	if clientID == "" || secret == "" || publicURL == "" {
		return nil, errors.New("gateway: -oidc-issuer needs -oidc-client-id, -oidc-client-secret (or GATEWAY_OIDC_CLIENT_SECRET) and -public-url")
	}
	return &console.OIDC{Issuer: issuer, ClientID: clientID, ClientSecret: secret,
		RedirectURL: strings.TrimSuffix(publicURL, "/") + consolePath + "/oidc/callback"}, nil
}
