package metrics

import (
	"math"
	"os"
	"strings"
	"testing"
)

// statSample is a /proc/self/stat line whose command name holds a space
// and a parenthesis, as a process may name itself.
const statSample = `4242 (gw (1) x) S 1 4242 4242 0 -1 4194560 3521 0 0 0 250 75 0 0 20 0 9 0 123456 1234567168 4567 18446744073709551615 1 1 0 0 0 0 0 0 2143420159 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0`

// TestStatFamilies: the fields after the command name, however it is
// spelled, give the CPU time, memory and start time.
func TestStatFamilies(t *testing.T) {
	got := map[string]float64{}
	for _, f := range statFamilies([]byte(statSample), 1_700_000_000) {
		got[f.Name] = f.Metrics[0].Value
	}
	want := map[string]float64{
		"process_cpu_seconds_total":     (250 + 75) / 100.0,
		"process_virtual_memory_bytes":  1234567168,
		"process_resident_memory_bytes": 4567 * float64(os.Getpagesize()),
		"process_start_time_seconds":    1_700_000_000 + 123456/100.0,
	}
	for name, w := range want {
		if g, ok := got[name]; !ok || math.Abs(g-w) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v", name, g, ok, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("families = %v, want exactly %v", got, want)
	}
	if fams := statFamilies([]byte(statSample), -1); len(fams) != 3 {
		t.Errorf("with no boot time: %d families, want 3 (no start time)", len(fams))
	}
	for _, bad := range []string{"", "4242 (gw", "4242 (gw) S 1 2", "4242 (gw) " + strings.Repeat("x ", 30)} {
		for _, f := range statFamilies([]byte(bad), 0) {
			t.Errorf("statFamilies(%q) gave %s", bad, f.Name)
		}
	}
}

// FuzzStatFamilies: any content of /proc/self/stat gives families of one
// metric each, or none, and never a panic.
func FuzzStatFamilies(f *testing.F) {
	f.Add([]byte(statSample))
	f.Add([]byte("1 (a) R"))
	f.Add([]byte(")))"))
	f.Fuzz(func(t *testing.T, stat []byte) {
		for _, fam := range statFamilies(stat, 0) {
			if len(fam.Metrics) != 1 || math.IsNaN(fam.Metrics[0].Value) || fam.Metrics[0].Value < 0 {
				t.Fatalf("family %s: %+v", fam.Name, fam.Metrics)
			}
		}
	})
}
