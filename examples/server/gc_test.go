package main

import (
	"runtime/debug"
	"testing"
)

// TestSetGCPercent: the server collects at gcPercent unless GOGC is set,
// and then leaves the runtime's target (read from GOGC) alone.
func TestSetGCPercent(t *testing.T) {
	prev := debug.SetGCPercent(73)
	defer debug.SetGCPercent(prev)
	for _, env := range []string{"150", "off", "100"} {
		setGCPercent(env)
		if now := debug.SetGCPercent(73); now != 73 {
			t.Errorf("GOGC=%s: the target changed to %d", env, now)
		}
	}
	setGCPercent("")
	if now := debug.SetGCPercent(73); now != gcPercent {
		t.Errorf("no GOGC: the target is %d, want %d", now, gcPercent)
	}
}
