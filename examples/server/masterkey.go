package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/modelgateway/gateway/sqlstore"
)

// masterKeyEnv is the environment variable holding the master key that
// seals provider credentials in a database.
const masterKeyEnv = "GATEWAY_MASTER_KEY"

// keyFileSuffix names a SQLite database's key file: the database's path
// with this suffix.
const keyFileSuffix = ".key"

// maxKeyFileBytes bounds what is read of a key file: a key is 64 hex
// digits, or 44 base64 characters, and a line end.
const maxKeyFileBytes = 1 << 10

// masterKeySource is the master key of a database, and where it came
// from. Its value is a secret: no message ever holds it.
type masterKeySource struct {
	value   []byte
	file    string // the key file it was read from or written to; empty when it came from masterKeyEnv
	created bool   // the key file was created by this start
}

// from names where the key came from, for messages.
func (k masterKeySource) from() string {
	if k.file == "" {
		return masterKeyEnv
	}
	return "the key file " + k.file
}

// masterKey returns the master key of spec's database: GATEWAY_MASTER_KEY
// when it is set; else, for SQLite, the key file beside the database
// (its path followed by ".key"), created with a new random key when it
// does not exist. A Postgres database has no file beside it, so it needs
// GATEWAY_MASTER_KEY. Its errors never quote a key.
func masterKey(spec dbSpec) (masterKeySource, error) {
	if v := os.Getenv(masterKeyEnv); v != "" {
		k, err := sqlstore.ParseMasterKey(v)
		if err != nil {
			return masterKeySource{}, fmt.Errorf("gateway: %s: %w", masterKeyEnv, err)
		}
		return masterKeySource{value: k}, nil
	}
	if spec.kind == dbPostgres {
		return masterKeySource{}, fmt.Errorf("gateway: -db %s: set %s (32 bytes as 64 hex digits or base64) to start on a Postgres database: "+
			"it seals the provider credentials stored there, and every replica needs the same key", spec.name, masterKeyEnv)
	}
	return keyFile(spec.path + keyFileSuffix)
}

// keyFile returns the key of the key file at path, creating the file with
// a new random key (64 hex digits, mode 0600) when it does not exist. If
// another process creates it meanwhile, its key is read instead.
func keyFile(path string) (masterKeySource, error) {
	k, err := readKeyFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return masterKeySource{value: k, file: path}, err
	}
	k, err = createKeyFile(path)
	if errors.Is(err, fs.ErrExist) {
		k, err = readKeyFile(path)
		return masterKeySource{value: k, file: path}, err
	}
	return masterKeySource{value: k, file: path, created: err == nil}, err
}

// readKeyFile reads the key file at path. It refuses a file that others
// than its owner may read or write, as ssh refuses such a private key,
// and one that does not hold a key. Its errors wrap fs.ErrNotExist when
// there is no file.
func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gateway: master key file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("gateway: master key file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("gateway: master key file %s is not a regular file", path)
	}
	// Windows has no such permission bits: os reports 0666 for every
	// writable file.
	if perm := fi.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return nil, fmt.Errorf("gateway: master key file %s may be read or written by other users (mode %#o): "+
			"make it private with chmod 600 %s", path, perm, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes))
	if err != nil {
		return nil, fmt.Errorf("gateway: master key file: %w", err)
	}
	k, err := sqlstore.ParseMasterKey(string(data))
	if err != nil {
		return nil, fmt.Errorf("gateway: master key file %s does not hold a key: %w", path, err)
	}
	return k, nil
}

// createKeyFile creates the key file at path, mode 0600, with a new
// random key as 64 hex digits and a line end, synced to disk with its
// directory entry, since the database becomes unreadable without it. It
// fails with an error wrapping fs.ErrExist when the file exists.
func createKeyFile(path string) ([]byte, error) {
	key := make([]byte, sqlstore.MasterKeySize)
	rand.Read(key)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("gateway: master key file: %w", err)
	}
	_, err = f.WriteString(hex.EncodeToString(key) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("gateway: master key file %s: %w", path, err)
	}
	return key, nil
}

// syncDir flushes the entries of the directory dir to disk, so that a
// file just created there survives a crash of the machine. Systems that
// cannot sync a directory (Windows) are not asked to.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
