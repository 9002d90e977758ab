package main

import (
	"errors"
	"net/url"
)

// checkPublicURL checks the -public-url value v: empty, or an absolute
// http or https URL with a host and nothing after its path (no user,
// query or fragment), since the gateway appends its own paths to it.
func checkPublicURL(v string) error {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" {
		return errors.New("gateway: -public-url must be an absolute http or https URL such as https://gateway.example.com, without user, query or fragment")
	}
	return nil
}
