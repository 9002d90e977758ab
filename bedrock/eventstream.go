package bedrock

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
)

// Bounds of one application/vnd.amazon.eventstream message. AWS's own
// decoders take payloads of up to 16 MiB and headers of up to 128 KiB; a
// message announcing more is refused before its bytes are read.
const (
	maxEventHeaders = 128 << 10
	maxEventMessage = 16<<20 + maxEventHeaders + eventOverhead
	eventOverhead   = 16 // prelude (12 bytes) and message CRC (4)
)

// Event stream header value types, as the wire numbers them.
const (
	headerTrue      = 0
	headerFalse     = 1
	headerByte      = 2
	headerInt16     = 3
	headerInt32     = 4
	headerInt64     = 5
	headerBytes     = 6
	headerString    = 7
	headerTimestamp = 8
	headerUUID      = 9
)

// Errors of a malformed event stream. A stream cut in the middle of a
// message is io.ErrUnexpectedEOF.
var (
	errEventCRC     = errors.New("gateway: bedrock: event stream message fails its CRC check")
	errEventFraming = errors.New("gateway: bedrock: malformed event stream message")
)

// eventHeader is a string-typed header of an event stream message.
type eventHeader struct{ name, value string }

// eventMessage is one message of an event stream. Only its string-typed
// headers are kept (the other types are checked and skipped): Bedrock's
// :message-type, :event-type, :exception-type, :error-code,
// :error-message and :content-type are all strings.
type eventMessage struct {
	headers []eventHeader
	payload []byte
}

// header returns the value of the string header name, or "".
func (m *eventMessage) header(name string) string {
	for _, h := range m.headers {
		if h.name == name {
			return h.value
		}
	}
	return ""
}

// eventReader reads the messages of an application/vnd.amazon.eventstream
// body one by one, checking both CRCs of each. Its memory is bounded by
// the largest message it accepts, and grows only as bytes arrive, so a
// length that lies costs nothing until it is backed by data. It is not
// safe for concurrent use.
type eventReader struct {
	r   io.Reader
	max uint32
	buf bytes.Buffer
	msg eventMessage
}

// newEventReader returns a reader of r whose messages may be at most max
// bytes long, prelude and CRC included.
func newEventReader(r io.Reader, max int) *eventReader {
	if max < eventOverhead || max > maxEventMessage {
		max = maxEventMessage
	}
	return &eventReader{r: r, max: uint32(max)}
}

// Next returns the next message. At the end of the stream, between two
// messages, it returns io.EOF; a message cut off is io.ErrUnexpectedEOF,
// a bad CRC errEventCRC and a length or header out of bounds
// errEventFraming. The message, its payload included, is valid until the
// next call.
func (d *eventReader) Next() (*eventMessage, error) {
	var prelude [12]byte
	if _, err := io.ReadFull(d.r, prelude[:]); err != nil {
		return nil, err // io.EOF between messages, io.ErrUnexpectedEOF within one
	}
	total := binary.BigEndian.Uint32(prelude[0:4])
	hlen := binary.BigEndian.Uint32(prelude[4:8])
	if crc32.ChecksumIEEE(prelude[:8]) != binary.BigEndian.Uint32(prelude[8:12]) {
		return nil, errEventCRC
	}
	if total < eventOverhead || total > d.max || hlen > maxEventHeaders || hlen > total-eventOverhead {
		return nil, errEventFraming
	}
	d.buf.Reset()
	if _, err := io.CopyN(&d.buf, d.r, int64(total)-12); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	rest := d.buf.Bytes()
	end := len(rest) - 4
	sum := crc32.Update(crc32.ChecksumIEEE(prelude[:]), crc32.IEEETable, rest[:end])
	if sum != binary.BigEndian.Uint32(rest[end:]) {
		return nil, errEventCRC
	}
	headers, err := parseEventHeaders(d.msg.headers[:0], rest[:hlen])
	if err != nil {
		return nil, err
	}
	d.msg = eventMessage{headers: headers, payload: rest[hlen:end]}
	return &d.msg, nil
}

// parseEventHeaders appends the string headers of the header block b to
// dst: each header is a name length (one byte), the name, a value type
// (one byte) and the value, whose length the type gives or, for byte
// arrays and strings, a two-byte length before it.
func parseEventHeaders(dst []eventHeader, b []byte) ([]eventHeader, error) {
	for len(b) > 0 {
		n := int(b[0])
		b = b[1:]
		if n == 0 || len(b) < n+1 {
			return nil, errEventFraming
		}
		name, typ := b[:n], b[n]
		b = b[n+1:]
		var size int
		switch typ {
		case headerTrue, headerFalse:
		case headerByte:
			size = 1
		case headerInt16:
			size = 2
		case headerInt32:
			size = 4
		case headerInt64, headerTimestamp:
			size = 8
		case headerUUID:
			size = 16
		case headerBytes, headerString:
			if len(b) < 2 {
				return nil, errEventFraming
			}
			size = int(binary.BigEndian.Uint16(b))
			b = b[2:]
		default:
			return nil, errEventFraming
		}
		if len(b) < size {
			return nil, errEventFraming
		}
		if typ == headerString {
			dst = append(dst, eventHeader{name: string(name), value: string(b[:size])})
		}
		b = b[size:]
	}
	return dst, nil
}
