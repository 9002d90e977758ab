package httpapi

import (
	"math"
	"net/url"
	"strconv"
	"strings"
)

// Int reads query parameter name, an integer from lo to hi given once;
// def when absent.
func Int(q url.Values, name string, def, lo, hi int) (int, error) {
	vs, ok := q[name]
	if !ok {
		return def, nil
	}
	if len(vs) == 1 {
		if n, err := strconv.Atoi(vs[0]); err == nil && n >= lo && n <= hi {
			return n, nil
		}
	}
	return 0, Invalid(name, name+" must be an integer from "+strconv.Itoa(lo)+" to "+strconv.Itoa(hi))
}

// Enum reads query parameter name, which must be one of values given
// once; def when absent.
func Enum(q url.Values, name, def string, values ...string) (string, error) {
	vs, ok := q[name]
	if !ok {
		return def, nil
	}
	for _, v := range values {
		if len(vs) == 1 && vs[0] == v {
			return v, nil
		}
	}
	return "", Invalid(name, name+" must be one of "+strings.Join(values, ", "))
}

// WorkspaceParam returns the workspace_id of the query: "" when absent,
// an error when given more than once or empty.
func WorkspaceParam(q url.Values) (string, error) {
	vs, ok := q["workspace_id"]
	if !ok {
		return "", nil
	}
	if len(vs) != 1 || vs[0] == "" {
		return "", Invalid("workspace_id", "workspace_id must be given once, not empty")
	}
	return vs[0], nil
}

// Paging is the page_size bounds of a list.
type Paging struct {
	Default, Min, Max int
}

// DefaultPaging is the paging of most control-plane lists: page_size from
// 1 to 100, 20 when absent.
var DefaultPaging = Paging{Default: 20, Min: 1, Max: 100}

// Page is the page of a list a request asks for: Size records from the
// Number-th page on, counted from 0.
type Page struct {
	Size, Number int
}

// Parse reads page_size (within pg) and current_page (from 0) of q.
func (pg Paging) Parse(q url.Values) (Page, error) {
	size, err := Int(q, "page_size", pg.Default, pg.Min, pg.Max)
	if err != nil {
		return Page{}, err
	}
	n, err := Int(q, "current_page", 0, 0, math.MaxInt32)
	if err != nil {
		return Page{}, err
	}
	return Page{Size: size, Number: n}, nil
}

// ParsePage is DefaultPaging.Parse.
func ParsePage(q url.Values) (Page, error) { return DefaultPaging.Parse(q) }

// Of returns the part of all that p selects.
func Of[T any](all []T, p Page) []T {
	start := min(len(all), p.Number*p.Size)
	return all[start:min(len(all), start+p.Size)]
}

// Filter is one page of a list: of the records of all that keep accepts
// (nil: every one), those p selects turned into their wire form, and how
// many keep accepts in all. all is left as it is: a store may share it.
func Filter[T, W any](all []T, keep func(*T) bool, wire func(*T) W, p Page) (data []W, total int) {
	data = make([]W, 0, min(len(all), p.Size))
	for i := range all {
		if keep != nil && !keep(&all[i]) {
			continue
		}
		if total >= p.Number*p.Size && len(data) < p.Size {
			data = append(data, wire(&all[i]))
		}
		total++
	}
	return data, total
}
