package gateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// silentAfter is a fake provider that streams n SSE events, then goes
// silent until its request is cancelled, which it reports on gone.
func silentAfter(n int, gone chan<- struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range n {
			io.WriteString(w, "data: {\"i\":"+string(rune('0'+i))+"}\n\n")
			http.NewResponseController(w).Flush()
		}
		<-r.Context().Done()
		gone <- struct{}{}
	}
}

// readEvents reads SSE data lines from body until it fails, and returns
// them with the error that ended the read (nil for a clean end).
func readEvents(body io.Reader) ([]string, error) {
	var events []string
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		if l, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, l)
		}
	}
	return events, sc.Err()
}

// TestStreamIdleTimeout: a provider that goes silent in the middle of a
// stream has its call cancelled once the idle limit passes (from Options,
// or from the config, which overrides it); the caller's connection is
// aborted after the events already sent, never ended as if the stream were
// whole; and the request log says why.
func TestStreamIdleTimeout(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opt    time.Duration
		config string
	}{
		{"options", 50 * time.Millisecond, ""},
		{"config", time.Hour, `{"virtual_key":"vk-up","stream_idle_timeout":50}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gone := make(chan struct{}, 1)
			up := newCoreUpstream(t, silentAfter(2, gone))
			e := newCoreEnv(t, up, func(o *Options) { o.StreamIdleTimeout = tc.opt })
			sel := "x-gateway-virtual-key: vk-up"
			if tc.config != "" {
				sel = "x-gateway-config: " + tc.config
			}
			res := e.do("POST", "/v1/chat/completions", strings.NewReader(`{"model":"m","stream":true}`),
				"x-gateway-api-key: "+coreKey, sel, "x-gateway-trace-id: idle-"+tc.name)
			events, err := readEvents(res.Body)
			if len(events) != 2 || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("caller read %d events, then %v; want 2 events, then an aborted connection", len(events), err)
			}
			select {
			case <-gone:
			case <-time.After(10 * time.Second):
				t.Fatal("the provider's call was not cancelled")
			}
			e.srv.Close()
			e.gw.Close()
			recs := e.logs.Query(LogFilter{TraceID: "idle-" + tc.name})
			if len(recs) != 1 || recs[0].ErrorCode != CodeStreamIdleTimeout || !recs[0].Aborted {
				t.Errorf("logs %+v: want one aborted record with error code %s", recs, CodeStreamIdleTimeout)
			}
		})
	}
}

// TestStreamIdleTimeoutOff: a negative Options.StreamIdleTimeout sets no
// limit, and a config's stream_idle_timeout is checked like its other
// durations.
func TestStreamIdleTimeoutOff(t *testing.T) {
	g := New(Options{StreamIdleTimeout: -1})
	defer g.Close()
	if g.streamIdle != 0 {
		t.Errorf("streamIdle = %v, want no limit", g.streamIdle)
	}
	d := New(Options{})
	defer d.Close()
	if d.streamIdle != defaultStreamIdleTimeout {
		t.Errorf("default streamIdle = %v, want %v", d.streamIdle, defaultStreamIdleTimeout)
	}
	_, err := ParseConfig([]byte(`{"provider":"openai","targets":[{"stream_idle_timeout":-5}]}`))
	var ge *Error
	if !errors.As(err, &ge) || !strings.Contains(ge.Message, "targets[0].stream_idle_timeout") {
		t.Errorf("ParseConfig: %v, want an error naming targets[0].stream_idle_timeout", err)
	}
}

// pacedBody is a provider's answer whose i-th read waits waits[i] (or
// until ctx ends) before it returns a byte; past the last it returns EOF.
type pacedBody struct {
	ctx   context.Context
	waits []time.Duration
	i     int
}

func (p *pacedBody) Read(b []byte) (int, error) {
	if p.i == len(p.waits) {
		return 0, io.EOF
	}
	select {
	case <-time.After(p.waits[p.i]):
	case <-p.ctx.Done():
		return 0, context.Cause(p.ctx)
	}
	p.i++
	b[0] = 'x'
	return 1, nil
}

func (p *pacedBody) Close() error { return nil }

// TestIdleBody: only a single wait for the provider longer than the
// limit cuts the answer. Waits each shorter than it do not, however long
// they add up to, nor does a caller that takes longer than it between
// reads; a wait past it cancels the attempt with errStreamIdle, marks the
// request's log, and fails the read under way and the ones after.
func TestIdleBody(t *testing.T) {
	const d = 200 * time.Millisecond // well above a loaded machine's scheduling delays
	for _, tc := range []struct {
		name    string
		waits   []time.Duration
		between time.Duration // the caller's pause after each read
		cut     bool
	}{
		{"short waits adding up past the limit", []time.Duration{d / 4, d / 4, d / 4, d / 4, d / 4, d / 4}, 0, false},
		{"a slow caller", []time.Duration{d / 4, d / 4, d / 4}, 2 * d, false},
		{"a silent provider", []time.Duration{d / 4, d / 4, 50 * d}, 0, true},
		{"silent after a slow caller", []time.Duration{d / 4, 50 * d}, 2 * d, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			st := &requestState{}
			b := newIdleBody(&pacedBody{ctx: ctx, waits: tc.waits}, &attempt{idle: d, cancel: cancel}, st)
			var got []byte
			var err error
			buf := make([]byte, 8)
			for {
				var n int
				n, err = b.Read(buf)
				got = append(got, buf[:n]...)
				if err != nil {
					break
				}
				time.Sleep(tc.between)
			}
			if tc.cut {
				var idle errStreamIdle
				if !errors.As(err, &idle) || !errors.As(context.Cause(ctx), &idle) || !st.idleCut.Load() {
					t.Errorf("read error %v, attempt's cause %v, cut %v: want the answer cut for idling", err, context.Cause(ctx), st.idleCut.Load())
				}
				if _, err := b.Read(buf); !errors.As(err, &idle) {
					t.Errorf("a read after the cut: %v", err)
				}
				if len(got) != len(tc.waits)-1 {
					t.Errorf("read %d bytes before the cut, want %d", len(got), len(tc.waits)-1)
				}
			} else if err != io.EOF || len(got) != len(tc.waits) || ctx.Err() != nil || st.idleCut.Load() {
				t.Errorf("read %d bytes, then %v; attempt's context %v; cut %v: want it all, uncut", len(got), err, ctx.Err(), st.idleCut.Load())
			}
			b.Close()
			if st.firstByte.IsZero() != (len(got) == 0) {
				t.Errorf("first byte noted at %v after %d bytes", st.firstByte, len(got))
			}
		})
	}
}

// chunkedBody returns its chunks one a read, then EOF.
type chunkedBody struct{ chunks [][]byte }

func (c *chunkedBody) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	c.chunks = c.chunks[1:]
	return n, nil
}

func (c *chunkedBody) Close() error { return nil }

// BenchmarkIdleBody reads answers through the stream idle limit: a small
// one in one read and EOF, and a stream of 100 chunks.
func BenchmarkIdleBody(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("reads-%d", n+1), func(b *testing.B) {
			chunk := []byte("data: {}\n\n")
			chunks := make([][]byte, n)
			for i := range chunks {
				chunks[i] = chunk
			}
			a := &attempt{idle: 10 * time.Minute, cancel: func(error) {}}
			buf := make([]byte, 64)
			b.ReportAllocs()
			for b.Loop() {
				body := newIdleBody(&chunkedBody{chunks: chunks}, a, nil)
				for {
					if _, err := body.Read(buf); err != nil {
						break
					}
				}
				body.Close()
			}
		})
	}
}
