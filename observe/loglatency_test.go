package observe_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/observe"
)

// TestLogLatencyMicroseconds: a record answers its latency and time to
// first byte in whole milliseconds, as the reference has them, and in
// microseconds, so that an answer faster than a millisecond does not read
// as 0.
func TestLogLatencyMicroseconds(t *testing.T) {
	e := newLogsEnv(t)
	rec := &gateway.RequestLog{ID: "log-fast", Time: time.Now(), TraceID: "fast", WorkspaceID: "ws-1", Method: "POST",
		Path: "/v1/chat/completions", Status: 200, Latency: 1420 * time.Microsecond, TTFB: 380 * time.Microsecond}
	if err := e.store.AddLogs(context.Background(), []*gateway.RequestLog{rec}); err != nil {
		t.Fatal(err)
	}
	var one observe.LogWire
	if st, b := e.getJSON(coreAdminKey, "/v1/logs/log-fast", &one); st != 200 {
		t.Fatalf("GET /logs/{id}: %d %s", st, b)
	}
	if one.ResponseTime != 1 || one.ResponseTimeUS != 1420 || one.TimeToFirstByte != 0 || one.TimeToFirstByteUS != 380 {
		t.Errorf("response_time %d ms (%d µs), time_to_first_byte %d ms (%d µs); want 1 (1420), 0 (380)",
			one.ResponseTime, one.ResponseTimeUS, one.TimeToFirstByte, one.TimeToFirstByteUS)
	}
}
