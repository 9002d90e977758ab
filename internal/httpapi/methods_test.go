package httpapi

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestMethodsServe(t *testing.T) {
	var got string
	h := func(name string) Handler {
		return func(w http.ResponseWriter, r *http.Request) error { got = name; return nil }
	}
	m := Methods{http.MethodDelete: h("delete"), http.MethodGet: h("get"), http.MethodPut: h("put")}
	if err := m.Serve(httptest.NewRecorder(), httptest.NewRequest(http.MethodPut, "/x", nil)); err != nil || got != "put" {
		t.Fatalf("PUT: err %v, served %q", err, got)
	}
	got = ""
	err := m.Serve(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/x/y", nil))
	var me *MethodError
	if !errors.As(err, &me) || got != "" {
		t.Fatalf("POST: err %v, served %q; want a *MethodError and nothing served", err, got)
	}
	if me.Allow != "GET, PUT, DELETE" || me.Method != "POST" || me.Path != "/x/y" {
		t.Fatalf("MethodError %+v", me)
	}
	if me.Error() != "POST is not allowed on /x/y; allowed: GET, PUT, DELETE" {
		t.Fatalf("message %q", me.Error())
	}
	if err := m.Check(httptest.NewRequest(http.MethodGet, "/x", nil)); err != nil {
		t.Fatalf("Check GET: %v", err)
	}
	if err := m.Check(httptest.NewRequest(http.MethodPatch, "/x", nil)); !errors.As(err, &me) {
		t.Fatalf("Check PATCH: %v", err)
	}
}

func TestMethodsAllowOrder(t *testing.T) {
	for _, c := range []struct {
		m    Methods
		want string
	}{
		{Methods{"POST": nil, "GET": nil}, "GET, POST"},
		{Methods{"PUT": nil}, "PUT"},
		{Methods{"PURGE": nil, "DELETE": nil, "BREW": nil, "HEAD": nil}, "HEAD, DELETE, BREW, PURGE"},
		{Methods{}, ""},
	} {
		if got := c.m.Allow(); got != c.want {
			t.Errorf("Allow() = %q, want %q", got, c.want)
		}
	}
}

func TestOnly(t *testing.T) {
	if err := Only(httptest.NewRequest(http.MethodPut, "/x", nil), "PUT", "GET"); err != nil {
		t.Fatalf("PUT: %v", err)
	}
	var me *MethodError
	if err := Only(httptest.NewRequest(http.MethodDelete, "/x", nil), "POST", "GET"); !errors.As(err, &me) || me.Allow != "GET, POST" {
		t.Fatalf("DELETE: %v", err)
	}
}
