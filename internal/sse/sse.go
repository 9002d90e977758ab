// Package sse reads server-sent events (the text/event-stream format of
// the HTML standard) as providers stream them.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// ErrEventTooLong is returned for an event longer than the reader's limit.
var ErrEventTooLong = errors.New("sse: event too long")

// Reader reads events one by one. Its zero value is not usable: use
// NewReader.
type Reader struct {
	r    *bufio.Reader
	max  int
	data []byte
}

// NewReader returns a Reader of r whose events may hold at most max bytes
// of data.
func NewReader(r io.Reader, max int) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 4096), max: max}
}

// Next returns the next event's type (the "event" field, "" when absent)
// and data (the "data" lines joined by newlines). Comments and events
// without data are skipped. At the end of the stream it returns io.EOF;
// an event cut off by the end is io.ErrUnexpectedEOF. The data is valid
// until the next call.
func (s *Reader) Next() (event string, data []byte, err error) {
	s.data = s.data[:0]
	hasData := false
	for {
		line, err := s.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: gather it.
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				if len(long) > s.max+16 {
					return "", nil, ErrEventTooLong
				}
				line, err = s.r.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil && (err != io.EOF || len(line) == 0) {
			if err == io.EOF && (hasData || event != "") {
				return "", nil, io.ErrUnexpectedEOF
			}
			return "", nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if hasData {
				return event, s.data, nil
			}
			event = ""
			if err == io.EOF {
				return "", nil, io.EOF
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			event = string(value)
		case "data":
			if hasData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			hasData = true
			if len(s.data) > s.max {
				return "", nil, ErrEventTooLong
			}
		}
		if err == io.EOF {
			if hasData {
				return event, s.data, nil
			}
			return "", nil, io.EOF
		}
	}
}
