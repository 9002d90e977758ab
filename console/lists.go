package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/modelgateway/gateway"
)

// listPage is the data of a paged control-plane list.
type listPage[T any] struct {
	Items     []T
	Total     int
	Page      int
	Prev      string
	Next      string
	Workspace string
	Scopes    []gateway.Scope
}

// pageNumber reads page of the console's query (from 0).
func pageNumber(q url.Values) int {
	n, err := strconv.Atoi(q.Get("page"))
	if err != nil || n < 0 || n > 1<<20 {
		return 0
	}
	return n
}

// pager fills a list's links to the pages around page, of pageSize, for
// path with the query pairs.
func pager[T any](p *listPage[T], path string, pageSize int, pairs ...string) {
	if p.Page > 0 {
		p.Prev = link(path, append(pairs, "page", strconv.Itoa(p.Page-1))...)
	}
	if (p.Page+1)*pageSize < p.Total {
		p.Next = link(path, append(pairs, "page", strconv.Itoa(p.Page+1))...)
	}
}

// flashes are the success messages a redirect may name in done=.
var flashes = map[string]string{
	"revoked": "The key was revoked: it no longer works.",
	"deleted": "Deleted.",
	"rotated": "The provider key was replaced.",
	"updated": "Saved as a new version.",
	"created": "Created.",
	"saved":   "Saved.",
}

// listQuery is the API query of page n of pageSize, for workspace ws
// ("" for none).
func listQuery(n, pageSize int, ws string) url.Values {
	q := url.Values{"page_size": {strconv.Itoa(pageSize)}, "current_page": {strconv.Itoa(n)}}
	if ws != "" {
		q.Set("workspace_id", ws)
	}
	return q
}

// listSource is where a read-only list page reads its items: the API's
// list at path, with the query of page n (from 0) of 50 items for
// workspace ws ("" for none).
type listSource struct {
	path  string
	query func(n int, ws string) url.Values
}

// paged is the query of the lists paged by current_page and page_size.
func paged(n int, ws string) url.Values { return listQuery(n, 50, ws) }

// showList serves a read-only list page: page n (of 50) of the API's
// list src, for the workspace the query names, rendered with the
// template name, which is also the page's path below the console;
// nav is its navigation entry.
func showList[T any](c *console, w http.ResponseWriter, r *http.Request, s *session, src listSource, name, nav, title string) {
	q := r.URL.Query()
	p := &listPage[T]{Page: pageNumber(q), Workspace: strings.TrimSpace(q.Get("workspace_id"))}
	d := &pageData{Title: title, Nav: nav, Data: p}
	status := http.StatusOK
	var list struct {
		Data  []T `json:"data"`
		Total int `json:"total"`
	}
	if err := c.call(r, s.key, http.MethodGet, src.path, src.query(p.Page, p.Workspace), nil, &list); err != nil {
		if c.apiFailed(w, r, s, err) {
			return
		}
		d.Error, status = err.Error(), statusFor(err)
	}
	p.Items, p.Total = list.Data, list.Total
	pager(p, c.base+"/"+name, 50, "workspace_id", p.Workspace)
	c.render(w, r, status, name, s, d)
}
