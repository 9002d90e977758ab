package sqlstore

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
)

// MasterKeySize is the size of a master key in bytes: an AES-256 key.
const MasterKeySize = 32

var (
	// ErrWrongMasterKey is returned by Open when the database's secrets
	// were sealed under another master key.
	ErrWrongMasterKey = errors.New("sqlstore: the master key does not open this database")

	// ErrMasterKeyRequired is returned by Open when a store without a
	// master key is asked to open a database that holds sealed secrets,
	// and by the writes that would have to seal one (a virtual key with a
	// credential, any saved config).
	ErrMasterKeyRequired = errors.New("sqlstore: a master key is required: the database holds sealed provider credentials")
)

// errBadMasterKey is the error of a malformed master key. It never quotes
// the key, which is a secret.
var errBadMasterKey = errors.New("sqlstore: a master key is 32 bytes, written as 64 hex digits or in base64")

// ParseMasterKey parses a master key written as 64 hex digits or as the
// base64 (standard or URL alphabet, padded or not) of 32 bytes, the forms
// GATEWAY_MASTER_KEY accepts. Surrounding white space is ignored, so the
// contents of a key file may be passed as they are. The error never
// quotes s.
func ParseMasterKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if len(s) == 2*MasterKeySize {
		if k, err := hex.DecodeString(s); err == nil {
			return k, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil && len(k) == MasterKeySize {
			return k, nil
		}
	}
	return nil, errBadMasterKey
}

// sealer seals and opens values with AES-256-GCM. A sealed value is a
// random 12-byte nonce followed by the ciphertext and its tag. The
// additional data binds the value to the table, column and row it was
// written to, so that a sealed value copied into another row, or another
// column of its row, does not open.
//
// The zero sealer (no master key) seals nothing and opens nothing: both
// return ErrMasterKeyRequired. A sealer is safe for concurrent use.
type sealer struct {
	aead cipher.AEAD // nil without a master key
}

func newSealer(key []byte) (sealer, error) {
	if len(key) == 0 {
		return sealer{}, nil
	}
	if len(key) != MasterKeySize {
		return sealer{}, errBadMasterKey
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return sealer{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return sealer{}, err
	}
	return sealer{aead: aead}, nil
}

// additionalData names where a sealed value lives: table, column and the
// id of its row (a UUID the store made, or the meta row's fixed name),
// NUL-separated.
func additionalData(table, column, rowID string) []byte {
	return []byte("sqlstore\x00" + table + "\x00" + column + "\x00" + rowID)
}

// seal returns plaintext sealed for the given place.
func (s sealer) seal(plaintext []byte, table, column, rowID string) ([]byte, error) {
	if s.aead == nil {
		return nil, ErrMasterKeyRequired
	}
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plaintext)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return s.aead.Seal(nonce, nonce, plaintext, additionalData(table, column, rowID)), nil
}

// errSealed is the error of a sealed value that does not open: the wrong
// key, a value altered or moved to another row.
var errSealed = errors.New("a sealed value does not open under this master key: it was altered or moved from another row")

// open returns the plaintext of a value sealed for the given place.
func (s sealer) open(sealed []byte, table, column, rowID string) ([]byte, error) {
	if s.aead == nil {
		return nil, ErrMasterKeyRequired
	}
	n := s.aead.NonceSize()
	if len(sealed) < n+s.aead.Overhead() {
		return nil, errSealed
	}
	p, err := s.aead.Open(nil, sealed[:n], sealed[n:], additionalData(table, column, rowID))
	if err != nil {
		return nil, errSealed
	}
	return p, nil
}

// The check value: a known plaintext sealed under the master key when a
// database first meets one, so that Open tells a wrong key at once rather
// than when a credential is first used.
const (
	checkName      = "master_key_check"
	checkPlaintext = "sqlstore master key check v1"
)
