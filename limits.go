package gateway

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Response headers reporting the tightest rate-limits policy that applied
// to a request.
const (
	HeaderRateLimitRequests          = "X-Ratelimit-Limit-Requests"
	HeaderRateLimitRemainingRequests = "X-Ratelimit-Remaining-Requests"
	HeaderRateLimitTokens            = "X-Ratelimit-Limit-Tokens"
	HeaderRateLimitRemainingTokens   = "X-Ratelimit-Remaining-Tokens"
)

// policyHit is one policy applied to one request.
type policyHit struct {
	p     *RateLimitsPolicy
	key   string
	limit Limit
	src   string // for an API key's rate_limits, what a refusal names ("API key ..."); empty for a stored policy
}

// cost is what admitting the request takes from h's bucket: 1 for a
// requests policy; nothing for a tokens policy, whose usage is charged
// afterwards.
func (h policyHit) cost() float64 {
	if h.p.Type == PolicyRequests {
		return 1
	}
	return 0
}

// wait returns how long until h would admit the request, from d, the
// Limiter's answer to a Take of cost (the request's cost under h, or zero
// to ask without adding to the consumption): zero when it would admit it
// now.
//
// A tokens policy admits only while its bucket is below its value, so it
// needs a nanosecond more than the wait until the bucket reaches it.
// A Take of cost zero is refused only while the bucket is full, so for a
// requests policy asked that way the wait until one unit fits is worked
// out from what is left, at the limit's rate, rounded as MemoryLimiter
// rounds.
func (h policyHit) wait(d LimitDecision, cost float64) time.Duration {
	w := time.Duration(0)
	if !d.Allowed {
		w = max(d.RetryAfter, 0)
		if h.cost() == 0 && w < math.MaxInt64 {
			w++
		}
	}
	if c := h.cost(); c > cost && d.Remaining < c {
		need := math.Round((c - d.Remaining) * float64(h.limit.Per) / h.limit.Value)
		if !(need < float64(math.MaxInt64)) {
			return time.Duration(math.MaxInt64)
		}
		w = max(w, time.Duration(need))
	}
	return w
}

// maxRetryAfter caps the Retry-After of a refusal. A bucket overdrawn by
// a huge usage can need longer than a time.Duration holds (a Limiter then
// answers math.MaxInt64), and the header must stay a positive number.
const maxRetryAfter = 100 * 365 * 24 * time.Hour

// Limits returns the middleware that enforces rate-limits policies: it is
// the limits stage of a Gateway's pipeline, for hosts that compose stages
// by hand. It needs the caller's identity and options, so it runs behind
// Authenticate and ParseHeaders. A request that a policy refuses gets a
// 429 with Retry-After; an admitted one carries the x-ratelimit-* headers
// of the tightest policies, and tokens policies are charged the usage its
// answer reports. A Gateway behind Limits does not apply the policies
// again, and tells Limits what became of the request (a refusal of its
// own is refunded, a cache hit uses no tokens).
//
// The rate_limits of the caller's API key (APIKey.RateLimits) apply as
// policies too, checked before the stored ones. Nil policies apply no
// stored policy, only those rate_limits; a nil limiter means a
// MemoryLimiter of this middleware's own. Failures of the store or the
// limiter, and stored rate_limits that are not valid, refuse the request
// with a 500 and reach errLog (nil: slog.Default()).
func Limits(policies PolicyStore, limiter Limiter, errLog *slog.Logger) func(http.Handler) http.Handler {
	l := newLimits(policies, limiter, errLog)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r, st := withState(w, r)
			lw, err := l.admit(w, r, st) // logs its own failures
			if err != nil {
				WriteError(w, r, err)
				return
			}
			st.admitted = true
			defer func() { lw.settle(st.result) }()
			next.ServeHTTP(lw.writer(w), r)
		})
	}
}

// limits is the limits stage: the policies, the buckets they count in,
// the API keys' rate_limits parsed, and where their failures are logged.
type limits struct {
	policies PolicyStore
	limiter  Limiter
	keys     keyLimitCache
	errLog   *slog.Logger
}

func newLimits(policies PolicyStore, limiter Limiter, errLog *slog.Logger) *limits {
	if limiter == nil {
		limiter = &MemoryLimiter{}
	}
	if errLog == nil {
		errLog = slog.Default()
	}
	return &limits{policies: policies, limiter: limiter, keys: newKeyLimitCache(), errLog: errLog}
}

// admit applies the rate_limits of the caller's API key, then the
// caller's active rate-limits policies (those of its workspace and those
// of no workspace), to a request about to reach a provider. It returns
// the limitWriter the request must answer through (it adds the
// x-ratelimit-* headers and counts the tokens of the response), whose
// settle is called once the response is done, or nil when no policy
// applies or a Limits stage in front already admitted the request; or the
// 429 refusing the request. The 429's Retry-After is the longest wait among
// the matching policies that refuse, so that a retry after it is not
// refused by another one; the policies after the first refusal are only
// asked, at no cost.
//
// Policies are read from the store on every request, and the key's
// rate_limits from the key record the request was authenticated with, so
// a change applies at once. An error of the store or the Limiter, or
// stored rate_limits that are not valid, refuse the request.
func (l *limits) admit(w http.ResponseWriter, r *http.Request, st *requestState) (*limitWriter, error) {
	if st.admitted {
		return nil, nil
	}
	ctx := r.Context()
	var hits []policyHit
	if k := st.key; k != nil && len(k.RateLimits) > 0 {
		kh, err := l.keys.hits(k)
		if err != nil {
			l.errLog.ErrorContext(ctx, "gateway: API key rate_limits", "key", k.ID, "err", err)
			return nil, err
		}
		hits = kh[:len(kh):len(kh)] // shared: appending the policies copies it
	}
	if l.policies == nil {
		return l.take(w, r, st, hits)
	}
	ps, err := l.policies.Policies(ctx, st.identity.WorkspaceID)
	if err != nil {
		l.errLog.ErrorContext(ctx, "gateway: policy store", "err", err)
		return nil, err
	}
	for i := range ps {
		p := &ps[i]
		if p.Status != PolicyActive || p.WorkspaceID != "" && p.WorkspaceID != st.identity.WorkspaceID || !p.matches(st) {
			continue
		}
		if p.Type != PolicyRequests && p.Type != PolicyTokens {
			return nil, errors.New("gateway: policy " + p.ID + " has an unknown type")
		}
		hits = append(hits, policyHit{p: p, key: p.bucketKey(st), limit: Limit{Value: p.Value, Per: policyPeriod(p.Unit)}})
	}
	return l.take(w, r, st, hits)
}

// take admits the request under every policy of hits, in order, or
// refuses it (see admit).
func (l *limits) take(w http.ResponseWriter, r *http.Request, st *requestState, hits []policyHit) (*limitWriter, error) {
	if len(hits) == 0 {
		return nil, nil
	}
	ctx := r.Context()
	lw := &limitWriter{ResponseWriter: w, l: l, ctx: ctx, st: st, hits: hits, reqBytes: &st.body,
		estimate: r.Method == http.MethodPost && !uploadBody(r.Header.Get("Content-Type"))}
	for i, h := range hits {
		d, err := l.limiter.Take(ctx, h.key, h.limit, h.cost())
		if err != nil {
			l.errLog.ErrorContext(ctx, "gateway: rate limiter", "policy", h.p.ID, "err", err)
		} else if !d.Allowed {
			err = l.refusal(ctx, w, h, d, hits[i+1:])
		}
		if err != nil {
			lw.refund(hits[:i])
			return nil, err
		}
		lw.note(h, d.Remaining)
	}
	st.limited = lw
	if lw.tokens != nil {
		// Ask the transport for the encoding it decodes itself, so that
		// the usage in the response can be read.
		r.Header.Del("Accept-Encoding")
		st.wantUsage = true
	}
	return lw, nil
}

// refusal returns the 429 of a request that policy h refused with d. The
// policies after h (rest) are asked at no cost whether they would refuse
// too: the answer names the one of them all whose wait is the longest, and
// waits that long. An error of the Limiter in asking is logged and that
// policy left out.
func (l *limits) refusal(ctx context.Context, w http.ResponseWriter, h policyHit, d LimitDecision, rest []policyHit) error {
	worst, wait := h, h.wait(d, h.cost())
	for _, o := range rest {
		od, err := l.limiter.Take(ctx, o.key, o.limit, 0)
		if err != nil {
			l.errLog.WarnContext(ctx, "gateway: rate limiter", "policy", o.p.ID, "err", err)
			continue
		}
		if ow := o.wait(od, 0); ow > wait {
			worst, wait = o, ow
		}
	}
	p := worst.p
	limitHeader, remainingHeader := HeaderRateLimitRequests, HeaderRateLimitRemainingRequests
	if p.Type == PolicyTokens {
		limitHeader, remainingHeader = HeaderRateLimitTokens, HeaderRateLimitRemainingTokens
	}
	w.Header().Set(limitHeader, strconv.FormatFloat(p.Value, 'f', -1, 64))
	w.Header().Set(remainingHeader, "0")
	who := worst.src
	if who == "" {
		who = "policy " + policyLabel(p)
	}
	return &Error{Status: http.StatusTooManyRequests, Type: p.Type, Code: CodeRateLimitExceeded,
		RetryAfter: min(max(wait, time.Second), maxRetryAfter), Message: "rate limit exceeded: " + who +
			" allows " + strconv.FormatFloat(p.Value, 'f', -1, 64) + " " + p.Type + " per " + policyUnitName(p.Unit)}
}

func policyLabel(p *RateLimitsPolicy) string {
	if p.Name != "" {
		return quoteShort(p.Name)
	}
	return p.ID
}

func policyUnitName(unit string) string {
	switch unit {
	case PolicyPerMinute:
		return "minute"
	case PolicyPerHour:
		return "hour"
	}
	return "day"
}

// policyValue returns the value of a condition or group key for a request.
func policyValue(st *requestState, key string) (string, bool) {
	if key == "virtual_key" {
		return st.opts.VirtualKey, true
	}
	return conditionValue(st.identity, st.opts.Metadata, key)
}

// conditionValue is policyValue of a request by its caller's identity and
// metadata (RequestOptions.Metadata).
func conditionValue(id Identity, md map[string]string, key string) (string, bool) {
	switch key {
	case "api_key":
		return id.KeyID, true
	case "workspace_id":
		return id.WorkspaceID, true
	case "organisation_id":
		v, ok := md[MetadataOrganisation]
		return v, ok
	}
	if name, ok := strings.CutPrefix(key, "metadata."); ok {
		v, ok := md[name]
		return v, ok
	}
	return "", false
}

// matches reports whether every condition of p holds for the request.
func (p *RateLimitsPolicy) matches(st *requestState) bool {
	for _, c := range p.Conditions {
		if v, ok := policyValue(st, c.Key); !ok || v != c.Value {
			return false
		}
	}
	return true
}

// bucketKey names the bucket of p the request counts in: the policy id and
// the length-prefixed values of its group keys.
func (p *RateLimitsPolicy) bucketKey(st *requestState) string {
	var b strings.Builder
	b.WriteString(p.ID)
	for _, g := range p.GroupBy {
		v, _ := policyValue(st, g.Key)
		if g.Key == "api_key" && p.WorkspaceID == "" {
			// An operator's policy spans workspaces, whose key ids need
			// not differ: a key is named by its workspace too.
			v = st.identity.WorkspaceID + "\x00" + v
		}
		b.WriteByte(0)
		b.WriteString(strconv.Itoa(len(v)))
		b.WriteByte(':')
		b.WriteString(v)
	}
	return b.String()
}

// limitWriter adds the x-ratelimit-* headers to a response and, when token
// policies applied, reads usage.total_tokens from the response body as it
// passes, unchanged, to charge it when the response is done. Behind a
// Gateway, whose request state reads the usage of every answer for its
// log (see requestState.usageStart), it takes the usage read there rather
// than read the body twice.
type limitWriter struct {
	http.ResponseWriter
	l    *limits
	ctx  context.Context
	st   *requestState
	hits []policyHit // every policy that admitted the request

	req, tok       bool    // a requests / tokens policy applied
	reqLim, reqRem float64 // the tightest requests policy
	tokLim, tokRem float64 // the tightest tokens policy
	tokens         []policyHit

	started  bool
	status   int  // the status sent
	scan     bool // the body is being scanned here
	shared   bool // the Gateway's request state reads the body (st.usage)
	estimate bool // no reported usage: charge an estimate
	reqBytes *countingBody
	usage    usageScanner
}

// note records a policy that admitted the request with rem left.
func (lw *limitWriter) note(h policyHit, rem float64) {
	if h.p.Type == PolicyTokens {
		lw.tokens = append(lw.tokens, h)
		if !lw.tok || rem < lw.tokRem || rem == lw.tokRem && h.limit.Value < lw.tokLim {
			lw.tok, lw.tokLim, lw.tokRem = true, h.limit.Value, rem
		}
		return
	}
	if !lw.req || rem < lw.reqRem || rem == lw.reqRem && h.limit.Value < lw.reqLim {
		lw.req, lw.reqLim, lw.reqRem = true, h.limit.Value, rem
	}
}

func (lw *limitWriter) start(code int) {
	lw.started, lw.status = true, code
	h := lw.Header()
	if lw.req {
		setHeader(h, HeaderRateLimitRequests, strconv.FormatFloat(lw.reqLim, 'f', -1, 64))
		setHeader(h, HeaderRateLimitRemainingRequests, strconv.FormatFloat(max(0, math.Floor(lw.reqRem)), 'f', -1, 64))
	}
	if lw.tok {
		setHeader(h, HeaderRateLimitTokens, strconv.FormatFloat(lw.tokLim, 'f', -1, 64))
		setHeader(h, HeaderRateLimitRemainingTokens, strconv.FormatFloat(max(0, math.Floor(lw.tokRem)), 'f', -1, 64))
	}
	if lw.tokens == nil {
		return
	}
	if lw.st.gw != nil {
		lw.shared = true // a Gateway serves the request: its state reads the body
		return
	}
	if ok, sse, coding := usageAnswer(h); ok && coding == codingIdentity {
		lw.scan, lw.usage.sse = true, sse
	}
}

// WriteHeader adds the rate-limit headers before the status goes out.
func (lw *limitWriter) WriteHeader(code int) {
	if !lw.started && code >= 200 {
		lw.start(code)
	}
	lw.ResponseWriter.WriteHeader(code)
}

// Write passes p on, reading the usage in it.
func (lw *limitWriter) Write(p []byte) (int, error) {
	if !lw.started {
		lw.start(http.StatusOK)
	}
	n, err := lw.ResponseWriter.Write(p)
	if lw.scan {
		lw.usage.write(p[:n])
	}
	return n, err
}

// Flush sends buffered data to the client.
func (lw *limitWriter) Flush() {
	http.NewResponseController(lw.ResponseWriter).Flush()
}

// Unwrap returns the underlying ResponseWriter, for http.ResponseController.
func (lw *limitWriter) Unwrap() http.ResponseWriter { return lw.ResponseWriter }

// writer returns the ResponseWriter the admitted request answers
// through: lw, or w when no policy applied (lw is nil).
func (lw *limitWriter) writer(w http.ResponseWriter) http.ResponseWriter {
	if lw == nil {
		return w
	}
	return lw
}

// settle charges the tokens the response used to every token policy that
// admitted the request: the usage it reported, else an estimate. It runs
// even when the response was aborted or the caller went away, for what was
// seen. A cache hit used no provider tokens and is not charged.
//
// A request the gateway itself refused (res.own: an error of its own, 4xx
// but 429, such as incomplete host settings) before any of it reached a
// provider gets its unit back from every requests policy: it cost no
// provider anything. Cache hits, which reach no provider either, stay
// charged. settle on a nil lw does nothing.
func (lw *limitWriter) settle(res result) {
	if lw == nil {
		return
	}
	if lw.started && lw.status >= 400 && lw.status <= 499 && lw.status != http.StatusTooManyRequests &&
		!res.upstream && res.own {
		lw.refund(lw.hits)
		return
	}
	if lw.tokens == nil || !lw.started || res.cacheHit {
		return
	}
	u := &lw.usage
	if lw.shared {
		u = lw.st.usageDone()
	}
	total, ok := u.total()
	if !ok {
		if !lw.estimate || lw.status < 200 || lw.status > 299 {
			return
		}
		total = math.Ceil(float64(lw.reqBytes.n)/4) + u.estimate()
	}
	if total <= 0 {
		return
	}
	ctx := context.WithoutCancel(lw.ctx)
	for _, h := range lw.tokens {
		if err := lw.l.limiter.Charge(ctx, h.key, h.limit, total); err != nil {
			lw.l.errLog.WarnContext(ctx, "gateway: rate limiter charge", "err", err)
		}
	}
}

// takeAttempt takes one more unit from every requests policy that admitted
// the request, for an upstream attempt beyond the first (a retry, or
// another target): the trust model counts each attempt, and admission took the
// first. It reports false, taking nothing, when a policy refuses or the
// Limiter fails (logged): the request then makes no more attempts. A nil
// lw takes nothing and reports true.
func (lw *limitWriter) takeAttempt(ctx context.Context) bool {
	if lw == nil {
		return true
	}
	for i, h := range lw.hits {
		if h.p.Type != PolicyRequests {
			continue
		}
		d, err := lw.l.limiter.Take(ctx, h.key, h.limit, 1)
		if err != nil {
			lw.l.errLog.WarnContext(ctx, "gateway: rate limiter, retry or fallback", "policy", h.p.ID, "err", err)
		}
		if err != nil || !d.Allowed {
			lw.refund(lw.hits[:i])
			return false
		}
	}
	return true
}

// refund gives back the unit each requests policy among hits took.
func (lw *limitWriter) refund(hits []policyHit) {
	ctx := context.WithoutCancel(lw.ctx)
	for _, h := range hits {
		if h.p.Type != PolicyRequests {
			continue
		}
		if err := lw.l.limiter.Charge(ctx, h.key, h.limit, -1); err != nil {
			lw.l.errLog.WarnContext(ctx, "gateway: rate limiter refund", "policy", h.p.ID, "err", err)
		}
	}
}

// uploadBody reports whether a request body of this content type is an
// upload rather than a request for tokens.
func uploadBody(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch {
	case strings.HasPrefix(mt, "multipart/"), mt == "application/octet-stream",
		strings.HasPrefix(mt, "audio/"), strings.HasPrefix(mt, "image/"), strings.HasPrefix(mt, "video/"):
		return true
	}
	return false
}
