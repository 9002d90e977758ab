package observe

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/httpapi"
)

// signedURLTTL is how long a log export's signed_url stays valid.
const signedURLTTL = time.Hour

// Error codes of a refused signed URL.
const (
	codeInvalidSignature = "invalid_signature" // 401: malformed, or not signed by this gateway's key
	codeExpiredSignature = "expired_signature" // 403: signed, but past its expires
)

// processURLKey is the URL signing key of gateways without
// Options.URLSigningKey: random, made once per process.
var processURLKey = sync.OnceValue(func() []byte {
	k := make([]byte, 32)
	rand.Read(k) // never fails (crypto/rand)
	return k
})

// urlSigningKey returns Options.URLSigningKey, or the process's random key.
func (rs *Routes) urlSigningKey() []byte {
	if len(rs.signingKey) > 0 {
		return rs.signingKey
	}
	return processURLKey()
}

// exportSignature returns the hex HMAC-SHA256 that lets the content of
// export id be downloaded without a key until expires (Unix seconds).
// The id is length-prefixed, so that no id and expiry can be made to
// sign like another pair.
func (rs *Routes) exportSignature(id string, expires int64) string {
	m := hmac.New(sha256.New, rs.urlSigningKey())
	m.Write([]byte("log-export-content\n" + strconv.Itoa(len(id)) + ":" + id + "\n" + strconv.FormatInt(expires, 10)))
	return hex.EncodeToString(m.Sum(nil))
}

// signedExportURL returns the signed_url of export id (docs/architecture.md, Trust): its
// content route on Options.PublicURL (a relative path without it), with
// the expiry, signedURLTTL from now, and its signature in the query. The
// URL is the only credential its holder needs, for that export's records
// only, until it expires.
func (rs *Routes) signedExportURL(id string) string {
	expires := rs.clock().Add(signedURLTTL).Unix()
	q := url.Values{"expires": {strconv.FormatInt(expires, 10)}, "signature": {rs.exportSignature(id, expires)}}
	return strings.TrimSuffix(rs.publicURL, "/") + rs.gw.Prefix() + "/logs/exports/" + url.PathEscape(id) + "/content?" + q.Encode()
}

// signedExportID returns the export id of r when r asks for an export's
// content with a signature (an expires or signature query parameter), in
// place of an API key; else "".
func (rs *Routes) signedExportID(r *http.Request) string {
	q := r.URL.Query()
	if !q.Has("signature") && !q.Has("expires") {
		return ""
	}
	rest, ok := strings.CutPrefix(r.URL.Path, rs.gw.Prefix()+"/logs/exports/")
	if !ok {
		return ""
	}
	id, ok := strings.CutSuffix(rest, "/content")
	if !ok || id == "" || strings.Contains(id, "/") {
		return ""
	}
	return id
}

// serveSignedExport serves a request for an export's content that
// carries a signature instead of an API key (see signedExportID), and
// reports whether r was one, with the workspace of its export. The
// signature must be this gateway's for that export and that expiry,
// which must not have passed: otherwise 401 invalid_signature, or 403
// expired_signature. An API key sent along is removed unread: the URL
// alone decides. The request is a control-plane read, not a request log
// of the Store (see gateway.Gateway.HandleSigned).
func (rs *Routes) serveSignedExport(w http.ResponseWriter, r *http.Request) (workspace string, ok bool) {
	eid := rs.signedExportID(r)
	if eid == "" {
		return "", false
	}
	r.Header.Del(gateway.HeaderAPIKey)
	if r.Method != http.MethodGet {
		control.WriteError(w, r, httpapi.Only(r, http.MethodGet))
		return "", true
	}
	if err := rs.checkExportSignature(r.URL.Query(), eid); err != nil {
		gateway.WriteError(w, r, err)
		return "", true
	}
	store := rs.exportStore
	if store == nil || rs.logs == nil {
		gateway.WriteError(w, r, logExportNotFound(eid))
		return "", true
	}
	e, err := store.LogExport(r.Context(), "", eid)
	if err == nil {
		e, err = rs.settleLogExport(r.Context(), store, e)
	}
	if err == nil {
		workspace = e.WorkspaceID
		err = rs.logExportContent(w, r, store, e)
	}
	if err != nil {
		control.Fail(w, r, rs.errLog, "log export store", notFoundAs(err, "log export "+control.Quote(eid)+" not found"))
	}
	return workspace, true
}

// checkExportSignature checks the expires and signature of q, each given
// once, against export eid and the gateway's clock.
func (rs *Routes) checkExportSignature(q url.Values, eid string) error {
	invalid := func(param, msg string) error {
		return &gateway.Error{Status: http.StatusUnauthorized, Type: gateway.TypeInvalidRequest, Code: codeInvalidSignature, Param: param, Message: msg}
	}
	exp, sig := q["expires"], q["signature"]
	if len(exp) != 1 || len(sig) != 1 {
		return invalid("signature", "a signed URL carries expires and signature once each")
	}
	expires, err := strconv.ParseInt(exp[0], 10, 64)
	if err != nil {
		return invalid("expires", "expires must be a Unix time in seconds")
	}
	got, err := hex.DecodeString(sig[0])
	want, _ := hex.DecodeString(rs.exportSignature(eid, expires))
	if err != nil || !hmac.Equal(got, want) {
		return invalid("signature", "the URL's signature does not match: use the signed_url of GET /logs/exports/{id}/download as it was given")
	}
	if !rs.clock().Before(time.Unix(expires, 0)) {
		return &gateway.Error{Status: http.StatusForbidden, Type: gateway.TypePermission, Code: codeExpiredSignature, Param: "expires",
			Message: "this signed URL has expired: ask GET /logs/exports/{id}/download for a new one"}
	}
	return nil
}
