package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelgateway/gateway"
)

// Request smuggling (RFC 9112 §6.1, §11.2). A request that carries both
// Content-Length and Transfer-Encoding can be framed two ways: a proxy in
// front that honours Content-Length and a server that honours
// Transfer-Encoding disagree on where it ends, and the rest of its body is
// then served as a second request, outside whatever the proxy checked.
// net/http honours Transfer-Encoding, deletes both headers before the
// handler runs, and keeps the connection open, so the handler cannot see
// that the request was ambiguous. The server therefore reads the framing off
// the connection itself: framingConn follows the bytes net/http reads,
// header block by header block, and the handler installed by
// refuseAmbiguousFraming answers a request whose header block carried both
// (or carried Transfer-Encoding in HTTP/1.0, which §6.1 also calls faulty)
// with 400 and closes the connection, so nothing after it is served.

// framingListener wraps every accepted connection in a framingConn.
type framingListener struct{ net.Listener }

func (l framingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &framingConn{Conn: c}, nil
}

// framingConnKey is the context key under which connContext stores a
// request's *framingConn.
type framingConnKey struct{}

// connContext is the http.Server's ConnContext: it makes the connection's
// framingConn reachable from its requests.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if fc, ok := c.(*framingConn); ok {
		return context.WithValue(ctx, framingConnKey{}, fc)
	}
	return ctx
}

// maxPendingBlocks bounds the verdicts a connection keeps for header blocks
// whose requests have not reached the handler yet. net/http reads at most a
// few KiB ahead of the request it serves, so a client that pipelines more
// blocks than this is sending something the parser cannot follow.
const maxPendingBlocks = 1024

// framingConn is a net.Conn that parses the HTTP/1.x framing of what is
// read from it, without changing a byte, and keeps for each request header
// block a verdict: whether its framing is ambiguous. net/http serves the
// requests of a connection one after the other, in the order of their header
// blocks, and only once it has read a block, so the n-th request of the
// connection takes the n-th verdict (see claim).
//
// Read is called by net/http from one goroutine at a time; claim may be
// called concurrently with it.
type framingConn struct {
	net.Conn
	p framingParser // used only by Read

	mu       sync.Mutex // guards verdicts
	verdicts []bool     // of the blocks parsed and not claimed yet, oldest first

	// deadlineMoved is when a request last moved the connection's write
	// deadline (see stallWriter); used only by the request being served.
	deadlineMoved time.Time
}

func (c *framingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && !c.p.lost {
		c.p.feed(b[:n], c.record)
	}
	return n, err
}

// CloseWrite half-closes the connection when the underlying one can (TCP),
// so that net/http's closeWriteAndWait still sends a FIN before closing a
// connection whose request it did not read to the end.
func (c *framingConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *framingConn) record(ambiguous bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.verdicts) == maxPendingBlocks {
		c.p.lost = true // record runs inside feed, on Read's goroutine
		return
	}
	c.verdicts = append(c.verdicts, ambiguous)
}

// claim returns the verdict on the header block of the request being
// served: ambiguous reports a block with both Content-Length and
// Transfer-Encoding, and ok is false when the parser no longer follows the
// connection (it met bytes net/http would have refused, or a connection
// taken over after an upgrade), so nothing is known.
func (c *framingConn) claim() (ambiguous, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.verdicts) == 0 {
		return false, false
	}
	ambiguous = c.verdicts[0]
	c.verdicts = c.verdicts[1:]
	return ambiguous, true
}

// refuseAmbiguousFraming returns a handler that answers a request whose
// framing was ambiguous with 400 and closes its connection, and serves
// every other request with next. A request whose framing is unknown (the
// connection is not a framingConn's, or the parser lost track of it) is
// served, with its connection closed after the response, so that no later
// request is read from a stream nobody checked.
func refuseAmbiguousFraming(next http.Handler) http.Handler {
	refuse := gateway.Trace(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gateway.WriteError(w, r, &gateway.Error{
			Status:  http.StatusBadRequest,
			Type:    gateway.TypeInvalidRequest,
			Code:    gateway.CodeInvalidHeader,
			Param:   "Transfer-Encoding",
			Message: "Transfer-Encoding: not allowed together with Content-Length, nor in HTTP/1.0",
		})
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fc, _ := r.Context().Value(framingConnKey{}).(*framingConn)
		if fc != nil && r.ProtoMajor == 1 {
			ambiguous, ok := fc.claim()
			if ambiguous || !ok {
				// Set before anything else runs, so that every answer,
				// Trace's 400 for a bad trace id included, closes.
				w.Header().Set("Connection", "close")
			}
			if ambiguous {
				refuse.ServeHTTP(w, r)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// framingParser follows the framing of HTTP/1.x requests as net/http's
// server reads them: a request line, header lines up to an empty line, then
// a body of Content-Length bytes or in chunks. It is lenient where net/http
// is strict, since net/http closes the connection on anything it refuses;
// what it must never do is end a message somewhere net/http would not.
// On anything it cannot follow it stops (lost) for good.
type framingParser struct {
	state  framingState
	line   []byte // the line being read, without its '\n'
	remain uint64 // bytes left in a Content-Length body or a chunk

	// The header block being read.
	pre11      bool // HTTP/1.0 or older, whose Transfer-Encoding net/http ignores
	teLines    int
	te         []byte
	clLines    int
	cl         []byte
	clMismatch bool
	last       *[]byte // value the next continuation line extends: &te, &cl or nil

	lost bool
}

type framingState int

const (
	stRequestLine framingState = iota
	stHeader
	stBody
	stChunkSize
	stChunkData
	stChunkEnd // the CRLF after a chunk's data
	stTrailer
)

// maxFramingLine bounds one line the parser keeps. It is more than
// net/http accepts for a whole header block (MaxHeaderBytes plus 4 KiB),
// so a longer line is one net/http refuses.
const maxFramingLine = 2*maxHeaderBytes + 4096

// feed parses p, calling record once at the end of every request header
// block with the block's verdict.
func (p *framingParser) feed(b []byte, record func(ambiguous bool)) {
	for len(b) > 0 && !p.lost {
		switch p.state {
		case stBody, stChunkData, stChunkEnd:
			n := uint64(len(b))
			if n > p.remain {
				n = p.remain
			}
			p.remain -= n
			b = b[n:]
			if p.remain > 0 {
				return
			}
			switch p.state {
			case stBody:
				p.state = stRequestLine
			case stChunkData:
				p.state, p.remain = stChunkEnd, 2
			case stChunkEnd:
				p.state = stChunkSize
			}
			continue
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			p.appendLine(b)
			return
		}
		p.appendLine(b[:i])
		b = b[i+1:]
		if p.lost {
			return
		}
		line := bytes.TrimSuffix(p.line, []byte("\r"))
		p.endLine(line, record)
		p.line = p.line[:0]
	}
}

func (p *framingParser) appendLine(b []byte) {
	if len(p.line)+len(b) > maxFramingLine {
		p.lost = true
		return
	}
	p.line = append(p.line, b...)
}

// endLine handles one complete line, stripped of its line ending.
func (p *framingParser) endLine(line []byte, record func(bool)) {
	switch p.state {
	case stRequestLine:
		if len(line) == 0 {
			return // net/http skips stray line ends after a POST body
		}
		_, rest, ok1 := bytes.Cut(line, []byte(" "))
		_, proto, ok2 := bytes.Cut(rest, []byte(" "))
		major, minor, ok3 := http.ParseHTTPVersion(string(proto))
		if !ok1 || !ok2 || !ok3 {
			p.lost = true
			return
		}
		p.state = stHeader
		p.pre11 = major < 1 || major == 1 && minor < 1
		p.teLines, p.te = 0, p.te[:0]
		p.clLines, p.cl, p.clMismatch = 0, p.cl[:0], false
		p.last = nil
	case stHeader:
		if len(line) == 0 {
			p.endHeader(record)
			return
		}
		if line[0] == ' ' || line[0] == '\t' {
			// A folded line continues the previous header's value.
			if p.last != nil {
				*p.last = append(append(*p.last, ' '), bytes.Trim(line, " \t")...)
			}
			// endHeader trims the value again, as net/http does.
			return
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			p.lost = true
			return
		}
		value = bytes.Trim(value, " \t")
		p.last = nil
		switch {
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			p.teLines++
			p.te = append(p.te[:0], value...)
			p.last = &p.te
		case bytes.EqualFold(name, []byte("Content-Length")):
			if p.clLines > 0 && !bytes.Equal(p.cl, value) {
				p.clMismatch = true
			}
			p.clLines++
			p.cl = append(p.cl[:0], value...)
			p.last = &p.cl
		}
	case stChunkSize:
		size, _, _ := bytes.Cut(bytes.TrimRight(line, " \t"), []byte(";"))
		n, err := strconv.ParseUint(string(bytes.TrimRight(size, " \t")), 16, 64)
		if err != nil {
			p.lost = true
			return
		}
		if n == 0 {
			p.state = stTrailer
			return
		}
		p.state, p.remain = stChunkData, n
	case stTrailer:
		if len(line) == 0 {
			p.state = stRequestLine
		}
	}
}

// endHeader records the verdict on the header block just read and sets
// the parser up for its body, framed as net/http frames it.
func (p *framingParser) endHeader(record func(bool)) {
	te := p.teLines > 0
	record(te && (p.clLines > 0 || p.pre11))
	p.te, p.cl = bytes.Trim(p.te, " \t"), bytes.Trim(p.cl, " \t")
	switch {
	case te && !p.pre11:
		// net/http answers 501 and closes unless the one value is chunked.
		if p.teLines != 1 || !bytes.EqualFold(p.te, []byte("chunked")) {
			p.lost = true
			return
		}
		p.state = stChunkSize
	case p.clLines > 0:
		n, err := strconv.ParseUint(string(p.cl), 10, 63)
		if err != nil || p.clMismatch {
			p.lost = true
			return
		}
		p.state, p.remain = stBody, n
		if n == 0 {
			p.state = stRequestLine
		}
	default:
		p.state = stRequestLine
	}
}
