package gateway

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelgateway/gateway/internal/jsonscan"
)

// defaultLogBodyMax is Options.LogBodyMax's zero value: 16 KiB.
const defaultLogBodyMax = 16 << 10

// redacted replaces a credential in a kept body.
const redacted = "[REDACTED]"

// bodyCapture keeps the first bytes of a request's body and of its
// answer, for its request log (Options.LogBodies). It exists only for
// requests whose bodies are kept: with the option off, requestState.bodies
// is nil and the request path pays a nil check.
type bodyCapture struct {
	max       int
	req, resp []byte
	// The request's media type and content coding, and the credentials
	// its headers carried: any copy of one in a body is redacted too.
	reqType, reqCoding string
	secrets            []string
}

// credentialHeaders are the request headers whose values are credentials:
// never kept, and scrubbed from the bodies kept.
var credentialHeaders = []string{"Authorization", "Proxy-Authorization", "X-Gateway-Api-Key", "X-Api-Key", "Api-Key",
	"X-Goog-Api-Key", "Cookie"}

// captureBodies starts keeping st's bodies when the gateway keeps them.
func (g *Gateway) captureBodies(r *http.Request, st *requestState) {
	max := g.opts.LogBodyMax
	if max <= 0 {
		max = defaultLogBodyMax
	}
	c := &bodyCapture{max: max, reqType: r.Header.Get("Content-Type"), reqCoding: r.Header.Get("Content-Encoding")}
	for _, name := range credentialHeaders {
		for _, v := range r.Header[name] {
			c.addSecret(credentialValue(v))
		}
	}
	st.bodies = c
	st.body.st = st
}

// addSecret adds v to the secrets scrubbed from the bodies kept, once; a
// value under 8 bytes is too short to tell from ordinary text.
func (c *bodyCapture) addSecret(v string) {
	if len(v) < 8 || slices.Contains(c.secrets, v) {
		return
	}
	c.secrets = append(c.secrets, v)
}

// noteTarget adds the credentials the gateway itself sends to t (the
// provider token, from a virtual key, a config or the caller's bearer
// token, and the AWS key pair and session token) to the secrets scrubbed
// from st's kept bodies, so that a provider echoing one in its answer
// does not put it in the log (docs/architecture.md, Trust). It runs on the request's
// goroutine, for each target tried; without kept bodies it does nothing.
func (st *requestState) noteTarget(t *Target) {
	if st.bodies == nil {
		return
	}
	for _, v := range []string{t.APIKey, t.Host.AccessKeyID, t.Host.SecretAccessKey, t.Host.SessionToken} {
		st.bodies.addSecret(v)
	}
}

// injectedHeaders are the upstream request headers in which a Provider
// puts a credential of its own (Bedrock's signature and session token,
// a custom Provider's key).
var injectedHeaders = []string{"Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key", "X-Amz-Security-Token"}

// noteUpstream adds the credentials of out, an upstream request its
// Provider rewrote, to the secrets scrubbed from st's kept bodies: those
// the Provider put there itself, which noteTarget cannot know. Without
// kept bodies it does nothing.
func (st *requestState) noteUpstream(out http.Header) {
	if st.bodies == nil {
		return
	}
	for _, name := range injectedHeaders {
		for _, v := range out[name] {
			st.bodies.addSecret(credentialValue(v))
		}
	}
}

// credentialValue returns the credential of a header value: the token of
// a Basic or Bearer authorization, else the value, trimmed.
func credentialValue(v string) string {
	v = strings.TrimSpace(v)
	if scheme, tok, ok := strings.Cut(v, " "); ok && (strings.EqualFold(scheme, "basic") || strings.EqualFold(scheme, "bearer")) {
		v = strings.TrimSpace(tok)
	}
	return v
}

// add appends what of p fits under max to *buf.
func (c *bodyCapture) add(buf *[]byte, p []byte) {
	if room := c.max - len(*buf); room > 0 {
		*buf = append(*buf, p[:min(len(p), room)]...)
	}
}

// captureRequest keeps the first bytes of a data-plane request's body.
func (st *requestState) captureRequest(p []byte) {
	if !st.control {
		st.bodies.add(&st.bodies.req, p)
	}
}

// captureResponse keeps the first bytes of a data-plane answer's body.
func (st *requestState) captureResponse(p []byte) {
	if !st.control {
		st.bodies.add(&st.bodies.resp, p)
	}
}

// fill sets rec's bodies from what was kept: decoded, redacted, cut at
// max bytes. respHeader is the answer's header.
func (c *bodyCapture) fill(rec *RequestLog, respHeader http.Header) {
	rec.RequestBody, rec.RequestBodyTruncated = c.render(c.req, c.reqType, c.reqCoding, rec.BytesIn)
	rec.ResponseBody, rec.ResponseBodyTruncated = c.render(c.resp, respHeader.Get("Content-Type"),
		respHeader.Get("Content-Encoding"), rec.BytesOut)
}

// render returns the body of which raw is the first bytes (total in all),
// as kept, and whether it was cut.
func (c *bodyCapture) render(raw []byte, contentType, coding string, total int64) (string, bool) {
	if total == 0 && len(raw) == 0 {
		return "", false
	}
	cut := total > int64(len(raw))
	coding = strings.ToLower(strings.TrimSpace(coding))
	switch coding {
	case "", "identity":
	case "gzip", "x-gzip", "deflate":
		var (
			zr  io.Reader
			err error
		)
		if coding == "deflate" {
			zr, err = zlib.NewReader(bytes.NewReader(raw))
		} else {
			zr, err = gzip.NewReader(bytes.NewReader(raw))
		}
		if err != nil {
			return "[" + strconv.FormatInt(total, 10) + " bytes, content-encoding " + coding + ", not decodable]", cut
		}
		dec, _ := io.ReadAll(io.LimitReader(zr, int64(c.max)+1)) // a cut stream ends in an error: keep what came
		cut = cut || len(dec) > c.max
		raw = dec[:min(len(dec), c.max)]
	default:
		return "[" + strconv.FormatInt(total, 10) + " bytes, content-encoding " + safeToken(coding) + ", not kept]", cut
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt = ""
	}
	var out []byte
	switch {
	case mt == "text/event-stream":
		out = redactSSE(nil, raw)
	case mt == "application/x-www-form-urlencoded":
		out = redactForm(nil, raw)
	case mt == "application/json" || strings.HasSuffix(mt, "+json") || mt == "application/x-ndjson" ||
		mt == "" && looksJSON(raw):
		out = redactJSON(nil, raw)
	case strings.HasPrefix(mt, "text/"):
		out = raw
	default: // binary (audio, images, multipart uploads): not kept
		if mt == "" {
			mt = "unknown type"
		}
		return "[" + strconv.FormatInt(total, 10) + " bytes of " + safeToken(mt) + ", not kept]", cut
	}
	s := string(out)
	for _, secret := range c.secrets {
		s = strings.ReplaceAll(s, secret, redacted)
		if cut { // the cap may have cut a copy: its first bytes go too
			for k := len(secret) - 1; k >= 4; k-- {
				if strings.HasSuffix(s, secret[:k]) {
					s = s[:len(s)-k] + redacted
					break
				}
			}
		}
	}
	return strings.ToValidUTF8(s, "\uFFFD"), cut
}

// safeToken returns s cut to 64 bytes of visible ASCII, for a note.
func safeToken(s string) string {
	b := make([]byte, 0, min(len(s), 64))
	for i := 0; i < len(s) && len(b) < 64; i++ {
		if s[i] > 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '\\' {
			b = append(b, s[i])
		}
	}
	return string(b)
}

// looksJSON reports whether b starts, past white space, as a JSON object
// or array does.
func looksJSON(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && (b[0] == '{' || b[0] == '[')
}

// redactSSE appends to dst the event stream b with the JSON of each data
// line through redactJSON.
func redactSSE(dst, b []byte) []byte {
	for len(b) > 0 {
		line, rest, found := bytes.Cut(b, []byte("\n"))
		if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			dst = append(dst, "data:"...)
			dst = redactJSON(dst, data)
		} else {
			dst = append(dst, line...)
		}
		if found {
			dst = append(dst, '\n')
		}
		b = rest
	}
	return dst
}

// redactForm appends to dst the form b with the values of credential-like
// names redacted.
func redactForm(dst, b []byte) []byte {
	for i, pair := range bytes.Split(b, []byte("&")) {
		if i > 0 {
			dst = append(dst, '&')
		}
		name, _, hasValue := bytes.Cut(pair, []byte("="))
		key, err := url.QueryUnescape(string(name))
		if hasValue && (err != nil || credentialName(key)) {
			dst = append(append(dst, name...), "="+redacted...)
			continue
		}
		dst = append(dst, pair...)
	}
	return dst
}

// dataURLMin is the length from which a base64 data: URL in a kept JSON
// body is elided.
const dataURLMin = 256

// redactJSON appends to dst the JSON text b, or the first bytes of one,
// with the value of every member whose name is credential-like (see
// credentialName) replaced by "[REDACTED]", a "Bearer …" string's token
// too, and base64 data: URLs of dataURLMin bytes or more elided. It never
// fails: what is not JSON is copied as it is, and a value cut by the end
// of b is redacted or copied as far as it goes.
func redactJSON(dst, b []byte) []byte {
	var stack []byte // '{' or '[' per open container
	key := false     // the next string is a member name
	for i := 0; i < len(b); {
		switch c := b[i]; c {
		case '"':
			end := scanJSONString(b, i)
			if !key || len(stack) == 0 || stack[len(stack)-1] != '{' {
				dst = appendJSONStringValue(dst, b[i:end])
				i = end
				continue
			}
			key = false
			dst = append(dst, b[i:end]...)
			colon := jsonscan.SkipSpace(b, end)
			if colon < len(b) && b[colon] == ':' && credentialName(jsonName(b[i:end])) {
				start := jsonscan.SkipSpace(b, colon+1)
				dst = append(dst, b[end:start]...)
				dst = append(dst, `"`+redacted+`"`...)
				i = skipCutJSONValue(b, start)
				continue
			}
			i = end
		case '{', '[':
			stack = append(stack, c)
			key = c == '{'
			dst = append(dst, c)
			i++
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			key = false
			dst = append(dst, c)
			i++
		case ',':
			key = len(stack) > 0 && stack[len(stack)-1] == '{'
			dst = append(dst, c)
			i++
		default:
			dst = append(dst, c)
			i++
		}
	}
	return dst
}

// scanJSONString returns the index just past the string starting at
// b[i] (a '"'), or len(b) when b ends inside it.
func scanJSONString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// skipCutJSONValue returns the index just past the value starting at
// b[i], or len(b) when b ends inside it (jsonscan.SkipValue's input is whole).
func skipCutJSONValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return scanJSONString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = scanJSONString(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	for j := i; j < len(b); j++ {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return j
		}
	}
	return len(b)
}

// appendJSONStringValue appends the JSON string s (quotes included; the
// closing one missing when cut) to dst, a base64 data: URL elided and a
// bearer token redacted.
func appendJSONStringValue(dst, s []byte) []byte {
	body := s[1:]
	closed := len(body) > 0 && body[len(body)-1] == '"' && scanJSONString(s, 0) == len(s)
	if closed {
		body = body[:len(body)-1]
	}
	switch {
	case len(body) >= dataURLMin && bytes.HasPrefix(body, []byte("data:")):
		if comma := bytes.Index(body[:min(len(body), 128)], []byte(";base64,")); comma > 0 {
			dst = append(dst, '"')
			dst = append(dst, body[:comma+len(";base64,")]...)
			dst = append(dst, "[elided "+strconv.Itoa(len(body)-comma-len(";base64,"))+" bytes]"...)
			if closed {
				dst = append(dst, '"')
			}
			return dst
		}
	case len(body) > len("bearer ") && bytes.EqualFold(body[:len("bearer ")], []byte("bearer ")):
		dst = append(dst, '"')
		dst = append(dst, body[:len("bearer ")]...)
		dst = append(dst, redacted...)
		if closed {
			dst = append(dst, '"')
		}
		return dst
	}
	return append(dst, s...)
}

// jsonName returns the member name of the JSON string s (quotes
// included, the closing one perhaps missing), its escapes decoded.
func jsonName(s []byte) string {
	s = s[1:]
	if len(s) > 0 && s[len(s)-1] == '"' {
		s = s[:len(s)-1]
	}
	if bytes.IndexByte(s, '\\') < 0 {
		return string(s)
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			out = append(out, s[i])
			continue
		}
		i++
		switch s[i] {
		case 'u':
			if i+4 < len(s) {
				if v, err := strconv.ParseUint(string(s[i+1:i+5]), 16, 16); err == nil {
					out = utf8.AppendRune(out, rune(v))
					i += 4
					continue
				}
			}
			out = append(out, 'u')
		case 'n', 't', 'r', 'b', 'f':
			out = append(out, ' ')
		default:
			out = append(out, s[i])
		}
	}
	return string(out)
}

// credentialNames are the member, field and parameter names whose values
// are credentials, lower-cased with everything but letters and digits
// taken out; credentialSuffixes end such names (x_api_key, openai_secret,
// access_token; not max_tokens).
var (
	credentialNames = map[string]bool{
		"password": true, "passwd": true, "pwd": true, "secret": true, "token": true, "auth": true,
		"authorization": true, "proxyauthorization": true, "cookie": true, "setcookie": true,
		"credential": true, "credentials": true, "apikey": true, "apikeys": true, "privatekey": true,
		"clientsecret": true, "accesskey": true, "secretkey": true, "sessionkey": true,
	}
	credentialSuffixes = []string{"apikey", "secret", "password", "token", "privatekey", "secretkey", "accesskey",
		"authorization", "credentials", "credential"}
)

// credentialName reports whether a value named name (a JSON member, a
// form field) is a credential, whatever its case and separators: api_key,
// apiKey, X-API-Key, client_secret, password, access_token, Authorization…
func credentialName(name string) bool {
	var buf [64]byte
	n := buf[:0]
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			n = append(n, c)
		case c >= 'A' && c <= 'Z':
			n = append(n, c+'a'-'A')
		}
	}
	s := string(n)
	if credentialNames[s] {
		return true
	}
	for _, suf := range credentialSuffixes {
		if strings.HasSuffix(s, suf) {
			return true
		}
	}
	return false
}
