package guardrail

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultTimeout is how long a check may take, unless it is a Timeouter.
const DefaultTimeout = 5 * time.Second

// abandonAfter is how long past its deadline the engine still waits for a
// check that does not return when its context is done.
const abandonAfter = time.Second

// Definition is a guardrail as the registry compiles it: its checks and
// what their failures mean. The /guardrails API's JSON object is decoded
// into one by the product that serves it.
type Definition struct {
	// ID names the guardrail in results.
	ID string

	// Checks are the guardrail's checks, in order.
	Checks []CheckDefinition

	// Deny makes a failed check refuse the request (actions.deny); when
	// false a failed check is only reported.
	Deny bool

	// AllowOnError makes a check that errors or passes its time limit
	// count as passed (on_error: allow). By default it counts as failed:
	// the guardrail fails closed.
	AllowOnError bool
}

// CheckDefinition is one check of a Definition, as the reference API
// writes it.
type CheckDefinition struct {
	ID         string          `json:"id"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// Guardrail is a compiled guardrail, ready to run. It is immutable and
// safe for concurrent use.
type Guardrail struct {
	id           string
	deny         bool
	allowOnError bool
	checks       []compiled
}

type compiled struct {
	id       string
	check    Check
	rewrites bool
	timeout  time.Duration
}

// ID returns the guardrail's id.
func (g *Guardrail) ID() string { return g.id }

// Deny reports whether a failed check refuses the request.
func (g *Guardrail) Deny() bool { return g.deny }

// Compile builds every check of d. A definition without checks, an
// unknown check id or a bad parameter is an *Error whose Param names the
// check ("checks[2].parameters.rule").
func (r *Registry) Compile(d Definition) (*Guardrail, error) {
	if len(d.Checks) == 0 {
		return nil, &Error{Code: CodeInvalidParameter, Param: "checks", Message: "checks must hold at least one check"}
	}
	g := &Guardrail{id: d.ID, deny: d.Deny, allowOnError: d.AllowOnError, checks: make([]compiled, len(d.Checks))}
	for i, cd := range d.Checks {
		c, err := r.New(cd.ID, cd.Parameters)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				e = &Error{Code: CodeInvalidParameter, Message: err.Error()}
			}
			return nil, e.within("checks[" + strconv.Itoa(i) + "]")
		}
		cc := compiled{id: cd.ID, check: c, timeout: DefaultTimeout}
		if rw, ok := c.(Rewriter); ok {
			cc.rewrites = rw.Rewrites()
		}
		if t, ok := c.(Timeouter); ok && t.Timeout() > 0 {
			cc.timeout = t.Timeout()
		}
		g.checks[i] = cc
	}
	return g, nil
}

// CheckResult is the outcome of one check in a Result.
type CheckResult struct {
	ID          string        // the check id
	Verdict     bool          // passed, or excused by on_error: allow
	Explanation string        // why
	Error       string        // why the check could not decide ("" when it did)
	Duration    time.Duration // how long it ran
	Transformed bool          // whether it rewrote the text
}

// MarshalJSON encodes r as a check of a hook result: id, verdict,
// explanation, error (when any), execution_time in milliseconds and
// transformed.
func (r CheckResult) MarshalJSON() ([]byte, error) {
	return appendCheckResult(make([]byte, 0, 128), &r), nil
}

// Result is the outcome of one guardrail.
type Result struct {
	ID       string        // the guardrail id
	Verdict  bool          // whether every check passed
	Deny     bool          // whether the failure refuses the request: !Verdict and the guardrail denies
	Checks   []CheckResult // one for each check, in the definition's order
	Duration time.Duration // the longest of its checks' durations
}

// MarshalJSON encodes r as a hook result: id, verdict, deny, checks and
// execution_time in milliseconds.
func (r Result) MarshalJSON() ([]byte, error) {
	return appendResult(make([]byte, 0, 64+128*len(r.Checks)), &r), nil
}

// Outcome is the outcome of every guardrail of one phase.
type Outcome struct {
	Results []Result // one for each guardrail, in order

	// Parts is the text after every rewriting check, one element for
	// each of Input.Parts; Transformed reports whether it differs from
	// the input's (write it back with Texts.Replace).
	Parts       []string
	Transformed bool
}

// Denied reports whether a guardrail refuses the request.
func (o *Outcome) Denied() bool {
	for _, r := range o.Results {
		if r.Deny {
			return true
		}
	}
	return false
}

// Failed reports whether any guardrail had a failed check, denying or not.
func (o *Outcome) Failed() bool {
	for _, r := range o.Results {
		if !r.Verdict {
			return true
		}
	}
	return false
}

// Run runs the guardrails' checks on in: all of them concurrently, except
// the rewriting ones, which run one after another in order (see
// Rewriter). Each check has its time limit; a check that errors or passes
// it fails its guardrail unless the guardrail allows errors. Run returns
// when every check has finished or been abandoned; in is not modified.
func Run(ctx context.Context, in *Input, guardrails ...*Guardrail) Outcome {
	base := *in
	base.Text = strings.Join(base.Parts, "\n")
	out := Outcome{Results: make([]Result, len(guardrails)), Parts: base.Parts}
	type slot struct{ g, c int }
	var rewriters []slot
	var wg sync.WaitGroup
	for gi, g := range guardrails {
		out.Results[gi] = Result{ID: g.id, Verdict: true, Checks: make([]CheckResult, len(g.checks))}
		for ci := range g.checks {
			if g.checks[ci].rewrites {
				rewriters = append(rewriters, slot{gi, ci})
				continue
			}
			wg.Go(func() {
				out.Results[gi].Checks[ci], _ = runOne(ctx, g, &g.checks[ci], &base)
			})
		}
	}
	if len(rewriters) > 0 {
		wg.Go(func() {
			cur := base
			for _, s := range rewriters {
				g := guardrails[s.g]
				res, parts := runOne(ctx, g, &g.checks[s.c], &cur)
				if parts != nil {
					cur.Parts = parts
					cur.Text = strings.Join(parts, "\n")
					out.Transformed = true
				}
				out.Results[s.g].Checks[s.c] = res
			}
			out.Parts = cur.Parts
		})
	}
	wg.Wait()
	for gi, g := range guardrails {
		r := &out.Results[gi]
		for _, c := range r.Checks {
			r.Verdict = r.Verdict && c.Verdict
			r.Duration = max(r.Duration, c.Duration)
		}
		r.Deny = !r.Verdict && g.deny
	}
	return out
}

// runOne runs one check under its time limit and returns its result and,
// when it rewrote the text, the new parts.
func runOne(ctx context.Context, g *Guardrail, c *compiled, in *Input) (CheckResult, []string) {
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	type answer struct {
		v   Verdict
		err error
	}
	done := make(chan answer, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- answer{err: &Error{Message: "the check panicked"}}
			}
		}()
		v, err := c.check.Check(cctx, in)
		done <- answer{v, err}
	}()
	var a answer
	select {
	case a = <-done:
	case <-cctx.Done():
		// The check should return now; one that ignores its context is
		// abandoned a little later.
		t := time.NewTimer(abandonAfter)
		select {
		case a = <-done:
		case <-t.C:
			a.err = cctx.Err()
		}
		t.Stop()
	}
	res := CheckResult{ID: c.id, Duration: time.Since(start)}
	if a.err != nil {
		res.Error = errorText(cctx, a.err)
		res.Verdict = g.allowOnError
		if g.allowOnError {
			res.Explanation = "The check could not decide (" + res.Error + "); the guardrail allows errors."
		} else {
			res.Explanation = "The check could not decide (" + res.Error + "); the guardrail fails closed."
		}
		return res, nil
	}
	res.Verdict, res.Explanation = a.v.Pass, a.v.Explanation
	if c.rewrites && a.v.Parts != nil && len(a.v.Parts) == len(in.Parts) && !equalParts(a.v.Parts, in.Parts) {
		res.Transformed = true
		return res, a.v.Parts
	}
	return res, nil
}

// errorText says why a check could not decide, without the check's own
// error text unless it is an *Error (which is written for the caller):
// other errors may carry URLs or credentials.
func errorText(ctx context.Context, err error) string {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e.Message
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "check error"
}

func equalParts(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
