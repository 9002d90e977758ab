package guardrail

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// jwtAlgorithms are the signature algorithms the jwt check verifies.
var jwtAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// jwksRefetch is the least time between two fetches of a JWKS for a key
// id it lacks, so tokens naming unknown keys cannot make the check fetch
// on every request.
const jwksRefetch = time.Minute

type jwtCheck struct {
	client     *http.Client
	jwksURI    string
	header     string
	algorithms []string
	maxAge     time.Duration // how long a fetched JWKS is used
	tolerance  time.Duration
	maxTokAge  time.Duration // 0: none
	now        func() time.Time

	mu      sync.Mutex // guards keys and fetched
	keys    map[string]any
	fetched time.Time
}

func jwtFactory(client *http.Client) Factory {
	return func(params json.RawMessage) (Check, error) {
		var p struct {
			JWKSURI        string   `json:"jwksUri"`
			HeaderKey      string   `json:"headerKey"`
			Algorithms     []string `json:"algorithms"`
			CacheMaxAge    *int     `json:"cacheMaxAge"`
			ClockTolerance *int     `json:"clockTolerance"`
			MaxTokenAge    string   `json:"maxTokenAge"`
		}
		if err := DecodeParameters(params, &p); err != nil {
			return nil, err
		}
		if err := httpURL(p.JWKSURI); err != nil {
			return nil, paramError("jwksUri", err.Error())
		}
		c := &jwtCheck{client: client, jwksURI: p.JWKSURI, header: p.HeaderKey, algorithms: p.Algorithms,
			maxAge: 24 * time.Hour, tolerance: 5 * time.Second, maxTokAge: 24 * time.Hour, now: time.Now}
		if c.client == nil {
			c.client = http.DefaultClient
		}
		if c.header == "" {
			c.header = "Authorization"
		}
		if !validHeaderName(c.header) {
			return nil, paramError("headerKey", "must be a header name")
		}
		if len(c.algorithms) == 0 {
			c.algorithms = []string{"RS256"}
		}
		for _, a := range c.algorithms {
			if !slices.Contains(jwtAlgorithms, a) {
				return nil, paramError("algorithms", "holds "+quote(a)+"; the algorithms verified are "+strings.Join(jwtAlgorithms, ", "))
			}
		}
		if p.CacheMaxAge != nil {
			if *p.CacheMaxAge < 0 {
				return nil, paramError("cacheMaxAge", "must not be negative")
			}
			c.maxAge = time.Duration(*p.CacheMaxAge) * time.Second
		}
		if p.ClockTolerance != nil {
			if *p.ClockTolerance < 0 || *p.ClockTolerance > 3600 {
				return nil, paramError("clockTolerance", "must be from 0 to 3600 seconds")
			}
			c.tolerance = time.Duration(*p.ClockTolerance) * time.Second
		}
		if p.MaxTokenAge != "" {
			d, err := parseAge(p.MaxTokenAge)
			if err != nil {
				return nil, paramError("maxTokenAge", "must be a number of seconds, minutes, hours or days such as 30m or 1d")
			}
			c.maxTokAge = d
		}
		return c, nil
	}
}

// parseAge reads a duration such as 90s, 30m, 12h, 1d or 2w (a bare
// number is seconds).
func parseAge(s string) (time.Duration, error) {
	units := map[string]time.Duration{"": time.Second, "s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour, "w": 7 * 24 * time.Hour}
	i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if i < 0 {
		i = len(s)
	}
	n, err := strconv.Atoi(s[:i])
	u, ok := units[strings.TrimSpace(s[i:])]
	if err != nil || !ok || n <= 0 || n > 1<<20 {
		return 0, errors.New("bad age")
	}
	return time.Duration(n) * u, nil
}

// Check verifies the token of the check's header ("Bearer " optional)
// against the JWKS: a known key id, an allowed algorithm, a valid
// signature, exp and nbf within the clock tolerance, and iat no older
// than maxTokenAge. A JWKS that cannot be fetched is an error.
func (c *jwtCheck) Check(ctx context.Context, in *Input) (Verdict, error) {
	raw := strings.TrimSpace(in.Header.Get(c.header))
	if len(raw) > 7 && strings.EqualFold(raw[:7], "bearer ") {
		raw = strings.TrimSpace(raw[7:])
	}
	if raw == "" {
		return Verdict{Explanation: "The request carries no token in " + c.header + "."}, nil
	}
	segs := strings.Split(raw, ".")
	if len(segs) != 3 {
		return Verdict{Explanation: "The token is not a signed JWT."}, nil
	}
	var hdr struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	var claims struct {
		Exp *float64 `json:"exp"`
		Nbf *float64 `json:"nbf"`
		Iat *float64 `json:"iat"`
	}
	if decodeSegment(segs[0], &hdr) != nil || decodeSegment(segs[1], &claims) != nil {
		return Verdict{Explanation: "The token is not a well-formed JWT."}, nil
	}
	if !slices.Contains(c.algorithms, hdr.Alg) {
		return Verdict{Explanation: "The token's algorithm " + quote(hdr.Alg) + " is not allowed."}, nil
	}
	key, err := c.key(ctx, hdr.Kid)
	if err != nil {
		return Verdict{}, err
	}
	if key == nil {
		return Verdict{Explanation: "No key of the JWKS matches the token's key id."}, nil
	}
	sig, err := base64.RawURLEncoding.DecodeString(segs[2])
	if err != nil || !verifyJWS(hdr.Alg, key, segs[0]+"."+segs[1], sig) {
		return Verdict{Explanation: "The token's signature is not valid."}, nil
	}
	now := c.now()
	at := func(f float64) time.Time { return time.Unix(int64(f), 0) }
	switch {
	case claims.Exp != nil && now.After(at(*claims.Exp).Add(c.tolerance)):
		return Verdict{Explanation: "The token has expired."}, nil
	case claims.Nbf != nil && now.Add(c.tolerance).Before(at(*claims.Nbf)):
		return Verdict{Explanation: "The token is not valid yet."}, nil
	case c.maxTokAge > 0 && claims.Iat == nil:
		return Verdict{Explanation: "The token has no issue time (iat)."}, nil
	case c.maxTokAge > 0 && now.Sub(at(*claims.Iat)) > c.maxTokAge+c.tolerance:
		return Verdict{Explanation: "The token is older than the maximum age."}, nil
	}
	return Verdict{Pass: true, Explanation: "The token is valid."}, nil
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// key returns the public key of kid ("" matches the only key of a JWKS
// holding one), fetching the JWKS when the cached one is stale or, at
// most once a minute, lacks kid. It returns nil when no key matches.
func (c *jwtCheck) key(ctx context.Context, kid string) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	stale := c.keys == nil || now.Sub(c.fetched) > c.maxAge
	k, ok := pick(c.keys, kid)
	if !stale && (ok || now.Sub(c.fetched) < jwksRefetch) {
		return k, nil
	}
	keys, err := c.fetch(ctx)
	if err != nil {
		if c.keys != nil && !stale {
			return k, nil
		}
		return nil, err
	}
	c.keys, c.fetched = keys, now
	k, _ = pick(keys, kid)
	return k, nil
}

func pick(keys map[string]any, kid string) (any, bool) {
	if k, ok := keys[kid]; ok {
		return k, true
	}
	if kid == "" && len(keys) == 1 {
		for _, k := range keys {
			return k, true
		}
	}
	return nil, false
}

// fetch reads the JWKS. Its errors never hold the URL.
func (c *jwtCheck) fetch(ctx context.Context) (map[string]any, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.jwksURI, nil)
	if err != nil {
		return nil, &Error{Message: "the JWKS URL is unusable"}
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		e := transportError(ctx, err)
		e.Message = "the JWKS could not be fetched: " + e.Message
		return nil, e
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, &Error{Message: "the JWKS could not be fetched: answered " + strconv.Itoa(resp.StatusCode)}
	}
	return parseJWKS(data)
}

// parseJWKS returns the usable public keys of a JWKS by key id: RSA, EC
// (P-256, P-384, P-521) and Ed25519 keys; other keys are skipped.
func parseJWKS(data []byte) (map[string]any, error) {
	var set struct {
		Keys []struct {
			Kty string `json:"kty"`
			Kid string `json:"kid"`
			Use string `json:"use"`
			Crv string `json:"crv"`
			N   string `json:"n"`
			E   string `json:"e"`
			X   string `json:"x"`
			Y   string `json:"y"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, &Error{Message: "the JWKS is not valid JSON"}
	}
	keys := make(map[string]any)
	num := func(s string) *big.Int {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil || len(b) == 0 {
			return nil
		}
		return new(big.Int).SetBytes(b)
	}
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		switch k.Kty {
		case "RSA":
			n, e := num(k.N), num(k.E)
			if n != nil && e != nil && e.IsInt64() && e.Int64() > 1 && e.Int64() < 1<<31 && n.BitLen() >= 2048 {
				keys[k.Kid] = &rsa.PublicKey{N: n, E: int(e.Int64())}
			}
		case "EC":
			curves := map[string]elliptic.Curve{"P-256": elliptic.P256(), "P-384": elliptic.P384(), "P-521": elliptic.P521()}
			x, y := num(k.X), num(k.Y)
			if curve, ok := curves[k.Crv]; ok && x != nil && y != nil {
				pk := &ecdsa.PublicKey{Curve: curve, X: x, Y: y}
				if _, err := pk.ECDH(); err == nil { // on the curve
					keys[k.Kid] = pk
				}
			}
		case "OKP":
			x, err := base64.RawURLEncoding.DecodeString(k.X)
			if k.Crv == "Ed25519" && err == nil && len(x) == ed25519.PublicKeySize {
				keys[k.Kid] = ed25519.PublicKey(x)
			}
		}
	}
	return keys, nil
}

// verifyJWS checks sig over signed with key under alg.
func verifyJWS(alg string, key any, signed string, sig []byte) bool {
	hashes := map[byte]crypto.Hash{'2': crypto.SHA256, '3': crypto.SHA384, '5': crypto.SHA512}
	if alg == "EdDSA" {
		k, ok := key.(ed25519.PublicKey)
		return ok && ed25519.Verify(k, []byte(signed), sig)
	}
	h := hashes[alg[2]]
	hh := h.New()
	hh.Write([]byte(signed))
	sum := hh.Sum(nil)
	switch alg[:2] {
	case "RS", "PS":
		k, ok := key.(*rsa.PublicKey)
		if !ok {
			return false
		}
		if alg[0] == 'R' {
			return rsa.VerifyPKCS1v15(k, h, sum, sig) == nil
		}
		return rsa.VerifyPSS(k, h, sum, sig, nil) == nil
	case "ES":
		k, ok := key.(*ecdsa.PublicKey)
		if !ok || k.Curve.Params().BitSize != map[byte]int{'2': 256, '3': 384, '5': 521}[alg[2]] {
			return false
		}
		size := (k.Curve.Params().BitSize + 7) / 8
		if len(sig) != 2*size {
			return false
		}
		r, s := new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])
		return ecdsa.Verify(k, sum, r, s)
	}
	return false
}
