// Package bounds holds the bounds on what tenants write through the
// control plane and callers send on the data plane (docs/architecture.md,
// Trust), for the root package and the products to check them the same
// way. A value over its bound is a *httpapi.FieldError naming the field,
// which the gateway answers with a 400. It imports the standard library
// and internal/httpapi only.
package bounds

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelgateway/gateway/internal/httpapi"
)

// Bounds of stored labels and of metadata.
const (
	// MaxNameBytes bounds the names of stored resources (keys, virtual
	// keys, configs, workspaces, policies).
	MaxNameBytes = 255

	// MaxDescriptionBytes bounds the descriptions of keys and workspaces.
	MaxDescriptionBytes = 4096

	// MaxMetadataKeys and MaxMetadataBytes bound x-gateway-metadata and
	// the metadata a tenant stores: keys, and the keys' and values' bytes.
	MaxMetadataKeys  = 64
	MaxMetadataBytes = 8 << 10
)

// Label checks a name (or another short label) a tenant writes: at most
// MaxNameBytes bytes of valid UTF-8 without control characters. param
// names the field.
func Label(param, s string) error {
	if len(s) > MaxNameBytes {
		return httpapi.Invalid(param, param+" must be at most "+strconv.Itoa(MaxNameBytes)+" bytes")
	}
	if !utf8.ValidString(s) {
		return httpapi.Invalid(param, param+" must be valid UTF-8")
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return httpapi.Invalid(param, param+" must not contain control characters")
		}
	}
	return nil
}

// Metadata checks metadata a tenant stores (an API key's or a
// workspace's defaults) against the bounds of x-gateway-metadata: at most
// MaxMetadataKeys keys and 8 KiB, counted as the keys' and values' bytes,
// no empty key. param names the field.
func Metadata(param string, md map[string]string) error {
	if len(md) > MaxMetadataKeys {
		return httpapi.Invalid(param, param+" must have at most "+strconv.Itoa(MaxMetadataKeys)+" keys")
	}
	n := 0
	for k, v := range md {
		if k == "" {
			return httpapi.Invalid(param, param+" must not have an empty key")
		}
		n += len(k) + len(v)
	}
	if n > MaxMetadataBytes {
		return httpapi.Invalid(param, param+" must be at most 8 KiB")
	}
	return nil
}

// Description checks a description a tenant writes: at most
// MaxDescriptionBytes bytes of valid UTF-8 without NUL (newlines and tabs
// are fine in prose). param names the field.
func Description(param, s string) error {
	switch {
	case len(s) > MaxDescriptionBytes:
		return httpapi.Invalid(param, param+" must be at most "+strconv.Itoa(MaxDescriptionBytes)+" bytes")
	case !utf8.ValidString(s):
		return httpapi.Invalid(param, param+" must be valid UTF-8")
	case strings.IndexByte(s, 0) >= 0:
		return httpapi.Invalid(param, param+" must not contain NUL")
	}
	return nil
}

// DNSLabel reports whether s is a DNS host label: 1 to 63 ASCII letters,
// digits and hyphens, not starting or ending with a hyphen.
func DNSLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// ProjectID reports whether s can be a Google Cloud project id (6 to 30
// lower-case letters, digits and hyphens) or project number, checked
// loosely as a lower-case DNS label: what matters is that it is one safe
// path segment.
func ProjectID(s string) bool {
	return DNSLabel(s) && lower(s)
}

// Region reports whether s is a plausible region name of a cloud host: a
// lower-case DNS label that starts with a letter, e.g. us-central1,
// europe-west4, us-east-1 or global.
func Region(s string) bool {
	return DNSLabel(s) && lower(s) && s[0] >= 'a' && s[0] <= 'z'
}

// lower reports whether s has no upper-case ASCII letters.
func lower(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' {
			return false
		}
	}
	return true
}

// Limits checks the rate_limits (open '[': an array) or usage_limits
// (open '{': an object) a tenant writes on a key or workspace, named
// name, and returns a copy to store: nil for absent or null.
func Limits(name string, raw []byte, open byte) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] != open {
		kind := "an array"
		if open == '{' {
			kind = "an object"
		}
		return nil, httpapi.Invalid(name, name+" must be "+kind+" or null")
	}
	return bytes.Clone(raw), nil
}
