package sqlstore

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/modelgateway/gateway/observe"
)

// TestLatencyDigestRoundTrip: a digest gives back the values it was made
// of, negative, zero, repeated and huge ones included.
func TestLatencyDigestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, vals := range [][]int64{
		nil,
		{0},
		{-5, -5, 0, 7, 7, 7, 1 << 40},
		{-1 << 63, 0, 1<<63 - 1},
	} {
		got, err := decodeLatencies(nil, encodeLatencies(vals))
		if err != nil || !slices.Equal(got, vals) && len(vals) > 0 {
			t.Errorf("round trip of %v = %v, %v", vals, got, err)
		}
	}
	vals := make([]int64, 10000)
	for i := range vals {
		vals[i] = rng.Int64N(5_000_000)
	}
	slices.Sort(vals)
	b := encodeLatencies(vals)
	got, err := decodeLatencies([]int64{42}, b)
	if err != nil || got[0] != 42 || !slices.Equal(got[1:], vals) {
		t.Fatalf("round trip of 10,000 latencies: %v", err)
	}
	if perValue := float64(len(b)) / float64(len(vals)); perValue > 2.1 {
		t.Errorf("%.2f bytes a latency, want about 2", perValue)
	}
}

// FuzzDecodeLatencies: any bytes decode to an error or to ascending
// values that encode back to the same bytes; none panics or allocates
// beyond its length.
func FuzzDecodeLatencies(f *testing.F) {
	f.Add(encodeLatencies([]int64{1, 2, 3}))
	f.Add(encodeLatencies([]int64{-1 << 63, 1<<63 - 1}))
	f.Add([]byte{digestVersion, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		vals, err := decodeLatencies(nil, b)
		if err != nil {
			return
		}
		if !slices.IsSorted(vals) {
			t.Fatalf("%x decodes to unsorted %v", b, vals)
		}
		if again := encodeLatencies(vals); string(again) != string(b) {
			// Varints have one shortest form; a longer one may decode.
			if v2, err := decodeLatencies(nil, again); err != nil || !slices.Equal(v2, vals) {
				t.Fatalf("%x: %v encodes to %x, which decodes to %v, %v", b, vals, again, v2, err)
			}
		}
	})
}

// TestLatencyPercentiles holds the selection to observe.Percentile over
// the sorted values, on sizes 1 to 300 and larger inputs made of sorted
// runs, equal values and random ones.
func TestLatencyPercentiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	check := func(vals []int64) {
		t.Helper()
		sorted := slices.Sorted(slices.Values(vals))
		w50, w90, w99 := observe.Percentile(sorted, 0.5), observe.Percentile(sorted, 0.9), observe.Percentile(sorted, 0.99)
		p50, p90, p99 := latencyPercentiles(slices.Clone(vals))
		if p50 != w50 || p90 != w90 || p99 != w99 {
			t.Fatalf("%d values: %d %d %d, want %d %d %d", len(vals), p50, p90, p99, w50, w90, w99)
		}
	}
	for n := 1; n <= 300; n++ {
		vals := make([]int64, n)
		for i := range vals {
			vals[i] = rng.Int64N(int64(n/3 + 1))
		}
		check(vals)
	}
	big := make([]int64, 0, 200_000)
	for range 100 { // sorted runs, as digests give them
		run := make([]int64, 2000)
		for i := range run {
			run[i] = rng.Int64N(5_000_000)
		}
		slices.Sort(run)
		big = append(big, run...)
	}
	check(big)
	check(make([]int64, 100_000)) // all equal
	slices.Sort(big)
	check(big)
	slices.Reverse(big)
	check(big)
	if p50, _, _ := latencyPercentiles(nil); p50 != 0 {
		t.Errorf("no value: p50 %d", p50)
	}
}

// BenchmarkLatencyPercentiles: the three percentiles of a million
// latencies in sorted runs (what a month of digests gives), by selection
// and, for comparison, by sorting.
func BenchmarkLatencyPercentiles(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	vals := make([]int64, 0, 1_000_000)
	for range 720 {
		run := make([]int64, 1_000_000/720)
		for i := range run {
			run[i] = rng.Int64N(5_000_000)
		}
		slices.Sort(run)
		vals = append(vals, run...)
	}
	work := make([]int64, len(vals))
	b.Run("select", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			copy(work, vals)
			latencyPercentiles(work)
		}
	})
	b.Run("sort", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			copy(work, vals)
			slices.Sort(work)
			_ = observe.Percentile(work, 0.99)
		}
	})
	b.Run("decode", func(b *testing.B) {
		digests := make([][]byte, 0, 720)
		for i := 0; i < len(vals); i += 1_000_000 / 720 {
			digests = append(digests, encodeLatencies(vals[i:min(i+1_000_000/720, len(vals))]))
		}
		b.ReportAllocs()
		for b.Loop() {
			work = work[:0]
			for _, d := range digests {
				work, _ = decodeLatencies(work, d)
			}
		}
	})
}
