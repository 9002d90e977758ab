package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// The argon2id parameters of the passwords the console hashes: the
// second recommended option of RFC 9106 (section 4), for hosts that
// cannot spare the 2 GiB of the first: 64 MiB of memory, 3 passes, 4
// lanes, a 128-bit random salt and a 256-bit tag.
const (
	argonMemory  = 64 * 1024 // KiB
	argonTime    = 3
	argonThreads = 4
	argonSaltLen = 16
	argonKeyLen  = 32
)

// Bounds of a stored hash's parameters that verify accepts, so that a
// record written elsewhere cannot make one check take unbounded memory
// or time.
const (
	maxArgonMemory = 1 << 20 // KiB: 1 GiB
	maxArgonTime   = 16
)

// hashPassword returns the argon2id hash of password in the PHC string
// format: $argon2id$v=19$m=65536,t=3,p=4$<salt>$<tag>, salt and tag in
// unpadded standard base64.
func hashPassword(password string) string {
	salt := make([]byte, argonSaltLen)
	rand.Read(salt) // never fails (crypto/rand)
	tag := argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		b64.EncodeToString(salt), b64.EncodeToString(tag))
}

// errBadHash is a stored hash verifyPassword cannot read.
var errBadHash = errors.New("console: the stored password hash is not an argon2id PHC string")

// verifyPassword reports whether password matches hash, a PHC string of
// argon2id (with the parameters it names, within bounds), comparing in
// constant time.
func verifyPassword(hash, password string) (bool, error) {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return false, errBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, errBadHash
	}
	var m, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil ||
		m < 8 || m > maxArgonMemory || t < 1 || t > maxArgonTime || p < 1 {
		return false, errBadHash
	}
	b64 := base64.RawStdEncoding
	salt, err := b64.DecodeString(parts[4])
	if err != nil || len(salt) < 8 {
		return false, errBadHash
	}
	tag, err := b64.DecodeString(parts[5])
	if err != nil || len(tag) < 16 || len(tag) > 64 {
		return false, errBadHash
	}
	got := argon2.IDKey([]byte(password), salt, t, m, p, uint32(len(tag)))
	return subtle.ConstantTimeCompare(got, tag) == 1, nil
}

// dummyHash is checked against the password of a sign-in whose email
// is no user's, so that such a sign-in takes as long as a wrong
// password and does not tell which emails have accounts.
const dummyHash = "$argon2id$v=19$m=65536,t=3,p=4$c29tZXNhbHRzb21lc2FsdA$2hd9qUIhAQMTT54YH8BkO0nUJK9wvxN3aMUHsPlG4Bk"
