package console

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/observe"
	"github.com/modelgateway/gateway/users"
)

// Bounds of a password a person sets: long enough to resist guessing,
// short enough that hashing it costs what it should.
const (
	minPassword = 12
	maxPassword = 256
)

// signInPerson signs in a person with the email and password of the
// form. Wrong passwords (and unknown emails, which take as long) are
// counted per client address and per account; beyond either limit a
// sign-in is refused with 429 and Retry-After before the password is
// checked, even a right one.
func (c *console) signInPerson(w http.ResponseWriter, r *http.Request) {
	if c.opts.Users == nil {
		c.showSignIn(w, r, http.StatusBadRequest, "People do not sign in on this console: use a gateway API key.")
		return
	}
	email := strings.ToLower(strings.TrimSpace(r.PostFormValue("email")))
	password := r.PostFormValue("password")
	if email == "" || len(email) > 254 || password == "" || len(password) > maxPassword {
		c.showSignIn(w, r, http.StatusBadRequest, "Enter your email and password.")
		return
	}
	client, account := clientAddr(r), "account:"+email
	okClient, waitClient := c.limiter.allowed(client)
	okAccount, waitAccount := c.accounts.allowed(account)
	if !okClient || !okAccount {
		secs := int(max(waitClient, waitAccount)/time.Second) + 1
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		c.showSignIn(w, r, http.StatusTooManyRequests, "Too many wrong passwords. Try again in "+strconv.Itoa(secs)+" seconds.")
		return
	}
	u, err := c.opts.Users.UserByEmail(r.Context(), email)
	if err != nil && !errors.Is(err, gateway.ErrNotFound) {
		c.showSignIn(w, r, http.StatusInternalServerError, "The console could not read the accounts. Try again.")
		return
	}
	hash := dummyHash
	if u != nil && u.PasswordHash != "" {
		hash = u.PasswordHash
	}
	ok, _ := c.verify(hash, password)
	if u == nil || u.PasswordHash == "" || !ok {
		c.limiter.fail(client)
		c.accounts.fail(account)
		c.showSignIn(w, r, http.StatusUnauthorized, "That email and password do not match an account.")
		return
	}
	c.signInUser(w, r, u)
}

// signInUser starts the session of user u, with a session key of its
// own, and sends the browser to the overview.
func (c *console) signInUser(w http.ResponseWriter, r *http.Request, u *users.User) {
	key, err := users.NewSessionKey(r.Context(), c.opts.Users, u, c.opts.Now(), c.opts.SessionTTL)
	switch {
	case errors.Is(err, users.ErrNoWorkspace):
		c.showSignIn(w, r, http.StatusForbidden, "Your account belongs to no workspace yet: ask an administrator to add you to one.")
		return
	case err != nil:
		c.showSignIn(w, r, http.StatusInternalServerError, "The console could not start a session: its store failed. Try again.")
		return
	}
	if c.startSession(w, r, key) {
		http.Redirect(w, r, c.base+"/", http.StatusSeeOther)
	}
}

// verify checks password against hash, at most two at once: each check
// takes 64 MiB.
func (c *console) verify(hash, password string) (bool, error) {
	c.hashing <- struct{}{}
	defer func() { <-c.hashing }()
	return verifyPassword(hash, password)
}

// hash hashes password, at most two at once.
func (c *console) hash(password string) string {
	c.hashing <- struct{}{}
	defer func() { <-c.hashing }()
	return hashPassword(password)
}

// inviteData is the invite page's own data.
type inviteData struct {
	Email, Token        string
	FirstName, LastName string
}

// invitePage shows the form of a pending invite: the person's name and a
// password. An unknown link is a 404, one used or expired a 410.
func (c *console) invitePage(w http.ResponseWriter, r *http.Request) {
	iv, ok := c.pendingInvite(w, r)
	if !ok {
		return
	}
	c.showInvite(w, r, http.StatusOK, iv, r.PathValue("token"), "", "", "")
}

func (c *console) showInvite(w http.ResponseWriter, r *http.Request, status int, iv *users.Invite, token, first, last, msg string) {
	w.Header().Set("Cache-Control", "no-store")
	tok := randomToken()
	c.setCookie(w, r, preSessionCookie, tok, preSessionTTL)
	c.render(w, r, status, "invite", nil, &pageData{Title: "Join the gateway", CSRF: tok, Error: msg,
		Data: inviteData{Email: iv.Email, Token: token, FirstName: first, LastName: last}})
}

// pendingInvite returns the pending invite of r's token, or answers the
// page that says why there is none.
func (c *console) pendingInvite(w http.ResponseWriter, r *http.Request) (*users.Invite, bool) {
	w.Header().Set("Cache-Control", "no-store")
	if c.opts.Users == nil {
		c.notFound(w, r)
		return nil, false
	}
	iv, err := users.Pending(r.Context(), c.opts.Users, r.PathValue("token"), c.opts.Now())
	switch {
	case errors.Is(err, users.ErrInviteUnknown):
		c.render(w, r, http.StatusNotFound, "error", nil, &pageData{Title: "Invite not found",
			Error: "This invite link is not valid: it may have been replaced by a newer one or withdrawn. Ask for a new invite."})
	case errors.Is(err, users.ErrInviteGone):
		c.render(w, r, http.StatusGone, "error", nil, &pageData{Title: "Invite no longer valid",
			Error: "This invite link was already used or has expired. Sign in, or ask for a new invite."})
	case err != nil:
		c.render(w, r, http.StatusInternalServerError, "error", nil, &pageData{Title: "Invite",
			Error: "The console could not read the invite. Try again."})
	default:
		return iv, true
	}
	return nil, false
}

// acceptInvite creates the user of a pending invite from the form: a
// first and last name and a password given twice. The invite is used
// once; the person then signs in.
func (c *console) acceptInvite(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	iv, ok := c.pendingInvite(w, r)
	if !ok {
		return
	}
	token := r.PathValue("token")
	f := func(n string) string { return strings.TrimSpace(r.PostFormValue(n)) }
	first, last := f("first_name"), f("last_name")
	ck, err := r.Cookie(preSessionCookie)
	if err != nil || !sameToken(r.PostFormValue("csrf"), ck.Value) {
		c.showInvite(w, r, http.StatusForbidden, iv, token, first, last, "The form's security token is missing or stale. Try again.")
		return
	}
	password := r.PostFormValue("password")
	msg := ""
	switch {
	case first == "" || !validName(first) || !validName(last):
		msg = "Enter your first name (and last name), at most 255 characters without control characters."
	case utf8.RuneCountInString(password) < minPassword || len(password) > maxPassword:
		msg = "Choose a password of at least " + strconv.Itoa(minPassword) + " characters (and at most " + strconv.Itoa(maxPassword) + " bytes)."
	case password != r.PostFormValue("password2"):
		msg = "The two passwords differ."
	}
	if msg != "" {
		c.showInvite(w, r, http.StatusBadRequest, iv, token, first, last, msg)
		return
	}
	u, err := users.AcceptFor(r.Context(), c.opts.Users, iv, first, last, c.hash(password), c.opts.Now())
	switch {
	case errors.Is(err, users.ErrInviteGone), errors.Is(err, users.ErrInviteUnknown):
		c.render(w, r, http.StatusGone, "error", nil, &pageData{Title: "Invite no longer valid",
			Error: "This invite link was already used or has expired. Sign in, or ask for a new invite."})
		return
	case errors.Is(err, users.ErrEmailTaken):
		c.render(w, r, http.StatusConflict, "error", nil, &pageData{Title: "Account exists",
			Error: "An account with this email exists already: sign in with it."})
		return
	case err != nil:
		c.showInvite(w, r, http.StatusInternalServerError, iv, token, first, last, "The console could not create the account. Try again.")
		return
	}
	c.audited(r, u, iv)
	c.showSignInFlash(w, r, "Your account is ready: sign in with your email and password.")
}

// audited records that the console created user u from invite iv. The
// record's URI is the invite page's without its token.
func (c *console) audited(r *http.Request, u *users.User, iv *users.Invite) {
	if c.opts.Audit == nil {
		return
	}
	rec := &observe.AuditRecord{Time: c.opts.Now().UTC(), KeyID: "user-" + u.ID, Method: http.MethodPost, URI: c.base + "/invite",
		Action: "users.create", ResourceType: "users", ResourceID: u.ID, Status: http.StatusOK, ClientIP: clientAddr(r),
		Detail: "accepted invite " + iv.ID + " as " + string(u.Role)}
	c.opts.Audit.AddAuditRecord(r.Context(), rec) // a failure loses the record, not the account
}

// validName reports whether s may be a person's name: at most 255
// bytes, no control characters.
func validName(s string) bool {
	return len(s) <= 255 && utf8.ValidString(s) && !strings.ContainsFunc(s, func(c rune) bool { return c < ' ' || c == 0x7f })
}
