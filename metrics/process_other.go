//go:build !linux

package metrics

// processFamilies returns no process_ series: outside Linux there is no
// /proc to read them from.
func processFamilies() []Family { return nil }
