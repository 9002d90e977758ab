// Package uuid makes the UUIDs of the gateway and its products: random
// ones (version 4) and time-ordered ones (version 7) for request logs.
package uuid

import (
	"crypto/rand"
	"encoding/hex"
	"sync/atomic"
	"time"
)

// New returns a random UUID (version 4) from crypto/rand.
func New() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return Format(&b)
}

// NewV7 returns a version 7 UUID of the time now: its first 48 bits are
// the Unix time in milliseconds, the other 74 random, from crypto/rand.
// Unlike V7's, two made in the same millisecond are in no set order.
func NewV7() string {
	var b [16]byte
	rand.Read(b[6:])
	ms := uint64(time.Now().UnixMilli())
	b[0], b[1], b[2], b[3], b[4], b[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	return Format(&b)
}

// Format returns b in the canonical 8-4-4-4-12 hex form.
func Format(b *[16]byte) string {
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:], b[10:])
	return string(out[:])
}

// V7 makes UUIDv7 (RFC 9562), whose first 48 bits are the Unix time in
// milliseconds, the 12 after the version the fraction of that millisecond
// (method 3 of RFC 9562 §6.2), and the last 62 random, from crypto/rand.
// The 60 bits of time never repeat nor go back within one generator: a
// time not after the last one given is replaced by the next value, so
// that ids sort in the order they were made. It is safe for concurrent
// use; its zero value is ready.
type V7 struct {
	last atomic.Uint64 // the time bits of the latest id
}

// Next returns a new id for time t.
func (u *V7) Next(t time.Time) string {
	ms := t.UnixMilli()
	frac := uint64(t.Nanosecond()%1e6) * 4096 / 1e6
	v := uint64(ms)<<12 | frac
	for {
		last := u.last.Load()
		if v <= last {
			v = last + 1
		}
		if u.last.CompareAndSwap(last, v) {
			break
		}
	}
	var b [16]byte
	rand.Read(b[8:])
	ts := v >> 12
	b[0], b[1], b[2], b[3], b[4], b[5] = byte(ts>>40), byte(ts>>32), byte(ts>>24), byte(ts>>16), byte(ts>>8), byte(ts)
	b[6] = 0x70 | byte(v>>8)&0x0f
	b[7] = byte(v)
	b[8] = b[8]&0x3f | 0x80
	return Format(&b)
}
