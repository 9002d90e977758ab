package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReader(t *testing.T) {
	in := ": comment\r\nevent: a\r\ndata: one\r\ndata: two\r\n\r\nid: 7\n\ndata:three\n\nevent: b\ndata: " + strings.Repeat("x", 5000) + "\n\ndata: last"
	r := NewReader(strings.NewReader(in), 1<<20)
	type ev struct{ Event, Data string }
	var got []ev
	for {
		e, d, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev{e, string(d)})
	}
	want := []ev{{"a", "one\ntwo"}, {"", "three"}, {"b", strings.Repeat("x", 5000)}, {"", "last"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	if _, _, err := NewReader(strings.NewReader("data: "+strings.Repeat("y", 100)+"\n\n"), 10).Next(); !errors.Is(err, ErrEventTooLong) {
		t.Errorf("long event: %v, want ErrEventTooLong", err)
	}
}

// FuzzReader: any input ends in io.EOF, io.ErrUnexpectedEOF or
// ErrEventTooLong, never a panic, and no event outgrows the limit.
func FuzzReader(f *testing.F) {
	f.Add([]byte("event: x\ndata: {}\n\n"))
	f.Add([]byte("data: a\r\ndata: b"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewReader(bytes.NewReader(in), 256)
		for range len(in) + 1 {
			_, d, err := r.Next()
			if err != nil {
				if err != io.EOF && err != io.ErrUnexpectedEOF && err != ErrEventTooLong {
					t.Fatalf("error %v", err)
				}
				return
			}
			if len(d) > 256 {
				t.Fatalf("event of %d bytes past the limit", len(d))
			}
		}
		t.Fatal("more events than input bytes")
	})
}
