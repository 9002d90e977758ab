package gateway

import (
	"strconv"
	"unicode/utf8"
)

// Bounds on what tenants write through the control plane and callers send
// on the data plane (docs/architecture.md, Trust). Each is checked where the value enters,
// and a value over its bound is a 400 naming the field.
const (
	// maxNameBytes bounds the names and descriptions of stored resources
	// (keys, virtual keys, configs, workspaces, policies).
	maxNameBytes = 255

	// maxModelBytes bounds a request's model: it becomes a metrics label,
	// a log field and a cache-key part.
	maxModelBytes = 256
)

// checkLabel checks a name (or another short label) a tenant writes: at
// most 255 bytes of valid UTF-8 without control characters. param names
// the field in the 400.
func checkLabel(param, s string) error {
	if len(s) > maxNameBytes {
		return policyInvalid(param, param+" must be at most "+strconv.Itoa(maxNameBytes)+" bytes")
	}
	if !utf8.ValidString(s) {
		return policyInvalid(param, param+" must be valid UTF-8")
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return policyInvalid(param, param+" must not contain control characters")
		}
	}
	return nil
}

// checkMetadata checks metadata a tenant stores (an API key's or a
// workspace's defaults) against the bounds of x-gateway-metadata: at most
// 64 keys and 8 KiB, counted as the keys' and values' bytes, no empty key.
// param names the field in the 400.
func checkMetadata(param string, md map[string]string) error {
	if len(md) > maxMetadataKeys {
		return policyInvalid(param, param+" must have at most "+strconv.Itoa(maxMetadataKeys)+" keys")
	}
	n := 0
	for k, v := range md {
		if k == "" {
			return policyInvalid(param, param+" must not have an empty key")
		}
		n += len(k) + len(v)
	}
	if n > maxMetadataBytes {
		return policyInvalid(param, param+" must be at most 8 KiB")
	}
	return nil
}
