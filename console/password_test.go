package console

import (
	"encoding/base64"
	"strings"
	"testing"

	"golang.org/x/crypto/argon2"
)

// TestPassword: a hash is an argon2id PHC string with RFC 9106's second
// recommended parameters, salted, that verifies its password only; a
// hash of other parameters verifies as they say; malformed or
// unbounded hashes are refused.
func TestPassword(t *testing.T) {
	h := hashPassword("correct horse battery staple")
	if !strings.HasPrefix(h, "$argon2id$v=19$m=65536,t=3,p=4$") {
		t.Errorf("the hash %q", h)
	}
	if h == hashPassword("correct horse battery staple") {
		t.Error("two hashes of one password are equal: no salt")
	}
	if ok, err := verifyPassword(h, "correct horse battery staple"); !ok || err != nil {
		t.Errorf("the right password: %v %v", ok, err)
	}
	if ok, err := verifyPassword(h, "correct horse battery stapler"); ok || err != nil {
		t.Errorf("a wrong password: %v %v", ok, err)
	}
	// A cheap hash written by another tool (the reference's test vector
	// parameters) verifies by its own parameters.
	cheap := "$argon2id$v=19$m=8,t=1,p=1$c29tZXNhbHQ$" + b64(argon2.IDKey([]byte("pw"), []byte("somesalt"), 1, 8, 1, 32))
	if ok, err := verifyPassword(cheap, "pw"); !ok || err != nil {
		t.Errorf("a hash of other parameters: %v %v", ok, err)
	}
	for _, bad := range []string{"", "plain", "$argon2i$v=19$m=8,t=1,p=1$c29tZXNhbHQ$AAAAAAAAAAAAAAAAAAAAAA",
		"$argon2id$v=16$m=8,t=1,p=1$c29tZXNhbHQ$AAAAAAAAAAAAAAAAAAAAAA",
		"$argon2id$v=19$m=4194304,t=1,p=1$c29tZXNhbHQ$AAAAAAAAAAAAAAAAAAAAAA", // 4 GiB
		"$argon2id$v=19$m=8,t=100,p=1$c29tZXNhbHQ$AAAAAAAAAAAAAAAAAAAAAA",
		"$argon2id$v=19$m=8,t=1,p=1$!!$AAAAAAAAAAAAAAAAAAAAAA"} {
		if ok, err := verifyPassword(bad, "pw"); ok || err == nil {
			t.Errorf("verifyPassword(%q): %v %v, want an error", bad, ok, err)
		}
	}
	if _, err := verifyPassword(dummyHash, "x"); err != nil {
		t.Errorf("the dummy hash: %v", err)
	}
}

// FuzzVerifyPassword: no stored hash makes verifyPassword panic or
// accept a password its tag was not made from.
func FuzzVerifyPassword(f *testing.F) {
	f.Add("$argon2id$v=19$m=8,t=1,p=1$c29tZXNhbHQ$AAAAAAAAAAAAAAAAAAAAAA", "pw")
	f.Add(dummyHash, "x")
	f.Fuzz(func(t *testing.T, hash, pw string) {
		if strings.Contains(hash, "m=") && !strings.Contains(hash, "m=8,") {
			t.Skip() // keep the fuzzer off expensive parameters
		}
		verifyPassword(hash, pw)
	})
}

func b64(b []byte) string { return base64.RawStdEncoding.EncodeToString(b) }
