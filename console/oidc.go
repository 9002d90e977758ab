package console

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/users"
	"golang.org/x/oauth2"
)

// OIDC configures sign-in through the operator's OpenID Connect
// provider, with the authorization code flow (PKCE, state and nonce).
// A person is signed in when the provider's ID token, signed by a key of
// its JWKS, names an email it says is verified (email_verified) that is
// a user's, or, for an email that is no user's yet, that of a pending
// invite, which it then accepts (with the token's given and family
// names). No account is made for anyone else.
type OIDC struct {
	// Issuer is the provider's issuer URL, whose
	// /.well-known/openid-configuration the console reads on first use.
	Issuer string

	// ClientID and ClientSecret are the console's client at the provider.
	ClientID     string
	ClientSecret string

	// RedirectURL is the console's /oidc/callback on the gateway's public
	// URL, as registered at the provider, e.g.
	// "https://gateway.example.com/console/oidc/callback".
	RedirectURL string

	// Name labels the sign-in button ("Sign in with Name"). Empty means
	// "single sign-on".
	Name string

	// Client makes the requests to the provider. Nil means
	// http.DefaultClient.
	Client *http.Client
}

// oidcCookie holds the state, nonce and PKCE verifier of a sign-in in
// progress, for ten minutes.
const (
	oidcCookie = "gateway_console_oidc"
	oidcTTL    = 10 * time.Minute
)

// oidcClient is the console's OIDC relying party. It reads the
// provider's configuration on first use, again after a failure. It is
// safe for concurrent use.
type oidcClient struct {
	o     OIDC
	label string

	mu       sync.Mutex // guards provider
	provider *oidc.Provider
}

func newOIDCClient(o OIDC) *oidcClient {
	label := o.Name
	if label == "" {
		label = "single sign-on"
	}
	return &oidcClient{o: o, label: label}
}

// config returns the provider and the OAuth 2.0 configuration.
func (oc *oidcClient) config(ctx context.Context) (*oidc.Provider, *oauth2.Config, error) {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	if oc.provider == nil {
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		p, err := oidc.NewProvider(oidc.ClientContext(dctx, oc.client()), oc.o.Issuer)
		if err != nil {
			return nil, nil, err
		}
		oc.provider = p
	}
	return oc.provider, &oauth2.Config{ClientID: oc.o.ClientID, ClientSecret: oc.o.ClientSecret, RedirectURL: oc.o.RedirectURL,
		Endpoint: oc.provider.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "email", "profile"}}, nil
}

func (oc *oidcClient) client() *http.Client {
	if oc.o.Client != nil {
		return oc.o.Client
	}
	return http.DefaultClient
}

// oidcStart sends the browser to the provider, with a fresh state, nonce
// and PKCE verifier kept in a short-lived cookie.
func (c *console) oidcStart(w http.ResponseWriter, r *http.Request) {
	if c.oidc == nil {
		c.notFound(w, r)
		return
	}
	_, cfg, err := c.oidc.config(r.Context())
	if err != nil {
		c.showSignIn(w, r, http.StatusBadGateway, "The sign-in provider could not be reached. Try again, or sign in another way.")
		return
	}
	state, nonce, verifier := randomToken(), randomToken(), oauth2.GenerateVerifier()
	// SameSite=Lax: the provider sends the browser back with a top-level
	// GET from its own site, which a Strict cookie would not reach.
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: state + "." + nonce + "." + verifier, Path: c.base + "/oidc/",
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: c.secure(r), MaxAge: int(oidcTTL / time.Second)})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, cfg.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), http.StatusFound)
}

// oidcClaims are the ID token's claims the console reads.
type oidcClaims struct {
	Email         string `json:"email"`
	EmailVerified bool   `json:"email_verified"`
	GivenName     string `json:"given_name"`
	FamilyName    string `json:"family_name"`
	Name          string `json:"name"`
}

// oidcCallback ends a sign-in at the provider: it checks the state,
// exchanges the code (with the PKCE verifier), verifies the ID token
// (signature, issuer, audience, expiry, nonce), and signs in the user
// of its verified email.
func (c *console) oidcCallback(w http.ResponseWriter, r *http.Request) {
	if c.oidc == nil {
		c.notFound(w, r)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	ck, err := r.Cookie(oidcCookie)
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Path: c.base + "/oidc/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: c.secure(r)})
	var parts []string
	if err == nil {
		parts = strings.Split(ck.Value, ".")
	}
	q := r.URL.Query()
	if len(parts) != 3 || !sameToken(q.Get("state"), parts[0]) {
		c.showSignIn(w, r, http.StatusForbidden, "The sign-in could not be checked (its state is missing or stale). Try again.")
		return
	}
	if e := q.Get("error"); e != "" {
		c.showSignIn(w, r, http.StatusUnauthorized, "The sign-in provider refused the sign-in.")
		return
	}
	provider, cfg, err := c.oidc.config(r.Context())
	if err != nil {
		c.showSignIn(w, r, http.StatusBadGateway, "The sign-in provider could not be reached. Try again, or sign in another way.")
		return
	}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(r.Context(), c.oidc.client()), 10*time.Second)
	defer cancel()
	tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, c.oidc.client()), q.Get("code"), oauth2.VerifierOption(parts[2]))
	if err != nil {
		c.showSignIn(w, r, http.StatusUnauthorized, "The sign-in provider did not accept the sign-in. Try again.")
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := provider.Verifier(&oidc.Config{ClientID: c.oidc.o.ClientID}).Verify(ctx, raw)
	if err != nil || !sameToken(idt.Nonce, parts[1]) {
		c.showSignIn(w, r, http.StatusUnauthorized, "The sign-in provider's answer could not be verified.")
		return
	}
	var cl oidcClaims
	if err := idt.Claims(&cl); err != nil || cl.Email == "" || !cl.EmailVerified {
		c.showSignIn(w, r, http.StatusForbidden, "The sign-in provider did not give a verified email address.")
		return
	}
	u, err := c.oidcUser(r, &cl)
	switch {
	case errors.Is(err, gateway.ErrNotFound), errors.Is(err, users.ErrInviteGone):
		c.showSignIn(w, r, http.StatusForbidden, "No account or pending invite has the email "+cl.Email+". Ask an administrator for an invite.")
		return
	case err != nil:
		c.showSignIn(w, r, http.StatusInternalServerError, "The console could not read the accounts. Try again.")
		return
	}
	key, err := users.NewSessionKey(r.Context(), c.opts.Users, u, c.opts.Now(), c.opts.SessionTTL)
	if errors.Is(err, users.ErrNoWorkspace) {
		c.showSignIn(w, r, http.StatusForbidden, "Your account belongs to no workspace yet: ask an administrator to add you to one.")
		return
	}
	if err != nil || !c.startSession(w, r, key) {
		if err != nil {
			c.showSignIn(w, r, http.StatusInternalServerError, "The console could not start a session: its store failed. Try again.")
		}
		return
	}
	// A page of the console's own sends the browser on: a redirect here
	// would end a navigation the provider's site began, on which browsers
	// do not send the SameSite=Strict session cookie.
	c.render(w, r, http.StatusOK, "signedin", nil, &pageData{Title: "Signed in", Data: c.base + "/"})
}

// oidcUser returns the user of the token's verified email, or the user
// made from the pending invite of that email.
func (c *console) oidcUser(r *http.Request, cl *oidcClaims) (*users.User, error) {
	email := strings.ToLower(cl.Email)
	u, err := c.opts.Users.UserByEmail(r.Context(), email)
	if !errors.Is(err, gateway.ErrNotFound) {
		return u, err
	}
	iv, err := users.PendingFor(r.Context(), c.opts.Users, email, c.opts.Now())
	if err != nil {
		return nil, err
	}
	first, last := cl.GivenName, cl.FamilyName
	if first == "" {
		first = cl.Name
	}
	if !validName(first) || !validName(last) {
		first, last = "", ""
	}
	u, err = users.AcceptFor(r.Context(), c.opts.Users, iv, first, last, "", c.opts.Now())
	if err == nil {
		c.audited(r, u, iv)
	}
	return u, err
}
