package httpapi

import (
	"errors"
	"net/url"
	"slices"
	"strconv"
	"testing"
)

func TestParsePage(t *testing.T) {
	for _, c := range []struct {
		query string
		want  Page
		param string // of the error; "" for none
	}{
		{"", Page{20, 0}, ""},
		{"page_size=100&current_page=3", Page{100, 3}, ""},
		{"page_size=1", Page{1, 0}, ""},
		{"page_size=0", Page{}, "page_size"},
		{"page_size=101", Page{}, "page_size"},
		{"page_size=x", Page{}, "page_size"},
		{"page_size=2&page_size=2", Page{}, "page_size"},
		{"current_page=-1", Page{}, "current_page"},
		{"current_page=2147483648", Page{}, "current_page"},
	} {
		q, _ := url.ParseQuery(c.query)
		p, err := ParsePage(q)
		var fe *FieldError
		switch {
		case c.param == "" && (err != nil || p != c.want):
			t.Errorf("%q: %+v, %v; want %+v", c.query, p, err, c.want)
		case c.param != "" && (!errors.As(err, &fe) || fe.Param != c.param):
			t.Errorf("%q: err %v; want a FieldError naming %s", c.query, err, c.param)
		}
	}
	_, err := ParsePage(url.Values{"page_size": {"0"}})
	if err.(*FieldError).Message != "page_size must be an integer from 1 to 100" {
		t.Errorf("message %q", err.(*FieldError).Message)
	}
	// A crafted url.Values with no value is refused, not a panic.
	if _, err := ParsePage(url.Values{"page_size": {}}); err == nil {
		t.Error("page_size with no value accepted")
	}
}

func TestPagingBounds(t *testing.T) {
	pg := Paging{Default: 100, Min: 0, Max: 1000}
	p, err := pg.Parse(url.Values{})
	if err != nil || p.Size != 100 {
		t.Fatalf("%+v %v", p, err)
	}
	if _, err := pg.Parse(url.Values{"page_size": {"1001"}}); err == nil || err.(*FieldError).Message != "page_size must be an integer from 0 to 1000" {
		t.Fatalf("%v", err)
	}
}

func TestOfAndFilter(t *testing.T) {
	all := []int{0, 1, 2, 3, 4, 5, 6}
	if got := Of(all, Page{3, 2}); !slices.Equal(got, []int{6}) {
		t.Errorf("Of page 2: %v", got)
	}
	if got := Of(all, Page{3, 9}); len(got) != 0 {
		t.Errorf("Of past the end: %v", got)
	}
	even := func(n *int) bool { return *n%2 == 0 }
	data, total := Filter(all, even, func(n *int) string { return strconv.Itoa(*n) }, Page{2, 1})
	if total != 4 || !slices.Equal(data, []string{"4", "6"}) {
		t.Errorf("Filter: %v of %d", data, total)
	}
	ints, total := Filter(all, nil, func(n *int) int { return *n }, Page{0, 0})
	if total != 7 || len(ints) != 0 {
		t.Errorf("Filter size 0: %v of %d", ints, total)
	}
}

func TestEnumAndWorkspace(t *testing.T) {
	q, _ := url.ParseQuery("status=archived&type=x&workspace_id=&unit=a&unit=b")
	if v, err := Enum(q, "status", "active", "active", "archived"); v != "archived" || err != nil {
		t.Errorf("status: %q %v", v, err)
	}
	if v, err := Enum(q, "missing", "dflt", "a"); v != "dflt" || err != nil {
		t.Errorf("missing: %q %v", v, err)
	}
	if _, err := Enum(q, "type", "", "cost", "tokens"); err == nil || err.Error() != "httpapi: type: type must be one of cost, tokens" {
		t.Errorf("type: %v", err)
	}
	if _, err := Enum(q, "unit", "", "a", "b"); err == nil {
		t.Error("unit given twice accepted")
	}
	if _, err := WorkspaceParam(q); err == nil || err.(*FieldError).Param != "workspace_id" {
		t.Errorf("empty workspace_id: %v", err)
	}
	if ws, err := WorkspaceParam(url.Values{"workspace_id": {"w1"}}); ws != "w1" || err != nil {
		t.Errorf("workspace_id: %q %v", ws, err)
	}
	if ws, err := WorkspaceParam(url.Values{}); ws != "" || err != nil {
		t.Errorf("no workspace_id: %q %v", ws, err)
	}
}

func FuzzParsePage(f *testing.F) {
	for _, s := range []string{"", "page_size=5&current_page=2", "page_size=0", "current_page=-3", "page_size=%zz", "page_size=1&page_size=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		p, err := ParsePage(q)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Param != "page_size" && fe.Param != "current_page" {
				t.Fatalf("%q: error %v names no paging parameter", raw, err)
			}
			return
		}
		if p.Size < 1 || p.Size > 100 || p.Number < 0 {
			t.Fatalf("%q: page %+v out of bounds", raw, p)
		}
		all := make([]int, 250)
		if got := Of(all, p); len(got) > p.Size {
			t.Fatalf("%q: page of %d records for size %d", raw, len(got), p.Size)
		}
	})
}
