package bedrock_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelgateway/gateway/bedrock"
)

// frame encodes one event stream message whose headers are the string
// headers given as name, value pairs, in order, computing both CRCs.
func frame(payload string, headers ...string) []byte {
	var h []byte
	for i := 0; i+1 < len(headers); i += 2 {
		h = append(h, byte(len(headers[i])))
		h = append(h, headers[i]...)
		h = append(h, 7) // string
		h = binary.BigEndian.AppendUint16(h, uint16(len(headers[i+1])))
		h = append(h, headers[i+1]...)
	}
	return rawFrame(h, payload)
}

// rawFrame encodes a message around a header block given as bytes.
func rawFrame(headerBlock []byte, payload string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(12+len(headerBlock)+len(payload)+4))
	b = binary.BigEndian.AppendUint32(b, uint32(len(headerBlock)))
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	b = append(b, headerBlock...)
	b = append(b, payload...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

// event encodes a ConverseStream event as Bedrock sends it.
func event(typ, payload string) []byte {
	return frame(payload, ":event-type", typ, ":content-type", "application/json", ":message-type", "event")
}

func unhex(s string) []byte {
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		panic(err)
	}
	return b
}

// The shared test vectors of AWS's event stream codecs (smithy-lang's
// eventstream-codec TestVectors fixture), as hex.
const (
	vectorAllHeaders = `000000cc000000af0fae64ca0a6576656e742d74797065040000a00c0c636f6e74656e742d747970650700106170706c69636174696f6e2f6a736f6e
		0a626f6f6c2066616c73650109626f6f6c207472756500046279746502cf08627974652062756606001449276d2061206c6974746c6520746561706f7421
		0974696d657374616d70080000000000845fed05696e74313603002a05696e7436340500000000028757b20475756964090102030405060708090a0b0c0d0e0f10
		7b27666f6f273a27626172277daba5f10c`
	vectorEmpty           = `000000100000000005c248eb7d98c8ff`
	vectorInt32Header     = `0000002d0000001041c424b80a6576656e742d74797065040000a00c7b27666f6f273a27626172277d36f480a0`
	vectorNoHeaders       = `0000001d00000000fd528c5a7b27666f6f273a27626172277dc3653936`
	vectorOneStringHeader = `0000003d0000002007fd83960c636f6e74656e742d747970650700106170706c69636174696f6e2f6a736f6e7b27666f6f273a27626172277d8d9c08b1`
	vectorBadHeaders      = `0000003d0000002007fd83960c636f6e74656e742d747970650700106170706c69636174696f6e2f6a736f6e7b61666f6f273a27626172277d8d9c08b1`
	vectorBadHeaderLen    = `0000003d0000002107fd83960c636f6e74656e742d747970650700106170706c69636174696f6e2f6a736f6e7b27666f6f273a27626172277d8d9c08b1`
	vectorBadLength       = `0000003e0000002007fd83960c636f6e74656e742d747970650700106170706c69636174696f6e2f6a736f6e7b27666f6f273a27626172277d8d9c08b1`
	vectorBadPayload      = `0000001d00000000fd528c5a5b27666f6f273a27626172277dc3653936`
)

// titanStream is a real ConverseStream answer of Amazon Titan, as
// captured in the tests of the paws R SDK: messageStart, one text delta,
// contentBlockStop, messageStop and metadata, each padded with Bedrock's
// "p" member.
const titanStream = `
000000aa00000052dad068860b3a6576656e742d7479706507000c6d65737361676553746172740d3a636f6e74656e742d747970650700106170706c
69636174696f6e2f6a736f6e0d3a6d6573736167652d747970650700056576656e747b2270223a226162636465666768696a6b6c6d6e6f7071727374
75767778797a4142434445464748494a4b4c4d4e4f50515253222c22726f6c65223a22617373697374616e74227d72033e7b0000015d000000579bf2
c3e10b3a6576656e742d74797065070011636f6e74656e74426c6f636b44656c74610d3a636f6e74656e742d747970650700106170706c6963617469
6f6e2f6a736f6e0d3a6d6573736167652d747970650700056576656e747b22636f6e74656e74426c6f636b496e646578223a302c2264656c7461223a
7b2274657874223a224920616d20416d617a6f6e20546974616e2c2061206c61726765206c616e6775616765206d6f64656c206275696c7420627920
4157532e2049207761732064657369676e656420746f2061737369737420796f752077697468207461736b73206f7220616e7377657220616e792071
75657374696f6e7320796f75206d617920686176652e20486f77206d617920492068656c7020796f753f227d2c2270223a226162636465666768696a
6b6c6d6e6f707172737475767778797a4142434445464748494a4b4c4d4e4f5051227d08310d02000000b70000005645cdffac0b3a6576656e742d74
797065070010636f6e74656e74426c6f636b53746f700d3a636f6e74656e742d747970650700106170706c69636174696f6e2f6a736f6e0d3a6d6573
736167652d747970650700056576656e747b22636f6e74656e74426c6f636b496e646578223a302c2270223a226162636465666768696a6b6c6d6e6f
707172737475767778797a4142434445464748494a4b4c4d4e4f50515253545556575859227d4cb1d491000000b4000000519c0910df0b3a6576656e
742d7479706507000b6d65737361676553746f700d3a636f6e74656e742d747970650700106170706c69636174696f6e2f6a736f6e0d3a6d65737361
67652d747970650700056576656e747b2270223a226162636465666768696a6b6c6d6e6f707172737475767778797a4142434445464748494a4b4c4d
4e4f50515253545556575859222c2273746f70526561736f6e223a22656e645f7475726e227dbe580ac7000000fe0000004e03425dc20b3a6576656e
742d747970650700086d657461646174610d3a636f6e74656e742d747970650700106170706c69636174696f6e2f6a736f6e0d3a6d6573736167652d
747970650700056576656e747b226d657472696373223a7b226c6174656e63794d73223a313432307d2c2270223a22616263222c227573616765223a
7b22636163686552656164496e707574546f6b656e436f756e74223a302c2263616368655772697465496e707574546f6b656e436f756e74223a302c
22696e707574546f6b656e73223a382c226f7574707574546f6b656e73223a33392c22746f74616c546f6b656e73223a34377d7dffaa2cb4
`

func TestEventStreamVectors(t *testing.T) {
	const foo = "{'foo':'bar'}"
	jsonType := map[string]string{"content-type": "application/json"}
	cases := []struct {
		name    string
		hex     string
		headers map[string]string // the string headers
		payload string
		err     error
	}{
		{"all header types", vectorAllHeaders, jsonType, foo, nil},
		{"empty message", vectorEmpty, map[string]string{}, "", nil},
		{"int32 header", vectorInt32Header, map[string]string{}, foo, nil},
		{"no headers", vectorNoHeaders, map[string]string{}, foo, nil},
		{"one string header", vectorOneStringHeader, jsonType, foo, nil},
		{"corrupted headers", vectorBadHeaders, nil, "", bedrock.ErrEventCRC},
		{"corrupted header length", vectorBadHeaderLen, nil, "", bedrock.ErrEventCRC},
		{"corrupted length", vectorBadLength, nil, "", bedrock.ErrEventCRC},
		{"corrupted payload", vectorBadPayload, nil, "", bedrock.ErrEventCRC},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := bedrock.ReadEvents(bytes.NewReader(unhex(c.hex)), 1<<20)
			if c.err != nil {
				if !errors.Is(err, c.err) || len(got) != 0 {
					t.Fatalf("got %d messages and %v, want %v", len(got), err, c.err)
				}
				return
			}
			want := []bedrock.Event{{Headers: c.headers, Payload: []byte(c.payload)}}
			if err != io.EOF || !cmp.Equal(want, got) {
				t.Errorf("got %+v, %v; want %+v, EOF", got, err, want)
			}
		})
	}
	// The test encoder writes what AWS's codecs write.
	if got := frame("{'foo':'bar'}", "content-type", "application/json"); !bytes.Equal(got, unhex(vectorOneStringHeader)) {
		t.Errorf("frame() = %x, want the codecs' vector", got)
	}
}

// TestEventStreamRealCapture decodes a ConverseStream answer Bedrock sent,
// CRCs and all.
func TestEventStreamRealCapture(t *testing.T) {
	got, err := bedrock.ReadEvents(bytes.NewReader(unhex(titanStream)), 1<<20)
	if err != io.EOF {
		t.Fatalf("error %v after %d messages, want io.EOF", err, len(got))
	}
	var types []string
	for _, m := range got {
		if m.Headers[":message-type"] != "event" || m.Headers[":content-type"] != "application/json" {
			t.Errorf("headers %v", m.Headers)
		}
		types = append(types, m.Headers[":event-type"])
	}
	want := []string{"messageStart", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata"}
	if d := cmp.Diff(want, types); d != "" {
		t.Errorf("event types (-want +got):\n%s", d)
	}
	if len(got) == 5 && !strings.Contains(string(got[4].Payload), `"inputTokens":8,"outputTokens":39,"totalTokens":47`) {
		t.Errorf("metadata payload %s", got[4].Payload)
	}
}

// TestEventStreamDecoder: every cut is io.ErrUnexpectedEOF unless it falls
// between messages, every changed byte fails a CRC, and lengths and
// headers out of bounds are refused without reading on.
func TestEventStreamDecoder(t *testing.T) {
	one := event("messageStart", `{"role":"assistant"}`)
	two := frame(`{"message":"slow down"}`, ":message-type", "exception", ":exception-type", "throttlingException")
	stream := append(append([]byte{}, one...), two...)

	got, err := bedrock.ReadEvents(bytes.NewReader(stream), 1<<10)
	want := []bedrock.Event{
		{Headers: map[string]string{":event-type": "messageStart", ":content-type": "application/json", ":message-type": "event"}, Payload: []byte(`{"role":"assistant"}`)},
		{Headers: map[string]string{":message-type": "exception", ":exception-type": "throttlingException"}, Payload: []byte(`{"message":"slow down"}`)},
	}
	if err != io.EOF || !cmp.Equal(want, got) {
		t.Fatalf("got %+v, %v", got, err)
	}

	for n := 0; n < len(stream); n++ {
		got, err := bedrock.ReadEvents(bytes.NewReader(stream[:n]), 1<<10)
		switch n {
		case 0, len(one):
			if err != io.EOF {
				t.Errorf("cut at %d, between messages: %v, want io.EOF", n, err)
			}
		default:
			if err != io.ErrUnexpectedEOF {
				t.Errorf("cut at %d: %v after %d messages, want io.ErrUnexpectedEOF", n, err, len(got))
			}
		}
	}
	for i := range stream {
		changed := append([]byte{}, stream...)
		changed[i] ^= 0x20
		if _, err := bedrock.ReadEvents(bytes.NewReader(changed), 1<<10); !errors.Is(err, bedrock.ErrEventCRC) {
			t.Errorf("byte %d changed: %v, want the CRC error", i, err)
		}
	}

	prelude := func(total, headers uint32) []byte {
		b := binary.BigEndian.AppendUint32(nil, total)
		b = binary.BigEndian.AppendUint32(b, headers)
		return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	}
	header := func(name string, typ byte, value ...byte) []byte {
		return append(append(append([]byte{byte(len(name))}, name...), typ), value...)
	}
	for _, c := range []struct {
		name string
		msg  []byte
	}{
		{"total length of 4 GiB", prelude(1<<32-1, 0)},
		{"total length above the limit", prelude(1<<10+1, 0)},
		{"total length below the prelude and CRC", prelude(15, 0)},
		{"headers longer than the message", prelude(40, 25)},
		{"headers above 128 KiB", prelude(1<<10, 128<<10+1)},
		{"unknown header type", rawFrame(header("x", 10), "")},
		{"empty header name", rawFrame(header("", 7, 0, 0), "")},
		{"string longer than the header block", rawFrame(header("x", 7, 0, 9, 'a'), "")},
		{"int64 cut short", rawFrame(header("x", 5, 1, 2, 3), "")},
		{"no string length", rawFrame(header("x", 7, 0), "")},
	} {
		// Whatever follows the message must not be read: the reader
		// fails the test if it is.
		r := io.MultiReader(bytes.NewReader(c.msg), failReader{t})
		if _, err := bedrock.ReadEvents(r, 1<<10); !errors.Is(err, bedrock.ErrEventFraming) {
			t.Errorf("%s: %v, want the framing error", c.name, err)
		}
	}
}

type failReader struct{ t *testing.T }

func (f failReader) Read([]byte) (int, error) {
	f.t.Helper()
	f.t.Error("the decoder read past a message it should have refused")
	return 0, io.EOF
}

// FuzzEventStream feeds arbitrary bytes to the decoder and to the
// translation of ConverseStream into OpenAI chunks: neither may panic, no
// message may exceed the limit, and a translation that ends without an
// error ends with [DONE] or an error event.
func FuzzEventStream(f *testing.F) {
	f.Add(unhex(titanStream))
	for _, v := range []string{vectorAllHeaders, vectorEmpty, vectorInt32Header, vectorOneStringHeader, vectorBadPayload} {
		f.Add(unhex(v))
	}
	f.Add(converseEvents(true))
	f.Add(converseEvents(false)[:100])
	f.Add(frame(`{"message":"x"}`, ":message-type", "exception", ":exception-type", "validationException"))
	f.Add(frame("", ":message-type", "error", ":error-code", "InternalFailure", ":error-message", "boom"))
	f.Add([]byte("\x00{\"role\":\"assistant\"}\xff\x01{\"contentBlockIndex\":1,\"start\":{\"toolUse\":{\"toolUseId\":\"t\",\"name\":\"n\"}}}" +
		"\xff\x02{\"contentBlockIndex\":1,\"delta\":{\"toolUse\":{\"input\":\"{}\"}}}\xff\x02{\"contentBlockIndex\":0,\"delta\":{\"text\":\"hi\"}}" +
		"\xff\x04{\"stopReason\":\"end_turn\"}\xff\x05{\"usage\":{\"inputTokens\":1}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit = 1 << 12
		msgs, err := bedrock.ReadEvents(bytes.NewReader(data), limit)
		if err == nil {
			t.Fatal("ReadEvents ended without an error")
		}
		for _, m := range msgs {
			if len(m.Payload) > limit {
				t.Fatalf("a payload of %d bytes passed the %d-byte limit", len(m.Payload), limit)
			}
		}
		translate := func(stream []byte) {
			out, err := io.ReadAll(io.LimitReader(bedrock.ConverseStream(io.NopCloser(bytes.NewReader(stream))), 64<<20))
			if err == nil && !bytes.HasSuffix(out, []byte("data: [DONE]\n\n")) && !bytes.Contains(out, []byte(`data: {"error":`)) {
				t.Fatalf("the translation ended cleanly without [DONE] or an error event: %q", out)
			}
		}
		translate(data)
		// Random bytes seldom pass a CRC: the same bytes are also framed
		// as valid messages, split at 0xff, each piece's first byte
		// choosing the event and the rest its payload, so that the
		// translation of events gets fuzzed too.
		var framed []byte
		for _, piece := range bytes.Split(data, []byte{0xff}) {
			if len(piece) == 0 {
				continue
			}
			switch k := int(piece[0]) % (len(fuzzEvents) + 2); k {
			case len(fuzzEvents):
				framed = append(framed, frame(string(piece[1:]), ":message-type", "exception", ":exception-type", "throttlingException")...)
			case len(fuzzEvents) + 1:
				framed = append(framed, frame("", ":message-type", "error", ":error-code", "x", ":error-message", string(piece[1:]))...)
			default:
				framed = append(framed, event(fuzzEvents[k], string(piece[1:]))...)
			}
		}
		translate(framed)
	})
}

// fuzzEvents are the event types FuzzEventStream frames.
var fuzzEvents = []string{"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata"}
