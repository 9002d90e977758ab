package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/bits"
	"strings"
	"testing"
	"unicode/utf8"
)

var seeds = []string{
	`{"a":[1,-2.5e+3,true,false,null,"x\u00e9\ud83d\ude00\n"],"b":{}}`,
	` [ {"k" : "v<>&\u2028"} , [] , 0 ] `,
	`"\ud800 lone \\ \/ \b\f\t"`, "\"\xff\xfe invalid\"", `{"a":1,}`, `[1,]`, `01`, `-`, `1.`, `1e`, `"\x"`,
	`{"a" 1}`, `[1 2]`, `nul`, `{"a":1}{`, "\"\u2029\"", `1E-7`, `123456789012345678901234567890`,
}

// FuzzDecoder holds the Decoder to encoding/json: what it reads whole is
// valid JSON, a string it reads is what encoding/json reads, and it reads
// every valid text that does not nest too deep.
func FuzzDecoder(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var d Decoder
		d.Reset(in)
		raw := d.Raw()
		ok := d.End()
		if valid := json.Valid(in); ok != valid && (ok || depth(in) <= maxDepth) {
			t.Fatalf("Decoder read %q whole: %v; json.Valid: %v", in, ok, valid)
		}
		if ok && !bytes.Equal(raw, bytes.TrimSpace(in)) {
			t.Fatalf("Raw of %q is %q", in, raw)
		}
		d.Reset(in)
		s := d.String()
		if d.End() {
			var want string
			if err := json.Unmarshal(in, &want); err != nil || s != want {
				t.Fatalf("String of %q is %q; encoding/json: %q, %v", in, s, want, err)
			}
		}
		d.Reset(in)
		n := d.Int()
		if d.End() {
			var want int
			if err := json.Unmarshal(in, &want); err != nil || n != want {
				t.Fatalf("Int of %q is %d; encoding/json: %d, %v", in, n, want, err)
			}
		}
		d.Reset(in)
		x := d.Float()
		if d.End() {
			var want float64
			if err := json.Unmarshal(in, &want); err != nil || x != want {
				t.Fatalf("Float of %q is %v; encoding/json: %v, %v", in, x, want, err)
			}
			if got, want := AppendFloat(nil, x), marshal(t, x); !bytes.Equal(got, want) {
				t.Fatalf("AppendFloat(%v) = %s, json.Marshal %s", x, got, want)
			}
		}
		if got, want := AppendString(nil, string(in)), marshal(t, string(in)); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s, json.Marshal %s", in, got, want)
		}
		var enc bytes.Buffer
		e := json.NewEncoder(&enc)
		e.SetEscapeHTML(false)
		if e.Encode(string(in)) != nil || !bytes.Equal(AppendUnescaped(nil, string(in)), bytes.TrimSuffix(enc.Bytes(), []byte("\n"))) {
			t.Fatalf("AppendUnescaped(%q) = %s, json.Encoder without HTML escaping %s", in, AppendUnescaped(nil, string(in)), enc.Bytes())
		}
		var fromText, fromString string
		if json.Unmarshal(AppendText(nil, string(in)), &fromText) != nil || json.Unmarshal(AppendString(nil, string(in)), &fromString) != nil || fromText != fromString {
			t.Fatalf("AppendText(%q) and AppendString differ in meaning: %q, %q", in, fromText, fromString)
		}
		if json.Valid(in) {
			if got, want := AppendRaw(nil, in), marshal(t, json.RawMessage(in)); !bytes.Equal(got, want) {
				t.Fatalf("AppendRaw(%q) = %s, json.Marshal %s", in, got, want)
			}
		}
	})
}

func TestAppendFloat(t *testing.T) {
	for _, f := range []float64{0, 1, -1, 0.1, 1e-7, 1e-6, 1e20, 1e21, 123456.789, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		if got, want := AppendFloat(nil, f), marshal(t, f); !bytes.Equal(got, want) {
			t.Errorf("AppendFloat(%v) = %s, json.Marshal %s", f, got, want)
		}
	}
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func depth(b []byte) int {
	n, deepest := 0, 0
	for _, c := range b {
		switch c {
		case '[', '{':
			n++
			deepest = max(deepest, n)
		case ']', '}':
			n--
		}
	}
	return deepest
}

// TestSpecial8: the lowest byte special8 marks in a word is the first
// that is not plain, for every byte in every position, and for words
// mixing bytes on either side of each bound.
func TestSpecial8(t *testing.T) {
	check := func(w [8]byte) {
		want := 8
		for i, c := range w {
			if !plain[c] {
				want = i
				break
			}
		}
		m := special8(binary.LittleEndian.Uint64(w[:]))
		if got := bits.TrailingZeros64(m) >> 3; got != want {
			t.Fatalf("special8(%q) marks byte %d first, want %d", w, got, want)
		}
	}
	for c := 0; c < 256; c++ {
		for pos := 0; pos < 8; pos++ {
			w := [8]byte{'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'}
			w[pos] = byte(c)
			check(w)
		}
	}
	edges := []byte{0x00, 0x01, 0x1f, 0x20, 0x21, '"', '#', '[', '\\', ']', 0x7e, 0x7f, 0x80, 0x81, 0xff}
	for _, a := range edges {
		for _, b := range edges {
			for pos := 0; pos < 7; pos++ {
				w := [8]byte{'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x'}
				w[pos], w[pos+1] = a, b
				check(w)
			}
		}
	}
}

// TestAppendStringWords: appendString writes strings whose words mix
// bytes on either side of every bound of the bytes it writes as they
// are as it writes them one byte at a time, in both modes.
func TestAppendStringWords(t *testing.T) {
	edges := []byte{0x00, 0x08, 0x0c, 0x1f, 0x20, 0x21, '"', '%', '&', '\'', ';', '<', '=', '>', '?', '[', '\\', ']', 0x7f, 0x80, 0xe2, 0xff}
	var cases []string
	for c := 0; c < 256; c++ {
		for pos := 0; pos < 8; pos++ {
			w := []byte("abcdefghijklmnop")
			w[pos] = byte(c)
			cases = append(cases, string(w))
		}
	}
	for _, a := range edges {
		for _, b := range edges {
			for pos := 0; pos < 7; pos++ {
				w := []byte("xxxxxxxxyyyyyyyy")
				w[pos], w[pos+1] = a, b
				cases = append(cases, string(w))
			}
		}
	}
	cases = append(cases, "\xe2\x80\xa8 and \xe2\x80\xa9 after eight bytes: \xe2\x80\xa8")
	for _, mode := range [][2]bool{{true, true}, {false, false}, {false, true}} {
		html, short := mode[0], mode[1]
		safe := &textSafe
		if html {
			safe = &htmlSafe
		}
		for _, s := range cases {
			// The same string, each byte in a word of its own: written
			// one byte at a time.
			var want []byte
			for i := 0; i < len(s); {
				n := 1
				if !safe[s[i]] && s[i] >= 0x80 {
					_, n = utf8.DecodeRuneInString(s[i:])
				}
				w := appendString(nil, s[i:i+n], html, short)
				want = append(want, w[1:len(w)-1]...)
				i += n
			}
			if got := appendString(nil, s, html, short); string(got) != `"`+string(want)+`"` {
				t.Fatalf("appendString(%q, %v, %v) = %s, want %q", s, html, short, got, want)
			}
		}
	}
}

// TestAppendCompactWords: appendCompact compacts texts whose words mix,
// inside and outside strings, white space, quotes, escapes and the bytes
// it escapes, as json.Compact and json.Marshal do.
func TestAppendCompactWords(t *testing.T) {
	pieces := []string{" ", "\t", "\n  ", "        ", `"a b"`, `"<>&"`, `"\"\\"`, "\"\u2028\xe2\x80\xa9\xe2\x82\xac\"", `1`, `{}`, `[]`, `"        x"`, `"é"`}
	for _, a := range pieces {
		for _, b := range pieces {
			for _, c := range pieces {
				text := "[ " + a + " ," + b + "," + c + "  ]"
				if strings.TrimSpace(a) == "" || strings.TrimSpace(b) == "" || strings.TrimSpace(c) == "" {
					continue // not valid JSON
				}
				var want bytes.Buffer
				if err := json.Compact(&want, []byte(text)); err != nil {
					t.Fatalf("%q: %v", text, err)
				}
				if got := AppendCompact(nil, []byte(text)); string(got) != want.String() {
					t.Fatalf("AppendCompact(%q) = %q, want %q", text, got, want.String())
				}
				marshaled, err := json.Marshal(json.RawMessage(text))
				if err != nil {
					t.Fatalf("%q: %v", text, err)
				}
				if got := AppendRaw(nil, []byte(text)); string(got) != string(marshaled) {
					t.Fatalf("AppendRaw(%q) = %q, want %q", text, got, marshaled)
				}
			}
		}
	}
}

// TestBackslash: backslash finds the first backslash wherever it stands
// in a word, or reports none.
func TestBackslash(t *testing.T) {
	for n := 0; n <= 20; n++ {
		for at := 0; at <= n; at++ {
			s := bytes.Repeat([]byte{'a'}, n)
			if at < n {
				s[at] = '\\'
				if at+1 < n {
					s[at+1] = '\\'
				}
			}
			if got := backslash(s); got != at {
				t.Fatalf("backslash(%q) = %d, want %d", s, got, at)
			}
		}
	}
}

// TestAppendStringMap: maps written as json.Marshal writes them, nil,
// empty, larger than the keys' stack array, and with keys and values to
// escape.
func TestAppendStringMap(t *testing.T) {
	big := map[string]string{}
	for i := range 20 {
		big[string(rune('a'+i))+"<k>"] = strings.Repeat("v&", i)
	}
	for _, m := range []map[string]string{nil, {}, {"team": "a", "env": "prod"}, {"\u2028\"": "<\xff>"}, big} {
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendStringMap([]byte("x"), m); string(got) != "x"+string(want) {
			t.Errorf("AppendStringMap(%q) = %s, want x%s", m, got, want)
		}
	}
}
