package main

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/modelgateway/gateway"
)

// targetHealth is one target's entry in /readyz?verbose.
type targetHealth struct {
	Target    string     `json:"target"`
	State     string     `json:"state"` // closed, open, or half_open (a probe may go, or is out)
	Failures  int        `json:"consecutive_failures"`
	OpenUntil *time.Time `json:"open_until,omitempty"`
}

// verboseReadyz is the body of /readyz?verbose.
type verboseReadyz struct {
	Status  string         `json:"status"` // what plain /readyz says: ok, draining or unavailable
	Targets []targetHealth `json:"targets"`
	Error   string         `json:"targets_error,omitempty"`
	// DroppedLogs counts the request logs dropped since the start: the
	// log queue was full, or the store failed to keep a batch
	// (gateway.Gateway.DroppedLogs).
	DroppedLogs int64 `json:"dropped_logs"`
}

// adminReadyz serves /readyz on the admin listener: plain, exactly as on
// the gateway's listener (see health); with ?verbose, the same status and
// the circuit breakers of g's targets and the count of dropped request
// logs as JSON, which the gateway's listener never shows, since they name
// providers and hosts.
func adminReadyz(ready *atomic.Bool, ping func(context.Context) error, g *gateway.Gateway) http.Handler {
	plain := health(ready, ping, http.NotFoundHandler())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !r.URL.Query().Has("verbose") || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
			plain.ServeHTTP(w, r)
			return
		}
		out := verboseReadyz{Status: "ok", Targets: []targetHealth{}, DroppedLogs: g.DroppedLogs()}
		code := http.StatusOK
		switch {
		case !ready.Load():
			out.Status, code = "draining", http.StatusServiceUnavailable
		case !storeAnswers(r.Context(), ping):
			out.Status, code = "unavailable", http.StatusServiceUnavailable
		}
		ctx, cancel := context.WithTimeout(r.Context(), readyPingTimeout)
		defer cancel()
		now := time.Now()
		states, err := g.BreakerStates(ctx)
		if err != nil {
			out.Error = "the circuit breakers could not be read"
		}
		for _, s := range states {
			h := targetHealth{Target: s.Key, State: "closed", Failures: s.Failures}
			if !s.OpenUntil.IsZero() {
				until := s.OpenUntil.UTC()
				h.State, h.OpenUntil = "open", &until
				if !now.Before(s.OpenUntil) {
					h.State = "half_open"
				}
			}
			out.Targets = append(out.Targets, h)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(out)
	})
}
