package console

import (
	"net/http"
	"net/url"
	"strings"
)

// person is a user as the /admin/users routes answer.
type person struct {
	ID        string `json:"id"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	Email     string `json:"email"`
	Role      string `json:"role"`
	CreatedAt string `json:"created_at"`
}

// invitation is an invite as the /admin/users/invites routes answer.
type invitation struct {
	ID         string `json:"id"`
	Email      string `json:"email"`
	Role       string `json:"role"`
	Status     string `json:"status"`
	ExpiresAt  string `json:"expires_at"`
	Workspaces []struct {
		WorkspaceID string `json:"workspace_id"`
		Role        string `json:"role"`
	} `json:"workspaces"`
}

// usersData is the users page's own data.
type usersData struct {
	Users   []person
	Invites []invitation
}

// usersPage lists the organisation's users (with their roles, which an
// owner or admin may change) and its pending invites, with the form of
// a new invite. It reads /admin/users: only organisation keys, and
// owners' and admins' sessions, may.
func (c *console) usersPage(w http.ResponseWriter, r *http.Request, s *session) {
	c.showUsers(w, r, s, http.StatusOK, "")
}

func (c *console) showUsers(w http.ResponseWriter, r *http.Request, s *session, status int, msg string) {
	d := &pageData{Title: "Users", Nav: "users", Error: msg, Flash: flashes[r.URL.Query().Get("done")]}
	data := &usersData{}
	d.Data = data
	var us struct {
		Data []person `json:"data"`
	}
	var ivs struct {
		Data []invitation `json:"data"`
	}
	err := c.call(r, s.key, http.MethodGet, "/admin/users", url.Values{"page_size": {"100"}}, nil, &us)
	if err == nil {
		err = c.call(r, s.key, http.MethodGet, "/admin/users/invites", url.Values{"page_size": {"100"}, "status": {"pending"}}, nil, &ivs)
	}
	if err != nil {
		if c.apiFailed(w, r, s, err) {
			return
		}
		if d.Error == "" {
			d.Error, status = err.Error(), statusFor(err)
		}
	}
	data.Users, data.Invites = us.Data, ivs.Data
	c.render(w, r, status, "users", s, d)
}

// invited is the page that shows an invite link, once.
type invited struct {
	Email, Link string
}

// createInvite invites a person through POST /admin/users/invites and
// shows the link once, with a button that copies it.
func (c *console) createInvite(w http.ResponseWriter, r *http.Request, s *session) {
	f := func(n string) string { return strings.TrimSpace(r.PostFormValue(n)) }
	grants := []map[string]string{}
	if ws := f("workspace_id"); ws != "" {
		grants = append(grants, map[string]string{"id": ws, "role": f("workspace_role")})
	}
	body := map[string]any{"email": f("email"), "role": f("role"), "workspaces": grants}
	var got struct {
		Link string `json:"invite_link"`
	}
	if err := c.call(r, s.key, http.MethodPost, "/admin/users/invites", nil, body, &got); err != nil {
		if c.apiFailed(w, r, s, err) {
			return
		}
		c.showUsers(w, r, s, statusFor(err), err.Error())
		return
	}
	c.render(w, r, http.StatusOK, "invited", s, &pageData{Title: "Invite created", Nav: "users",
		Data: invited{Email: f("email"), Link: got.Link}})
}

// changeInvite resends (a new link, shown once) or withdraws an invite.
func (c *console) changeInvite(w http.ResponseWriter, r *http.Request, s *session) {
	id := escape(r.PathValue("id"))
	switch r.PathValue("action") {
	case "resend":
		var got struct {
			Link string `json:"inviteLink"`
		}
		if err := c.call(r, s.key, http.MethodPost, "/admin/users/invites/"+id+"/resend", nil, nil, &got); err != nil {
			c.usersFailed(w, r, s, err)
			return
		}
		c.render(w, r, http.StatusOK, "invited", s, &pageData{Title: "Invite renewed", Nav: "users",
			Data: invited{Email: r.PostFormValue("email"), Link: got.Link}})
	case "delete":
		if err := c.call(r, s.key, http.MethodDelete, "/admin/users/invites/"+id, nil, nil, nil); err != nil {
			c.usersFailed(w, r, s, err)
			return
		}
		http.Redirect(w, r, c.base+"/users?done=deleted", http.StatusSeeOther)
	default:
		c.notFound(w, r)
	}
}

// changeUser changes a user's organisation role, or deletes the user.
func (c *console) changeUser(w http.ResponseWriter, r *http.Request, s *session) {
	id := escape(r.PathValue("id"))
	var err error
	switch r.PathValue("action") {
	case "role":
		err = c.call(r, s.key, http.MethodPut, "/admin/users/"+id, nil, map[string]string{"role": r.PostFormValue("role")}, nil)
	case "delete":
		err = c.call(r, s.key, http.MethodDelete, "/admin/users/"+id, nil, nil, nil)
	default:
		c.notFound(w, r)
		return
	}
	if err != nil {
		c.usersFailed(w, r, s, err)
		return
	}
	http.Redirect(w, r, c.base+"/users?done=saved", http.StatusSeeOther)
}

// usersFailed shows the users page with the API's refusal.
func (c *console) usersFailed(w http.ResponseWriter, r *http.Request, s *session, err error) {
	if !c.apiFailed(w, r, s, err) {
		c.showUsers(w, r, s, statusFor(err), err.Error())
	}
}
