package gateway

import (
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadAll: a body read whole whatever its declared length says, within
// the limit, in pieces or not.
func TestReadAll(t *testing.T) {
	for _, tc := range []struct {
		body     string
		declared int64
		limit    int64
		want     string
	}{
		{"hello", 5, 100, "hello"},
		{"hello", -1, 100, "hello"},
		{"hello", 3, 100, "hello"}, // longer than declared
		{"hello", 9, 100, "hello"}, // shorter than declared
		{"hello world", 11, 6, "hello "},
		{"", 0, 10, ""},
	} {
		for _, half := range []bool{false, true} {
			r := strings.NewReader(tc.body)
			var rd = any(r).(interface{ Read([]byte) (int, error) })
			if half {
				rd = iotest.HalfReader(r)
			}
			got, err := readAll(rd, tc.declared, tc.limit)
			if err != nil || string(got) != tc.want {
				t.Errorf("readAll(%q, declared %d, limit %d, half %v) = %q, %v; want %q", tc.body, tc.declared, tc.limit, half, got, err, tc.want)
			}
		}
	}
}
