// Package oidctest is a throwaway OpenID Connect provider for tests, in
// the spirit of httptest: discovery, a JWKS, an authorization endpoint
// that signs in the person the test names without asking, and a token
// endpoint that checks the client, the redirect URI and PKCE and answers
// an RS256 ID token.
package oidctest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"time"
)

// Person is who the provider signs in.
type Person struct {
	Email         string
	EmailVerified bool
	GivenName     string
	FamilyName    string
}

// Provider is a running OpenID Connect provider on loopback. It is safe
// for concurrent use.
type Provider struct {
	*httptest.Server
	ClientID, ClientSecret string

	key *rsa.PrivateKey

	mu      sync.Mutex // guards the fields below
	person  Person
	codes   map[string]grant
	refused int // token requests refused
}

// Refused returns how many token requests the provider refused.
func (p *Provider) Refused() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}

// grant is an authorization code's request.
type grant struct {
	nonce, challenge, redirect string
	person                     Person
}

// NewProvider starts a provider whose client is clientID and secret.
// The caller closes it.
func NewProvider(clientID, secret string) *Provider {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic("oidctest: " + err.Error())
	}
	p := &Provider{ClientID: clientID, ClientSecret: secret, key: key, codes: map[string]grant{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /jwks", p.jwks)
	mux.HandleFunc("GET /authorize", p.authorize)
	mux.HandleFunc("POST /token", p.token)
	p.Server = httptest.NewServer(mux)
	return p
}

// SignIn sets who the next authorization signs in.
func (p *Provider) SignIn(who Person) {
	p.mu.Lock()
	p.person = who
	p.mu.Unlock()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (p *Provider) discovery(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, 200, map[string]any{"issuer": p.URL, "authorization_endpoint": p.URL + "/authorize",
		"token_endpoint": p.URL + "/token", "jwks_uri": p.URL + "/jwks", "response_types_supported": []string{"code"},
		"subject_types_supported": []string{"public"}, "id_token_signing_alg_values_supported": []string{"RS256"},
		"code_challenge_methods_supported": []string{"S256"}})
}

var b64 = base64.RawURLEncoding

func (p *Provider) jwks(w http.ResponseWriter, _ *http.Request) {
	pub := p.key.PublicKey
	writeJSON(w, 200, map[string]any{"keys": []any{map[string]string{"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
		"n": b64.EncodeToString(pub.N.Bytes()), "e": b64.EncodeToString(big.NewInt(int64(pub.E)).Bytes())}}})
}

func randomString() string {
	var b [24]byte
	rand.Read(b[:])
	return b64.EncodeToString(b[:])
}

// authorize signs in the person set by SignIn and sends the browser back
// with a code, after checking the client and the request.
func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != p.ClientID || q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" ||
		q.Get("redirect_uri") == "" || q.Get("state") == "" {
		http.Error(w, "oidctest: a bad authorization request", http.StatusBadRequest)
		return
	}
	code := randomString()
	p.mu.Lock()
	p.codes[code] = grant{nonce: q.Get("nonce"), challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"), person: p.person}
	p.mu.Unlock()
	u, _ := url.Parse(q.Get("redirect_uri"))
	v := u.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	u.RawQuery = v.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

// token exchanges a code once, for the client with its secret (basic or
// form), the same redirect URI and the PKCE verifier of its challenge.
func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostFormValue("client_id"), r.PostFormValue("client_secret")
	}
	p.mu.Lock()
	g, found := p.codes[r.PostFormValue("code")]
	delete(p.codes, r.PostFormValue("code"))
	p.mu.Unlock()
	sum := sha256.Sum256([]byte(r.PostFormValue("code_verifier")))
	if id != p.ClientID || secret != p.ClientSecret || !found || r.PostFormValue("grant_type") != "authorization_code" ||
		r.PostFormValue("redirect_uri") != g.redirect || b64.EncodeToString(sum[:]) != g.challenge {
		p.mu.Lock()
		p.refused++
		p.mu.Unlock()
		writeJSON(w, 400, map[string]string{"error": "invalid_grant"})
		return
	}
	now := time.Now()
	claims := map[string]any{"iss": p.URL, "sub": "sub-" + g.person.Email, "aud": p.ClientID, "iat": now.Unix(),
		"exp": now.Add(5 * time.Minute).Unix(), "nonce": g.nonce, "email": g.person.Email, "email_verified": g.person.EmailVerified,
		"given_name": g.person.GivenName, "family_name": g.person.FamilyName}
	writeJSON(w, 200, map[string]any{"access_token": randomString(), "token_type": "Bearer", "expires_in": 300,
		"id_token": p.Sign(claims)})
}

// Sign returns a JWT of claims signed with RS256 by the provider's key.
func (p *Provider) Sign(claims map[string]any) string {
	h, _ := json.Marshal(map[string]string{"alg": "RS256", "kid": "k1", "typ": "JWT"})
	c, _ := json.Marshal(claims)
	signing := b64.EncodeToString(h) + "." + b64.EncodeToString(c)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, p.key, crypto.SHA256, sum[:])
	if err != nil {
		panic("oidctest: " + err.Error())
	}
	return signing + "." + b64.EncodeToString(sig)
}
