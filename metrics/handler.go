package metrics

import (
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// ContentType is the media type of the Prometheus text exposition format
// 0.0.4, which Handler serves.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Handler returns the http.Handler of a /metrics endpoint: it gathers gs
// at each request, with the request's context, and writes their families
// in the Prometheus text exposition format 0.0.4, sorted by name (a
// family without metrics is left out). If a Gatherer fails, the answer is
// a 500 naming its error and no metrics, as client_golang's promhttp
// answers by default. It is safe for concurrent use.
func Handler(gs ...Gatherer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var fams []Family
		for _, g := range gs {
			f, err := g.Gather(r.Context())
			if err != nil {
				http.Error(w, "metrics: gathering failed: "+err.Error(), http.StatusInternalServerError)
				return
			}
			fams = append(fams, f...)
		}
		slices.SortStableFunc(fams, func(a, b Family) int { return strings.Compare(a.Name, b.Name) })
		w.Header().Set("Content-Type", ContentType)
		w.Write(appendText(nil, fams))
	})
}

// appendText appends fams to b in the text exposition format, in their
// order.
func appendText(b []byte, fams []Family) []byte {
	for i := range fams {
		f := &fams[i]
		if len(f.Metrics) == 0 {
			continue
		}
		b = append(b, "# HELP "...)
		b = append(b, f.Name...)
		b = append(b, ' ')
		b = appendEscaped(b, f.Help, false)
		b = append(b, "\n# TYPE "...)
		b = append(b, f.Name...)
		b = append(b, ' ')
		b = append(b, f.Type.String()...)
		b = append(b, '\n')
		for j := range f.Metrics {
			b = appendMetric(b, f, &f.Metrics[j])
		}
	}
	return b
}

// appendMetric appends the lines of m, of family f.
func appendMetric(b []byte, f *Family, m *Metric) []byte {
	switch f.Type {
	case Histogram:
		for _, bk := range m.Buckets {
			b = appendSample(b, f.Name, "_bucket", f.LabelNames, m.LabelValues, "le", bk.UpperBound)
			b = strconv.AppendUint(b, bk.Count, 10)
			b = append(b, '\n')
		}
		b = appendSample(b, f.Name, "_bucket", f.LabelNames, m.LabelValues, "le", math.Inf(1))
		b = strconv.AppendUint(b, m.Count, 10)
		b = append(b, '\n')
	case Summary:
		for _, q := range m.Quantiles {
			b = appendSample(b, f.Name, "", f.LabelNames, m.LabelValues, "quantile", q.Quantile)
			b = appendFloat(b, q.Value)
			b = append(b, '\n')
		}
	default:
		b = appendSample(b, f.Name, "", f.LabelNames, m.LabelValues, "", 0)
		b = appendFloat(b, m.Value)
		return append(b, '\n')
	}
	b = appendSample(b, f.Name, "_sum", f.LabelNames, m.LabelValues, "", 0)
	b = appendFloat(b, m.Sum)
	b = append(b, '\n')
	b = appendSample(b, f.Name, "_count", f.LabelNames, m.LabelValues, "", 0)
	b = strconv.AppendUint(b, m.Count, 10)
	return append(b, '\n')
}

// appendSample appends the start of a sample line up to its value:
// name+suffix, the labels names=values and, if extra is not empty, the
// label extra=v last, then a space.
func appendSample(b []byte, name, suffix string, names, values []string, extra string, v float64) []byte {
	b = append(b, name...)
	b = append(b, suffix...)
	if len(names) > 0 || extra != "" {
		b = append(b, '{')
		for i, n := range names {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendLabel(b, n, values[i])
		}
		if extra != "" {
			if len(names) > 0 {
				b = append(b, ',')
			}
			b = append(b, extra...)
			b = append(b, '=', '"')
			b = appendFloat(b, v) // no character of a number needs escaping
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	return append(b, ' ')
}

// appendLabel appends name="value", value escaped.
func appendLabel(b []byte, name, value string) []byte {
	b = append(b, name...)
	b = append(b, '=', '"')
	b = appendEscaped(b, value, true)
	return append(b, '"')
}

// appendEscaped appends s with its backslashes and line feeds escaped,
// and its double quotes too if quote is set: the escaping of label
// values (quote) and of HELP text.
func appendEscaped(b []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendFloat appends f as Prometheus writes sample values: the shortest
// decimal or exponent form that reads back as f, and +Inf, -Inf and NaN.
func appendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}
