package console

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestNiceCeil(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{
		{0, 1}, {0.3, 0.5}, {1, 1}, {7, 10}, {12, 20}, {23, 25}, {140, 200}, {4100, 5000},
	} {
		if got := niceCeil(tc.in); got != tc.want {
			t.Errorf("niceCeil(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// FuzzChart lays out charts of arbitrary values: every point stays
// inside the plot, one per bucket, and the axis labels are in order.
func FuzzChart(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 240, 63})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var vs []float64
		for len(data) >= 8 {
			vs = append(vs, math.Float64frombits(binary.LittleEndian.Uint64(data)))
			data = data[8:]
		}
		times := make([]time.Time, len(vs))
		for i := range times {
			times[i] = time.Unix(int64(i)*3600, 0)
		}
		c := newChart("f", "Fuzz", "units", times, []series{{Name: "v", Values: vs}}, func(f float64) string { return num(f) })
		pts := strings.Fields(c.Series[0].Points)
		if len(pts) != len(vs) {
			t.Fatalf("%d points for %d values", len(pts), len(vs))
		}
		for _, p := range pts {
			xs, ys, _ := strings.Cut(p, ",")
			x, _ := strconv.Atoi(xs)
			y, _ := strconv.Atoi(ys)
			if x < c.Left || x > c.Right || y < c.Top || y > c.Bottom {
				t.Fatalf("point %s outside the plot", p)
			}
		}
		for i := 1; i < len(c.YTicks); i++ {
			if c.YTicks[i].Y > c.YTicks[i-1].Y {
				t.Fatalf("y ticks out of order: %+v", c.YTicks)
			}
		}
	})
}
