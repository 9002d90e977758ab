package chat

import "io"

// Stream is the body of a translated streamed answer: an io.ReadCloser
// whose bytes are the OpenAI events that next makes from the provider's
// own stream, one call at a time. Each Read returns at most the events of
// one call, so that a proxy flushing after every write sends each event
// as soon as the provider's arrives.
type Stream struct {
	next func() ([]byte, error)
	src  io.Closer
	buf  []byte
	err  error
}

// NewStream returns a Stream over src. next returns the next events'
// bytes (possibly none) and an error; io.EOF ends the stream cleanly,
// after the bytes returned with it.
func NewStream(src io.Closer, next func() ([]byte, error)) *Stream {
	return &Stream{next: next, src: src}
}

// Read implements io.Reader.
func (s *Stream) Read(p []byte) (int, error) {
	for len(s.buf) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		s.buf, s.err = s.next()
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	return n, nil
}

// Close closes the provider's stream.
func (s *Stream) Close() error { return s.src.Close() }
