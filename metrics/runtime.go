package metrics

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Runtime returns a Gatherer of the Go runtime's and the process's
// series, the ones dashboards read, under the names and with the meaning
// client_golang's Go and process collectors give them:
//
//	go_goroutines, go_threads, go_info{version}         gauges
//	go_gc_duration_seconds                              summary (quantiles 0, 0.25, 0.5, 0.75, 1)
//	go_memstats_alloc_bytes, go_memstats_heap_alloc_bytes,
//	go_memstats_heap_inuse_bytes, go_memstats_sys_bytes,
//	go_memstats_heap_objects, go_memstats_next_gc_bytes gauges
//	process_cpu_seconds_total                           counter
//	process_resident_memory_bytes, process_virtual_memory_bytes,
//	process_open_fds, process_max_fds,
//	process_start_time_seconds                          gauges
//
// The memory series are read from runtime/metrics, which does not stop
// the world as runtime.ReadMemStats does. The process series are read
// from /proc on Linux; on other systems, and for a file /proc does not
// give, they are left out, without an error.
func Runtime() Gatherer {
	return GathererFunc(gatherRuntime)
}

// memSeries are the go_memstats_ gauges: their names, help texts (those
// of client_golang) and the runtime/metrics samples they add up.
var memSeries = [...]struct {
	name, help string
	samples    []string
}{
	{"go_memstats_alloc_bytes", "Number of bytes allocated in heap and currently in use. Equals to /memory/classes/heap/objects:bytes.",
		[]string{"/memory/classes/heap/objects:bytes"}},
	{"go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use, same as go_memstats_alloc_bytes. Equals to /memory/classes/heap/objects:bytes.",
		[]string{"/memory/classes/heap/objects:bytes"}},
	{"go_memstats_heap_inuse_bytes", "Number of heap bytes that are in use. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes",
		[]string{"/memory/classes/heap/objects:bytes", "/memory/classes/heap/unused:bytes"}},
	{"go_memstats_heap_objects", "Number of currently allocated objects. Equals to /gc/heap/objects:objects.",
		[]string{"/gc/heap/objects:objects"}},
	{"go_memstats_next_gc_bytes", "Number of heap bytes when next garbage collection will take place. Equals to /gc/heap/goal:bytes.",
		[]string{"/gc/heap/goal:bytes"}},
	{"go_memstats_sys_bytes", "Number of bytes obtained from system. Equals to /memory/classes/total:byte.",
		[]string{"/memory/classes/total:bytes"}},
}

// gatherRuntime returns the families Runtime exports.
func gatherRuntime(context.Context) ([]Family, error) {
	threads, _ := runtime.ThreadCreateProfile(nil)
	fams := []Family{
		gauge("go_goroutines", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine())),
		gauge("go_threads", "Number of OS threads created.", float64(threads)),
		{Name: "go_info", Help: "Information about the Go environment.", Type: Gauge, LabelNames: []string{"version"},
			Metrics: []Metric{{LabelValues: []string{runtime.Version()}, Value: 1}}},
		gcDurations(),
	}

	var samples []metrics.Sample
	index := make(map[string]int)
	for _, m := range memSeries {
		for _, s := range m.samples {
			if _, ok := index[s]; !ok {
				index[s] = len(samples)
				samples = append(samples, metrics.Sample{Name: s})
			}
		}
	}
	metrics.Read(samples)
	for _, m := range memSeries {
		var v float64
		for _, s := range m.samples {
			if x := samples[index[s]].Value; x.Kind() == metrics.KindUint64 {
				v += float64(x.Uint64())
			}
		}
		fams = append(fams, gauge(m.name, m.help, v))
	}
	return append(fams, processFamilies()...), nil
}

// gcDurations returns go_gc_duration_seconds: the quantiles of the
// garbage collector's recent pauses, their total and number, as
// client_golang reads them.
func gcDurations() Family {
	stats := debug.GCStats{PauseQuantiles: make([]time.Duration, 5)}
	debug.ReadGCStats(&stats)
	m := Metric{Count: uint64(stats.NumGC), Sum: stats.PauseTotal.Seconds()}
	for i, q := range stats.PauseQuantiles {
		m.Quantiles = append(m.Quantiles, Quantile{Quantile: float64(i) / 4, Value: q.Seconds()})
	}
	return Family{Name: "go_gc_duration_seconds", Type: Summary, Metrics: []Metric{m},
		Help: "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles."}
}

// gauge returns the family of the unlabelled gauge name at v.
func gauge(name, help string, v float64) Family {
	return Family{Name: name, Help: help, Type: Gauge, Metrics: []Metric{{Value: v}}}
}
