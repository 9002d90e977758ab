package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"net/http"
	"slices"
)

// cacheKey derives the cache key of a leaf's request: the workspace, the
// provider and the upstream URL its Provider resolves, the credential's
// identity (a virtual key's slug, else a digest of the token: never the
// token), method, path, query, the body after overrides, the headers that
// reach the provider (see keyedHeader), and the namespace or else the
// metadata. It reports false when the upstream URL cannot be resolved, and
// the request then bypasses the cache.
//
// The headers are those of the upstream request as the Provider builds it
// for an attempt (the same allowed and forwarded headers go in as in
// Gateway.rewrite), so that a provider's own headers (OpenAI-Project,
// anthropic-version, …) and the forward-headers list are all in the key.
func (x *run) cacheKey(l *attemptLoop) (string, bool) {
	t := l.t
	// A shallow copy is enough: Rewrite may replace Out's URL, header,
	// body and host, which are Out's own here, and must not touch the rest.
	out := new(http.Request)
	*out = *x.r
	q := stripGatewayParams(x.r.URL.RawQuery) // the query the provider receives
	u := *x.r.URL
	u.RawQuery = q
	out.URL = &u
	out.Form, out.PostForm, out.MultipartForm, out.Trailer = nil, nil, nil, nil
	out.Header = upstreamHeader(x.r.Header, t.forwardHeaders)
	out.Body = io.NopCloser(bytes.NewReader(l.body))
	out.ContentLength = int64(len(l.body))
	pr := ProxyRequest{In: x.r, Out: out, Path: x.path, RawPath: x.rawPath, Target: &t.Target}
	if err := l.prov.Rewrite(&pr); err != nil || out.URL == nil {
		return "", false
	}
	var arr [1024]byte
	b := keyField(arr[:0], "gateway-cache-v2")
	b = keyField(b, x.st.identity.WorkspaceID)
	b = keyField(b, t.Provider)
	b = keyField(b, out.URL.String())
	if t.VirtualKey != "" {
		b = keyField(b, "virtual-key")
		b = keyField(b, t.VirtualKey)
	} else {
		// A digest of the credentials, so that the key's preimage never
		// holds them.
		var c [256]byte
		cred := keyField(c[:0], t.APIKey)
		cred = keyField(cred, t.Host.AccessKeyID)
		cred = keyField(cred, t.Host.SecretAccessKey)
		cred = keyField(cred, t.Host.SessionToken)
		sum := sha256.Sum256(cred)
		clear(cred)
		b = keyField(b, "token")
		b = binary.BigEndian.AppendUint64(b, sha256.Size)
		b = append(b, sum[:]...)
	}
	b = keyField(b, x.r.Method)
	b = keyField(b, x.path)
	b = keyField(b, q)
	b = keyField(b, "body")
	b = binary.BigEndian.AppendUint64(b, uint64(len(l.body)))
	b = append(b, l.body...)
	b = keyField(b, "headers")
	var na [16]string
	names := na[:0]
	for k, v := range out.Header {
		if keyedHeader(k, v, x.r.Header) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		vs := out.Header[k]
		b = keyField(b, k)
		b = binary.BigEndian.AppendUint64(b, uint64(len(vs)))
		for _, v := range vs {
			b = keyField(b, v)
		}
	}
	if ns := x.st.opts.CacheNamespace; ns != "" {
		b = keyField(b, "namespace")
		b = keyField(b, ns)
	} else {
		b = keyField(b, "metadata")
		md := x.st.opts.Metadata
		var ka [16]string
		keys := ka[:0]
		for k := range md {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			b = keyField(b, k)
			b = keyField(b, md[k])
		}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), true
}

// keyField appends s to a cache key's preimage, after its length, so that
// no two sequences of fields make the same preimage.
func keyField(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

// keyedHeader reports whether a header of the upstream request, with its
// values out, is part of the cache key; in is the caller's request header.
// Every header that reaches the provider is, but those that name the
// request or the client rather than change the answer, and the
// credentials and signatures a Provider sets from the target (their
// identity is in the key already, as a slug or a digest, and a signature
// changes with every request). A credential header the caller sent as it
// reaches the provider, through the forward-headers list, is keyed like
// any other header.
func keyedHeader(name string, out []string, in http.Header) bool {
	switch name {
	case "User-Agent", "Idempotency-Key", "X-Ms-Client-Request-Id":
		return false
	case "Authorization", "Proxy-Authorization", "Api-Key", "X-Api-Key", "X-Goog-Api-Key",
		"X-Amz-Date", "X-Amz-Security-Token", "X-Amz-Content-Sha256":
		return slices.Equal(out, in[name])
	}
	return len(out) > 0
}
