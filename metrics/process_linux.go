package metrics

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// userHZ is the unit of the times of /proc/self/stat: clock ticks, which
// Linux reports to user space at 100 a second on every architecture Go
// runs on.
const userHZ = 100

// processFamilies returns the process_ series, read from /proc/self; a
// value whose file cannot be read is left out.
func processFamilies() []Family {
	var fams []Family
	if stat, err := os.ReadFile("/proc/self/stat"); err == nil {
		fams = append(fams, statFamilies(stat, bootTime())...)
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		fams = append(fams, gauge("process_open_fds", "Number of open file descriptors.", float64(len(fds))))
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		fams = append(fams, gauge("process_max_fds", "Maximum number of open file descriptors.", float64(lim.Cur)))
	}
	return fams
}

// statFamilies returns the series read from stat, the content of
// /proc/self/stat, and boot, the system's boot time in seconds since the
// epoch (negative: unknown, and no start time).
func statFamilies(stat []byte, boot float64) []Family {
	// The command name, in parentheses, may hold spaces and parentheses:
	// the fields after it start after the last ')'; the first is field 3.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil
	}
	f := strings.Fields(string(stat[i+1:]))
	field := func(n int) (float64, bool) {
		if n-3 >= len(f) {
			return 0, false
		}
		v, err := strconv.ParseUint(f[n-3], 10, 64)
		return float64(v), err == nil
	}
	var fams []Family
	utime, ok1 := field(14)
	stime, ok2 := field(15)
	if ok1 && ok2 {
		fams = append(fams, Family{Name: "process_cpu_seconds_total", Help: "Total user and system CPU time spent in seconds.",
			Type: Counter, Metrics: []Metric{{Value: (utime + stime) / userHZ}}})
	}
	if v, ok := field(23); ok {
		fams = append(fams, gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", v))
	}
	if v, ok := field(24); ok {
		fams = append(fams, gauge("process_resident_memory_bytes", "Resident memory size in bytes.", v*float64(os.Getpagesize())))
	}
	if v, ok := field(22); ok && boot >= 0 {
		fams = append(fams, gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", boot+v/userHZ))
	}
	return fams
}

// bootTime returns the btime line of /proc/stat: when the system booted,
// in seconds since the epoch; -1 if it cannot be read.
func bootTime() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return -1
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
				return float64(n)
			}
		}
	}
	return -1
}
