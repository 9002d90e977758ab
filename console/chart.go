package console

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// chart is a line chart drawn server-side as SVG: every coordinate is
// computed here, so that the page needs no script.
type chart struct {
	ID, Title, Unit, Desc string
	Total                 string // the API's summary figure, formatted
	TotalRaw              string // the same, as the API gave it
	W, H                  int
	Left, Right           int
	Top, Bottom           int
	YTicks, XTicks        []tick
	Series                []series
}

// tick is an axis label at a coordinate.
type tick struct {
	X, Y  int
	Label string
}

// series is one line of a chart: the API's values, one per bucket.
type series struct {
	Name   string
	Values []float64
	Points string // the polyline's "x,y x,y …"
}

// Chart geometry, in SVG user units.
const (
	chartW      = 560
	chartH      = 220
	chartLeft   = 64
	chartRight  = chartW - 16
	chartTop    = 22
	chartBottom = chartH - 28
)

// newChart lays out series over the buckets starting at times; format
// writes the y axis labels (in unit).
func newChart(id, title, unit string, times []time.Time, ss []series, format func(float64) string) *chart {
	c := &chart{ID: id, Title: title, Unit: unit, W: chartW, H: chartH, Left: chartLeft, Right: chartRight,
		Top: chartTop, Bottom: chartBottom, Series: ss}
	top := 0.0
	for _, s := range ss {
		for i, v := range s.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				s.Values[i], v = 0, 0 // never drawn off the chart
			}
			top = math.Max(top, v)
		}
	}
	top = niceCeil(top)
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		c.YTicks = append(c.YTicks, tick{Y: c.y(v, top), Label: format(v)})
	}
	n := len(times)
	for _, i := range []int{0, n / 2, n - 1} {
		if i < 0 || i >= n || (len(c.XTicks) > 0 && c.XTicks[len(c.XTicks)-1].X == c.x(i, n)) {
			continue
		}
		c.XTicks = append(c.XTicks, tick{X: c.x(i, n), Label: bucketLabel(times[i], times)})
	}
	for k := range c.Series {
		var b strings.Builder
		for i, v := range c.Series[k].Values {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strconv.Itoa(c.x(i, n)))
			b.WriteByte(',')
			b.WriteString(strconv.Itoa(c.y(v, top)))
		}
		c.Series[k].Points = b.String()
	}
	c.Desc = describe(title, unit, times, ss, format)
	return c
}

func (c *chart) x(i, n int) int {
	if n <= 1 {
		return (c.Left + c.Right) / 2
	}
	return c.Left + i*(c.Right-c.Left)/(n-1)
}

func (c *chart) y(v, top float64) int {
	if top <= 0 {
		return c.Bottom
	}
	return c.Bottom - int(math.Round(v/top*float64(c.Bottom-c.Top)))
}

// niceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten (1 for 0),
// so that the four grid steps fall on round numbers.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// bucketLabel labels a bucket's start: the time of day within two days,
// the date beyond.
func bucketLabel(t time.Time, all []time.Time) string {
	if len(all) > 1 && all[len(all)-1].Sub(all[0]) > 48*time.Hour {
		return t.UTC().Format("Jan 2")
	}
	return t.UTC().Format("15:04")
}

// describe says what a chart shows, for screen readers.
func describe(title, unit string, times []time.Time, ss []series, format func(float64) string) string {
	if len(times) == 0 {
		return title + ": no data points."
	}
	var b strings.Builder
	b.WriteString(title + " (" + unit + "), " + strconv.Itoa(len(times)) + " buckets from " +
		times[0].UTC().Format("2006-01-02 15:04") + " to " + times[len(times)-1].UTC().Format("2006-01-02 15:04") + " UTC.")
	for _, s := range ss {
		hi, at := 0.0, 0
		for i, v := range s.Values {
			if v > hi {
				hi, at = v, i
			}
		}
		if at < len(times) {
			b.WriteString(" " + s.Name + ": highest " + format(hi) + " at " + times[at].UTC().Format("2006-01-02 15:04") + ".")
		}
	}
	return b.String()
}
