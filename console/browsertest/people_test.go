package browsertest

import (
	"net"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/modelgateway/gateway/console/internal/oidctest"
)

// TestPeople drives, in Chromium, a person's way into the console of
// examples/server: the invite link's page, sign-in with the password,
// and sign-in through an OpenID Connect provider (a throwaway one on
// loopback) by an admin whose invite it takes up, who then invites
// someone from the users page and copies the link.
func TestPeople(t *testing.T) {
	ctx := newTab(t)
	prov := oidctest.NewProvider("console", "console-secret")
	t.Cleanup(prov.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // the server listens there: the OIDC redirect URI must name its address before it starts
	s := startServer(t, "sqlite", "-addr", addr, "-public-url", "http://"+addr,
		"-oidc-issuer", prov.URL, "-oidc-client-id", "console", "-oidc-client-secret", "console-secret")
	base := s.url
	if st := s.api(orgKey, "POST", "/admin/workspaces", `{"name":"Team","slug":"team"}`, nil); st != 200 {
		t.Fatalf("creating a workspace: %d", st)
	}
	invite := func(email, role, wsRole string) string {
		t.Helper()
		var got struct {
			Link string `json:"invite_link"`
		}
		if st := s.api(orgKey, "POST", "/admin/users/invites", `{"email":"`+email+`","role":"`+role+`","workspaces":[{"id":"team","role":"`+wsRole+`"}]}`, &got); st != 200 ||
			!strings.HasPrefix(got.Link, base+"/console/invite/") {
			t.Fatalf("inviting %s: %d %q", email, st, got.Link)
		}
		return got.Link
	}

	const password = "correct horse battery staple"
	t.Run("invite, then password", func(t *testing.T) {
		link := invite("ann@example.com", "member", "member")
		do(t, ctx, "the invite page",
			chromedp.Navigate(link),
			chromedp.WaitVisible(chromedp.ID("first")))
		axe(t, ctx, "invite")
		do(t, ctx, "the invite form",
			chromedp.SendKeys(chromedp.ID("first"), "Ann"),
			chromedp.SendKeys(chromedp.ID("last"), "Lee"),
			chromedp.SendKeys(chromedp.ID("password"), password),
			chromedp.SendKeys(chromedp.ID("password2"), password),
			chromedp.Submit(chromedp.ID("password2")),
			chromedp.WaitVisible(chromedp.CSS(`p.flash`)))
		do(t, ctx, "sign in with the password",
			chromedp.SendKeys(chromedp.ID("email"), "ann@example.com"),
			chromedp.SendKeys(chromedp.ID("password"), password),
			chromedp.Submit(chromedp.ID("password")),
			chromedp.WaitVisible(chromedp.CSS(`nav[aria-label="Console"]`)))
		do(t, ctx, "the logs page", chromedp.Navigate(base+"/console/logs"), chromedp.WaitVisible(chromedp.CSS(`nav[aria-label="Console"]`)))
		title := run(t, ctx, "title", chromedp.Title())
		if !strings.HasPrefix(title, "Logs") {
			t.Errorf("a member's logs page is %q", title)
		}
		do(t, ctx, "the used link", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(`p.error`)))
		if msg := run(t, ctx, "message", chromedp.Text(chromedp.CSS(`p.error`))); !strings.Contains(msg, "already used") {
			t.Errorf("the used link says %q", msg)
		}
		do(t, ctx, "sign out", chromedp.Navigate(base+"/console/"), chromedp.WaitVisible(chromedp.CSS(`form.signout button`)),
			chromedp.Click(chromedp.CSS(`form.signout button`)), chromedp.WaitVisible(chromedp.ID("email")))
	})

	t.Run("OIDC, then invite from the users page", func(t *testing.T) {
		invite("boss@example.com", "admin", "admin")
		prov.SignIn(oidctest.Person{Email: "boss@example.com", EmailVerified: true, GivenName: "Big", FamilyName: "Boss"})
		do(t, ctx, "sign in through the provider",
			chromedp.Navigate(base+"/console/signin"),
			chromedp.WaitVisible(chromedp.CSS(`a[href$="/oidc/signin"]`)))
		axe(t, ctx, "signin")
		do(t, ctx, "the provider's button",
			chromedp.Click(chromedp.CSS(`a[href$="/oidc/signin"]`)),
			chromedp.WaitVisible(chromedp.CSS(`nav[aria-label="Console"] a[href$="/users"]`)))
		do(t, ctx, "the users page",
			chromedp.Navigate(base+"/console/users"),
			chromedp.WaitVisible(chromedp.ID("i-email")))
		axe(t, ctx, "users")
		if body := run(t, ctx, "users", chromedp.Text(chromedp.CSS(`main`))); !strings.Contains(body, "boss@example.com") || !strings.Contains(body, "ann@example.com") {
			t.Errorf("the users page does not list both people: %q", body)
		}
		do(t, ctx, "invite",
			chromedp.SendKeys(chromedp.ID("i-email"), "cy@example.com"),
			chromedp.SendKeys(chromedp.ID("i-ws"), "team"),
			chromedp.Submit(chromedp.ID("i-email")),
			chromedp.WaitVisible(chromedp.ID("link")))
		axe(t, ctx, "invited")
		link := run(t, ctx, "link", chromedp.Value(chromedp.ID("link")))
		if !strings.HasPrefix(link, base+"/console/invite/") {
			t.Errorf("the link shown: %q", link)
		}
		do(t, ctx, "copy", chromedp.Click(chromedp.CSS(`button[data-copy="link"]`)))
		said := run(t, ctx, "what the button said", chromedp.Poll[string](`document.getElementById("copy-status").textContent`))
		if said != "Copied to the clipboard." && said != "Not copied: select it and copy it yourself." {
			t.Errorf("the copy button said %q", said)
		}
	})
}
