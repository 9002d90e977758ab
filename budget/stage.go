package budget

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/internal/control"
	"github.com/modelgateway/gateway/internal/jsonscan"
	"github.com/modelgateway/gateway/observe"
)

// budgetHit is one budget applied to one request: a usage-limits policy's
// entity, or an API key's or workspace's usage limit.
type budgetHit struct {
	policyID string // the counter's policy id
	valueKey string
	label    string // what a refusal and the logs name
	typ      string // Cost or Tokens
	limit    float64
	alert    float64 // negative: no alert threshold
	reset    string
	days     int
	anchor   string // the start of periods of days (RFC 3339)

	workspace string
	resType   string // the audit record's resource: usage_limits_policies, api_keys or workspaces
	resID     string
}

// period returns the counter period of h at now. The periods of the
// calendar resets are kept until they end, so that most requests format
// none.
func (b *Stage) period(h *budgetHit, now time.Time) string {
	var cur *atomic.Pointer[calendarPeriod]
	switch {
	case h.reset == ResetWeekly:
		cur = &b.weekly
	case h.reset == ResetMonthly:
		cur = &b.monthly
	case h.days == 0:
		return ""
	default:
		start, _ := usagePeriod(h.reset, h.days, h.anchor, now)
		return periodKey(h.reset, h.days, start)
	}
	if p := cur.Load(); p != nil && !now.Before(p.start) && now.Before(p.next) {
		return p.key
	}
	start, next := usagePeriod(h.reset, 0, "", now)
	p := &calendarPeriod{start: start, next: next, key: periodKey(h.reset, 0, start)}
	cur.Store(p)
	return p.key
}

// calendarPeriod is a weekly or monthly period and its counter name.
type calendarPeriod struct {
	start, next time.Time
	key         string
}

// Stage is the budgets of a gateway: usage-limits policies and the
// usage_limits of API keys and workspaces. It is a gateway.Admission,
// which the host puts in gateway.Options.Admissions: it admits a
// data-plane request while every budget that applies to it has room,
// reserving an estimate of its usage, and settles the real usage once
// the answer is done. Mount serves its control routes. Make one with New;
// it is safe for concurrent use.
type Stage struct {
	policies   Store // nil: no stored policies
	counter    Counter
	workspaces Workspaces // nil: no workspace usage_limits
	prices     gateway.PriceTable
	audit      observe.AuditStore
	errLog     *slog.Logger
	now        func() time.Time
	keys       *lru.Cache[string, *budgetSet] // parsed API keys' usage_limits, by key id
	wss        *lru.Cache[string, *budgetSet] // workspaces' usage_limits, by workspace id

	weekly, monthly atomic.Pointer[calendarPeriod] // the latest of each (see period)
}

// Options configures New. Its zero value enforces only the usage_limits
// of API keys, counted in the process.
type Options struct {
	// Store holds the usage-limits policies, enforced on every
	// data-plane request of their workspace and served under
	// /policies/usage-limits. Nil means none: those routes answer 404.
	Store Store

	// Counter keeps the usage of the budgets' entities. Nil means a
	// MemoryCounter of the Stage's own; replicas that must share budgets
	// need a shared Counter (sqlstore.Store, redis.Budget).
	Counter Counter

	// Workspaces gives the workspaces' usage_limits, enforced on every
	// request of the workspace (its record is read again at most once a
	// second), and the workspaces an organisation key's list of policies
	// goes through when Store cannot list them all at once. Nil means no
	// workspace has usage_limits.
	Workspaces Workspaces

	// Prices prices the tokens of cost budgets. Nil means
	// gateway.DefaultPrices(). Give the gateway's Options.Prices, so that
	// budgets charge what the request logs say.
	Prices gateway.PriceTable

	// Audit receives one record each time an entity's usage crosses its
	// alert threshold. Nil means none (the warning still goes to
	// ErrorLog). The routes' writes are audited by the Auditor given to
	// Mount.
	Audit observe.AuditStore

	// ErrorLog receives the stores' and counter's failures, and the
	// warnings of alert thresholds and spent budgets. Nil means
	// slog.Default().
	ErrorLog *slog.Logger

	// Now is the clock of the periods. Nil means time.Now.
	Now func() time.Time
}

// Bounds of the budgets' caches and estimates.
const (
	maxBudgetSets = 1 << 14
	// workspaceBudgetTTL is how long a workspace's usage_limits are used
	// before its record is read again.
	workspaceBudgetTTL = time.Second
	// defaultCompletionEstimate is the completion tokens reserved for a
	// request that does not set max_tokens.
	defaultCompletionEstimate = 256
	// maxBudgetPeek is the largest streamed JSON body read, to estimate
	// its usage from its size and max_tokens; a larger one is estimated
	// from its Content-Length alone.
	maxBudgetPeek = 1 << 20
)

// New returns the budgets opts describes.
func New(opts Options) *Stage {
	b := &Stage{policies: opts.Store, counter: opts.Counter, workspaces: opts.Workspaces,
		prices: opts.Prices, audit: opts.Audit, errLog: opts.ErrorLog, now: opts.Now}
	if b.counter == nil {
		b.counter = &MemoryCounter{}
	}
	if b.prices == nil {
		b.prices = gateway.DefaultPrices()
	}
	if b.errLog == nil {
		b.errLog = slog.Default()
	}
	if b.now == nil {
		b.now = time.Now
	}
	b.keys, _ = lru.New[string, *budgetSet](maxBudgetSets)
	b.wss, _ = lru.New[string, *budgetSet](maxBudgetSets)
	return b
}

var _ gateway.Admission = (*Stage)(nil)

// budgetRun is the budgets an admitted request reserved in, settled
// when it is done.
type budgetRun struct {
	b        *Stage
	ctx      context.Context
	traceID  string
	keyID    string
	method   string
	path     string
	hits     []budgetHit
	res      []Reservation
	prompt   float64 // estimated prompt tokens
	complete float64 // estimated completion tokens
	model    string
	provider string
}

// Admit implements gateway.Admission: it applies every budget of the
// request, and settles its usage from the request's final record. A
// spent budget is a 412 budget_exhausted.
func (b *Stage) Admit(r *http.Request) (func(*gateway.RequestLog), error) {
	br, err := b.admit(r)
	if err != nil {
		if ge := (*gateway.Error)(nil); !errors.As(err, &ge) {
			err = internal(err) // logged by admit: answered as a store failure is
		}
		return nil, err
	}
	if br == nil {
		return nil, nil
	}
	return br.settle, nil
}

// admit applies every budget of the request: the usage_limits of its API
// key and of its workspace, then the active usage-limits policies of its
// workspace that match it. It returns the run to settle once the answer is
// done (nil when no budget applies), having read a streamed JSON body to
// estimate its usage (RequestBody); or the 412 of a spent budget, or the
// 500 of a store or counter failure (logged).
func (b *Stage) admit(r *http.Request) (*budgetRun, error) {
	ctx := r.Context()
	id, _ := gateway.IdentityFrom(ctx)
	opts, _ := gateway.RequestOptionsFrom(ctx)
	ws := id.WorkspaceID
	var hits []budgetHit
	if k, _ := gateway.APIKeyFrom(ctx); k != nil && len(k.UsageLimits) > 0 {
		s, ok := b.keys.Get(k.ID)
		if !ok || s.ws != k.WorkspaceID || !bytes.Equal(s.raw, k.UsageLimits) {
			s = newBudgetSet("api_key", k.ID, k.WorkspaceID, k.UsageLimits, k.CreatedAt)
			b.keys.Add(k.ID, s)
		}
		if s.err != nil {
			b.errLog.ErrorContext(ctx, "gateway: API key usage_limits", "key", k.ID, "err", s.err)
			return nil, s.err
		}
		hits = s.hits[:len(s.hits):len(s.hits)]
	}
	if b.workspaces != nil && ws != "" {
		s, err := b.workspaceSet(ctx, ws)
		if err != nil {
			b.errLog.ErrorContext(ctx, "gateway: workspace usage_limits", "workspace", ws, "err", err)
			return nil, err
		}
		hits = append(hits, s.hits...)
	}
	if b.policies != nil && ws != "" {
		ps, err := b.policies.UsageLimitsPolicies(ctx, ws)
		if err != nil {
			b.errLog.ErrorContext(ctx, "gateway: usage-limits policy store", "err", err)
			return nil, err
		}
		for i := range ps {
			p := &ps[i]
			if p.Status != gateway.PolicyActive || p.WorkspaceID != ws || !p.matches(id, &opts) {
				continue
			}
			alert := -1.0
			if p.AlertThreshold != nil {
				alert = *p.AlertThreshold
			}
			hits = append(hits, budgetHit{policyID: p.ID, valueKey: p.valueKey(id, &opts), label: "usage-limits policy " + usageLabel(p),
				typ: p.Type, limit: p.CreditLimit, alert: alert, reset: p.PeriodicReset, days: p.PeriodicResetDays,
				anchor: p.CreatedAt, workspace: ws, resType: "usage_limits_policies", resID: p.ID})
		}
	}
	if len(hits) == 0 {
		return nil, nil
	}
	var body []byte
	if r.Method == http.MethodPost {
		var err error
		if body, err = gateway.RequestBody(r, maxBudgetPeek); err != nil {
			return nil, err
		}
	}
	traceID, _ := gateway.TraceIDFrom(ctx)
	br := &budgetRun{b: b, ctx: ctx, traceID: traceID, keyID: id.KeyID, method: r.Method, path: r.URL.Path,
		hits: hits, res: make([]Reservation, len(hits)), provider: opts.Provider}
	if r.Method == http.MethodPost && !uploadBody(r.Header.Get("Content-Type")) {
		br.estimate(r, body) // other requests ask for no tokens: nothing is reserved, nor charged unless reported
	}
	now := b.now()
	for i := range hits {
		h := &hits[i]
		est := br.prompt + br.complete
		if h.typ == Cost {
			est, _ = b.prices.Cost(br.provider, br.model, int64(br.prompt), int64(br.complete), 0)
		}
		key := EntityKey{PolicyID: h.policyID, ValueKey: h.valueKey, Period: b.period(h, now)}
		res, err := b.counter.Reserve(ctx, key, h.limit, est)
		if err == nil && !res.Allowed {
			err = budgetExhausted(h, res.Usage)
		} else if err != nil {
			b.errLog.ErrorContext(ctx, "gateway: usage counter", "budget", h.label, "err", err)
		}
		if err != nil {
			br.res = br.res[:i]
			br.release()
			return nil, err
		}
		br.res[i] = res
	}
	return br, nil
}

// workspaceSet returns the parsed usage_limits of workspace ws, reading
// its record at most once per workspaceBudgetTTL. A workspace that is not
// registered has none.
func (b *Stage) workspaceSet(ctx context.Context, ws string) (*budgetSet, error) {
	now := time.Now()
	if s, ok := b.wss.Get(ws); ok && now.Sub(s.fetched) < workspaceBudgetTTL {
		return s, s.err
	}
	rec, err := b.workspaces.Workspace(ctx, ws)
	var s *budgetSet
	switch {
	case errors.Is(err, gateway.ErrNotFound):
		s = &budgetSet{ws: ws}
	case err != nil:
		return nil, err
	case len(rec.UsageLimits) == 0:
		s = &budgetSet{ws: ws}
	default:
		s = newBudgetSet("workspace", ws, ws, rec.UsageLimits, rec.CreatedAt)
	}
	s.fetched = now
	b.wss.Add(ws, s)
	return s, s.err
}

// estimate sets the estimated usage of a request for tokens (a POST that
// is not an upload): a token per 4 bytes of its body (its Content-Length
// when not read), and its max_tokens (or max_completion_tokens,
// max_output_tokens), else 256.
func (br *budgetRun) estimate(r *http.Request, body []byte) {
	n := max(r.ContentLength, 0)
	if body != nil {
		n = int64(len(body))
	}
	br.prompt = math.Ceil(float64(n) / 4)
	br.complete = defaultCompletionEstimate
	if body == nil {
		return
	}
	model, m, ok := scanBody(body)
	if br.model == "" {
		br.model = model
	}
	if ok {
		br.complete = float64(m)
	}
}

// scanBody returns what a JSON request body sets at its top level: the
// model it names (its first member named model, when a string), and its
// completion-token cap (max_tokens, max_completion_tokens or
// max_output_tokens, the first that is an integer of at least 0), found
// reporting whether it has one. A body that is not a valid JSON object
// sets neither.
func scanBody(body []byte) (model string, maxTok int64, found bool) {
	i := jsonscan.SkipSpace(body, 0)
	if i >= len(body) || body[i] != '{' || !json.Valid(body) {
		return "", 0, false
	}
	seenModel := false
	jsonscan.EachMember(body[i:], func(name, v []byte) bool {
		switch string(name) {
		case "model":
			if seenModel {
				break
			}
			seenModel = true
			if v[0] != '"' {
				break
			}
			if s := v[1 : len(v)-1]; bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
				model = string(s)
			} else {
				json.Unmarshal(v, &model)
			}
		case "max_tokens", "max_completion_tokens", "max_output_tokens":
			if n, ok := jsonscan.Int(v, 64); ok && n >= 0 && !found {
				maxTok, found = n, true
			}
		}
		return !seenModel || !found
	})
	return model, maxTok, found
}

// uploadBody reports whether a request body of this content type is an
// upload rather than a request for tokens, as the rate limits tell them
// apart.
func uploadBody(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	return strings.HasPrefix(mt, "multipart/") || mt == "application/octet-stream" ||
		strings.HasPrefix(mt, "audio/") || strings.HasPrefix(mt, "image/") || strings.HasPrefix(mt, "video/")
}

// usageLabel names a policy in a refusal: its name, else its id.
func usageLabel(p *Policy) string {
	if p.Name != "" {
		return control.Quote(p.Name)
	}
	return p.ID
}

// budgetExhausted is the 412 of a request refused by budget h, whose entity
// has used usage.
func budgetExhausted(h *budgetHit, usage float64) *gateway.Error {
	unit := " tokens"
	if h.typ == Cost {
		unit = " USD"
	}
	per := ""
	switch {
	case h.reset != "":
		per = " per " + map[string]string{ResetWeekly: "week", ResetMonthly: "month"}[h.reset]
	case h.days > 0:
		per = " per " + strconv.Itoa(h.days) + " days"
	}
	return &gateway.Error{Status: http.StatusPreconditionFailed, Type: TypeLimitExceeded, Code: CodeExhausted,
		Message: "usage limit exceeded: " + h.label + " allows " + strconv.FormatFloat(h.limit, 'f', -1, 64) + unit + per +
			", and " + strconv.FormatFloat(usage, 'f', -1, 64) + unit + " are used"}
}

// release gives back the reservations of a request that did not go on.
// release on a nil br does nothing.
func (br *budgetRun) release() {
	if br == nil {
		return
	}
	br.charge(0, 0, 0)
}

// settle records the usage the answer reported in every budget of the
// request, in place of its reservations: its total tokens, or their cost
// by the price table, from rec, the request's final record. An answer
// that reported none is charged the estimate when it succeeded (2xx)
// after reaching a provider, else nothing; a cache hit, or an answer
// shared from another caller's cache fill, nothing (AnswerFrom). A
// request refused after the budgets admitted it (by a later stage) is
// charged nothing.
func (br *budgetRun) settle(rec *gateway.RequestLog) {
	var tokens, cost float64
	if reached, own, usage := gateway.AnswerFrom(br.ctx); own {
		model := rec.Model
		if model == "" {
			model = br.model
		}
		switch {
		case usage:
			tokens = float64(rec.TotalTokens)
			cost, _ = br.b.prices.Cost(rec.Provider, model, rec.PromptTokens, rec.CompletionTokens, rec.CachedPromptTokens)
		case reached && rec.Status >= 200 && rec.Status <= 299:
			tokens = br.prompt + br.complete
			cost, _ = br.b.prices.Cost(rec.Provider, model, int64(br.prompt), int64(br.complete), 0)
		}
	}
	br.charge(tokens, cost, rec.Status)
}

// charge settles every reservation with tokens or cost, by type; status
// is the answer's, for the audit record of an alert (0: none went out).
func (br *budgetRun) charge(tokens, cost float64, status int) {
	b := br.b
	ctx := context.WithoutCancel(br.ctx)
	now := b.now()
	for i, r := range br.res {
		h := &br.hits[i]
		used := tokens
		if h.typ == Cost {
			used = cost
		}
		s, err := b.counter.Settle(ctx, r, b.period(h, now), used, Thresholds{Alert: h.alert, Limit: h.limit})
		if err != nil {
			b.errLog.WarnContext(ctx, "gateway: usage counter settle", "budget", h.label, "err", err)
			continue
		}
		if s.AlertCrossed {
			br.alert(ctx, h, s.Usage, now, status)
		}
		if s.LimitCrossed {
			b.errLog.WarnContext(ctx, "gateway: usage limit exhausted", "budget", h.label, "value_key", h.valueKey,
				"usage", s.Usage, "credit_limit", h.limit, "type", h.typ)
		}
	}
}

// alert writes the warning and the audit record of an entity of h whose
// usage crossed its alert threshold.
func (br *budgetRun) alert(ctx context.Context, h *budgetHit, usage float64, now time.Time, status int) {
	b := br.b
	b.errLog.WarnContext(ctx, "gateway: usage limit alert threshold reached", "budget", h.label, "value_key", h.valueKey,
		"usage", usage, "alert_threshold", h.alert, "credit_limit", h.limit, "type", h.typ)
	if b.audit == nil {
		return
	}
	rec := observe.AuditRecord{Time: now.UTC(), RequestID: br.traceID, KeyID: br.keyID, WorkspaceID: h.workspace,
		Method: br.method, URI: br.path, Action: h.resType + ".alert_threshold", ResourceType: h.resType,
		ResourceID: h.resID, Status: status}
	if err := b.audit.AddAuditRecord(ctx, &rec); err != nil {
		b.errLog.ErrorContext(ctx, "gateway: audit store", "err", err)
	}
}

// internal is the 500 of a failure the caller is told nothing about,
// as gateway.WriteError answers an error that is not a *gateway.Error.
func internal(err error) *gateway.Error {
	return &gateway.Error{Status: http.StatusInternalServerError, Type: gateway.TypeGateway, Code: gateway.CodeInternal,
		Message: "internal gateway error", Err: err}
}
