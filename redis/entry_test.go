package redis

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/modelgateway/gateway"
)

// FuzzDecodeEntry: no value read from Redis makes decodeEntry panic or
// allocate beyond its size, and every response round-trips.
func FuzzDecodeEntry(f *testing.F) {
	f.Add(string(encodeEntry(&gateway.CachedResponse{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{}`)}, 1<<20)), "X-A", "v", []byte("body"))
	f.Add("\x01\xc8\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", "", "", []byte(nil))
	f.Add("\x01\xc8\x01\x01\x03Foo\xff\xff\xff\xff\x0f", "Vary", "", []byte("\x00"))
	f.Fuzz(func(t *testing.T, raw, name, value string, body []byte) {
		if res, err := decodeEntry(raw); err == nil {
			if n := len(res.Header); n > len(raw) {
				t.Fatalf("%d header names from %d bytes", n, len(raw))
			}
		}
		res := &gateway.CachedResponse{Status: 200, Header: http.Header{name: {value, value}}, Body: body}
		got, err := decodeEntry(string(encodeEntry(res, 1<<30)))
		if err != nil {
			t.Fatalf("decoding an encoded entry: %v", err)
		}
		if diff := cmp.Diff(res, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip (-put +got):\n%s", diff)
		}
	})
}
