package guardrail

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// testRegistry holds the built-ins and checks driven by the test.
func testRegistry(t *testing.T) *Registry {
	t.Helper()
	r := NewRegistry(Env{})
	r.Register("test.fail", func(json.RawMessage) (Check, error) {
		return CheckFunc(func(context.Context, *Input) (Verdict, error) { return Verdict{Explanation: "no"}, nil }), nil
	})
	r.Register("test.error", func(json.RawMessage) (Check, error) {
		return CheckFunc(func(context.Context, *Input) (Verdict, error) {
			return Verdict{}, errors.New("dial tcp https://user:secret@host: refused")
		}), nil
	})
	r.Register("test.panic", func(json.RawMessage) (Check, error) {
		return CheckFunc(func(context.Context, *Input) (Verdict, error) { panic("boom") }), nil
	})
	return r
}

func compile(t *testing.T, r *Registry, d Definition) *Guardrail {
	t.Helper()
	g, err := r.Compile(d)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func checks(ids ...string) []CheckDefinition {
	var out []CheckDefinition
	for _, id := range ids {
		c := CheckDefinition{ID: id}
		if i := strings.IndexByte(id, ' '); i > 0 {
			c = CheckDefinition{ID: id[:i], Parameters: json.RawMessage(id[i+1:])}
		}
		out = append(out, c)
	}
	return out
}

func TestRunVerdicts(t *testing.T) {
	r := testRegistry(t)
	in := &Input{Phase: BeforeRequest, Parts: []string{"hello", "world"}}
	tests := []struct {
		name            string
		def             Definition
		verdict, denied bool
		checkVerdicts   []bool
		errorOnCheck    int // index of the check with an error, -1 none
	}{
		{"pass", Definition{ID: "g", Deny: true, Checks: checks(`default.contains {"words":["world"]}`, `default.wordCount {"maxWords":2}`)}, true, false, []bool{true, true}, -1},
		{"fail deny", Definition{ID: "g", Deny: true, Checks: checks(`default.contains {"words":["world"]}`, "test.fail")}, false, true, []bool{true, false}, -1},
		{"fail log", Definition{ID: "g", Checks: checks("test.fail")}, false, false, []bool{false}, -1},
		{"error fails closed", Definition{ID: "g", Deny: true, Checks: checks("test.error")}, false, true, []bool{false}, 0},
		{"error allowed", Definition{ID: "g", Deny: true, AllowOnError: true, Checks: checks("test.error")}, true, false, []bool{true}, 0},
		{"panic fails closed", Definition{ID: "g", Deny: true, Checks: checks("test.panic")}, false, true, []bool{false}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := Run(context.Background(), in, compile(t, r, tc.def))
			res := out.Results[0]
			if res.Verdict != tc.verdict || out.Denied() != tc.denied || out.Failed() == tc.verdict {
				t.Fatalf("verdict %v denied %v failed %v, want %v %v", res.Verdict, out.Denied(), out.Failed(), tc.verdict, tc.denied)
			}
			for i, c := range res.Checks {
				if c.Verdict != tc.checkVerdicts[i] || c.ID != tc.def.Checks[i].ID {
					t.Errorf("check %d: %+v", i, c)
				}
				if (c.Error != "") != (i == tc.errorOnCheck) {
					t.Errorf("check %d error %q", i, c.Error)
				}
				if strings.Contains(c.Error+c.Explanation, "secret") {
					t.Errorf("check %d shows the error's text: %q", i, c.Error)
				}
			}
			if out.Transformed {
				t.Error("transformed without a rewriting check")
			}
		})
	}
}

// blocking is a check that waits until released or its context is done,
// counting the calls running at once.
type blocking struct {
	release   chan struct{}
	running   *atomic.Int32
	peak      *atomic.Int32
	limit     time.Duration
	ignoreCtx bool
	started   chan struct{} // if not nil, told of each call
}

func (b *blocking) Timeout() time.Duration { return b.limit }

func (b *blocking) Check(ctx context.Context, _ *Input) (Verdict, error) {
	n := b.running.Add(1)
	defer b.running.Add(-1)
	if b.started != nil {
		b.started <- struct{}{}
	}
	for {
		p := b.peak.Load()
		if n <= p || b.peak.CompareAndSwap(p, n) {
			break
		}
	}
	if b.ignoreCtx {
		<-b.release
		return Verdict{Pass: true}, nil
	}
	select {
	case <-b.release:
		return Verdict{Pass: true, Explanation: "released"}, nil
	case <-ctx.Done():
		return Verdict{}, ctx.Err()
	}
}

func TestRunConcurrently(t *testing.T) {
	var running, peak atomic.Int32
	release, started := make(chan struct{}), make(chan struct{}, 4)
	r := &Registry{}
	r.Register("test.block", func(json.RawMessage) (Check, error) {
		return &blocking{release: release, running: &running, peak: &peak, limit: time.Minute, started: started}, nil
	})
	g := compile(t, r, Definition{ID: "g", Checks: checks("test.block", "test.block", "test.block")})
	g2 := compile(t, r, Definition{ID: "h", Checks: checks("test.block")})
	done := make(chan Outcome)
	go func() { done <- Run(context.Background(), &Input{}, g, g2) }()
	// All four checks must be running at once before any is released.
	for range 4 {
		select {
		case <-started:
		case <-done:
			t.Fatal("Run returned early")
		}
	}
	close(release)
	out := <-done
	if peak.Load() != 4 || !out.Results[0].Verdict || !out.Results[1].Verdict {
		t.Fatalf("peak %d, outcome %+v", peak.Load(), out)
	}
}

func TestRunTimeout(t *testing.T) {
	var running, peak atomic.Int32
	r := &Registry{}
	r.Register("test.slow", func(json.RawMessage) (Check, error) {
		return &blocking{release: make(chan struct{}), running: &running, peak: &peak, limit: 10 * time.Millisecond}, nil
	})
	for _, allow := range []bool{false, true} {
		g := compile(t, r, Definition{ID: "g", Deny: true, AllowOnError: allow, Checks: checks("test.slow")})
		out := Run(context.Background(), &Input{}, g)
		c := out.Results[0].Checks[0]
		if c.Error != "timed out" || c.Verdict != allow || out.Denied() == allow {
			t.Errorf("allow %v: %+v denied %v", allow, c, out.Denied())
		}
	}
}

func TestRunAbandonsACheckIgnoringItsContext(t *testing.T) {
	var running, peak atomic.Int32
	release := make(chan struct{})
	defer close(release)
	r := &Registry{}
	r.Register("test.deaf", func(json.RawMessage) (Check, error) {
		return &blocking{release: release, running: &running, peak: &peak, limit: time.Millisecond, ignoreCtx: true}, nil
	})
	out := Run(context.Background(), &Input{}, compile(t, r, Definition{ID: "g", Checks: checks("test.deaf")}))
	if c := out.Results[0].Checks[0]; c.Verdict || c.Error != "timed out" {
		t.Errorf("%+v", c)
	}
}

func TestRunRewritesInOrder(t *testing.T) {
	r := testRegistry(t)
	r.Register("test.upper", func(json.RawMessage) (Check, error) { return upperRewriter{}, nil })
	g1 := compile(t, r, Definition{ID: "pii", Checks: checks(`default.pii {"categories":["EMAIL_ADDRESS"],"redact":true}`,
		`default.regexMatch {"rule":"@","not":true}`)})
	g2 := compile(t, r, Definition{ID: "up", Checks: checks("test.upper")})
	in := &Input{Parts: []string{"mail x@y.example", "fine"}}
	out := Run(context.Background(), in, g1, g2)
	want := []string{"MAIL [EMAIL_ADDRESS]", "FINE"}
	if !out.Transformed || strings.Join(out.Parts, "|") != strings.Join(want, "|") {
		t.Fatalf("parts %q transformed %v", out.Parts, out.Transformed)
	}
	// The regex check saw the original text, the email in it.
	if out.Results[0].Checks[1].Verdict || !out.Results[0].Checks[0].Transformed || !out.Results[1].Checks[0].Transformed {
		t.Errorf("results %+v", out.Results)
	}
	if in.Parts[0] != "mail x@y.example" {
		t.Error("the input was modified")
	}
	b, err := json.Marshal(out.Results[0])
	if err != nil || !strings.Contains(string(b), `"id":"pii"`) || !strings.Contains(string(b), `"transformed":true`) || !strings.Contains(string(b), `"execution_time":`) {
		t.Errorf("JSON %s, %v", b, err)
	}
}

type upperRewriter struct{}

func (upperRewriter) Rewrites() bool { return true }

func (upperRewriter) Check(_ context.Context, in *Input) (Verdict, error) {
	parts := make([]string, len(in.Parts))
	for i, p := range in.Parts {
		parts[i] = strings.ToUpper(p)
	}
	return Verdict{Pass: true, Explanation: "upper", Parts: parts}, nil
}

func TestRegistryConcurrentUse(t *testing.T) {
	r := NewRegistry(Env{})
	done := make(chan struct{})
	for i := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			id := "host.check" + string(rune('a'+i))
			r.Register(id, func(json.RawMessage) (Check, error) {
				return CheckFunc(func(context.Context, *Input) (Verdict, error) { return Verdict{Pass: true}, nil }), nil
			})
			if _, err := r.New(id, nil); err != nil {
				t.Error(err)
			}
			_ = r.IDs()
		}()
	}
	for range 4 {
		<-done
	}
	if n := len(r.IDs()); n != 25 {
		t.Errorf("%d ids", n)
	}
}
