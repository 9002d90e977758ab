package sqlstore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	gateway "github.com/modelgateway/gateway"
)

// TestInKeyOrder: a batch in the order its requests ended comes back in
// request_logs' key order (time to the microsecond, then id) as a copy,
// the caller's slice untouched; a batch in order comes back as it is.
func TestInKeyOrder(t *testing.T) {
	start := time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(3, 4))
	var want []*gateway.RequestLog
	for i := range 500 {
		// Two records a microsecond, some 300 ns apart: the nanoseconds
		// do not order them, the id does.
		t := start.Add(time.Duration(i/2)*time.Microsecond + time.Duration(300*(1-i%2)))
		want = append(want, &gateway.RequestLog{ID: fmt.Sprintf("%08d", i), Time: t})
	}
	ended := slices.Clone(want)
	end := map[*gateway.RequestLog]int{}
	for i, r := range ended {
		end[r] = i + rng.IntN(30)
	}
	slices.SortStableFunc(ended, func(x, y *gateway.RequestLog) int { return end[x] - end[y] })
	given := slices.Clone(ended)

	got := inKeyOrder(ended)
	if !slices.Equal(got, want) {
		t.Errorf("not in key order")
	}
	if !slices.Equal(ended, given) {
		t.Errorf("the caller's slice was reordered")
	}
	if again := inKeyOrder(got); &again[0] != &got[0] {
		t.Errorf("a batch in order was copied")
	}
}
