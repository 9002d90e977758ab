package responses

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/modelgateway/gateway/internal/wire"
)

// NewID returns a new random identifier with the given prefix, shaped
// like OpenAI's: "resp_" followed by 48 hexadecimal digits for prefix
// "resp". It is safe for concurrent use.
func NewID(prefix string) string {
	var b [24]byte
	rand.Read(b[:])
	out := make([]byte, 0, len(prefix)+1+48)
	out = append(out, prefix...)
	out = append(out, '_')
	return string(hex.AppendEncode(out, b[:]))
}

// appendString appends s as a JSON string: see wire.AppendText.
func appendString(b []byte, s string) []byte { return wire.AppendText(b, s) }
