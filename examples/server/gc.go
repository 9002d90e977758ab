package main

import "runtime/debug"

// gcPercent is the server's garbage collection target (GOGC) unless the
// environment sets one: the heap may grow by twice what stayed live
// since the last collection, rather than Go's once.
//
// A gateway keeps little live (about 3 MB at saturation, request logs
// included, SQLite's pages aside) and makes about 10 KB of garbage a
// request, most of it net/http's. At the default of 100 it collects
// some fifty times a second at 12,000 requests a second, and the
// collections are a tenth of its CPU. At 200 the server takes about 10%
// less CPU a request, for about 5 MB more peak memory (both measured in
// the README's benchmark). Operators who would rather have the memory
// set GOGC=100, and those with memory to spare a higher value; GOMEMLIMIT
// caps the heap either way.
const gcPercent = 200

// setGCPercent sets the collector's target to gcPercent unless goGC, the
// environment's GOGC, names one: the runtime read that at start.
func setGCPercent(goGC string) {
	if goGC == "" {
		debug.SetGCPercent(gcPercent)
	}
}
