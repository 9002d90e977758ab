package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// rawExchange sends raw on a new connection to the server at base and
// returns the responses it reads, then whether the server closed the
// connection (rather than leave it open). The responses are read with
// http.ReadResponse, each body in full; reading stops at the first
// response that closes the connection, at the end of the stream, or after
// want responses (then the connection must still be open).
func rawExchange(t *testing.T, base, raw string, want int) (statuses []int, bodies []string, closed bool) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A deadline, not a delay: a server that neither answers nor closes
	// fails the test instead of hanging it.
	conn.SetDeadline(time.Now().Add(waitLimit))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	for len(statuses) < want {
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isReset(err) {
				return statuses, bodies, true
			}
			t.Fatalf("reading response %d: %v", len(statuses)+1, err)
		}
		body, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatalf("reading the body of response %d: %v", len(statuses)+1, err)
		}
		statuses = append(statuses, res.StatusCode)
		bodies = append(bodies, string(body))
		if res.Close {
			_, err := br.Peek(1)
			if err == nil {
				t.Fatalf("the server sent more after a response with Connection: close")
			}
			return statuses, bodies, true
		}
	}
	return statuses, bodies, false
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// TestRunRefusesAmbiguousFraming: a request with both Content-Length and
// Transfer-Encoding is answered 400 and its connection closed, so that a
// request hidden in its body (request smuggling) is never served. Requests
// framed one way only are still served, pipelined or not.
func TestRunRefusesAmbiguousFraming(t *testing.T) {
	t.Setenv("GATEWAY_API_KEY", "gw-framing")
	base, _, _, _ := runServer(t)

	smuggled := "GET /v1/batches HTTP/1.1\r\nHost: gw\r\nx-gateway-api-key: gw-framing\r\n\r\n"
	chunkedBody := "0\r\n\r\n" + smuggled // a proxy honouring Content-Length sees one request
	both := func(proto string, headers ...string) string {
		return "POST /v1/chat/completions " + proto + "\r\nHost: gw\r\nx-gateway-api-key: gw-framing\r\n" +
			strings.Join(headers, "\r\n") + "\r\n\r\n" + chunkedBody
	}
	cl := fmt.Sprintf("Content-Length: %d", len(chunkedBody))
	healthz := "GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n"

	for _, tc := range []struct {
		name     string
		raw      string
		want     []int // statuses, in order
		refused  bool  // the last response is the refusal
		closed   bool
		readMore int // responses to read at most
	}{
		{"Content-Length then Transfer-Encoding", both("HTTP/1.1", cl, "Transfer-Encoding: chunked"), []int{400}, true, true, 2},
		{"Transfer-Encoding then Content-Length", both("HTTP/1.1", "Transfer-Encoding: chunked", cl), []int{400}, true, true, 2},
		{"header names in lower case", both("HTTP/1.1", strings.ToLower(cl), "transfer-encoding: chunked"), []int{400}, true, true, 2},
		{"Transfer-Encoding in HTTP/1.0", "POST /v1/chat/completions HTTP/1.0\r\nHost: gw\r\nConnection: keep-alive\r\n" +
			"Transfer-Encoding: chunked\r\n\r\n" + smuggled, []int{400}, true, true, 2},
		{"with a malformed trace id", both("HTTP/1.1", cl, "Transfer-Encoding: chunked", "x-gateway-trace-id: "+strings.Repeat("t", 200)), []int{400}, false, true, 2},
		{"after a request served on the same connection", healthz + both("HTTP/1.1", cl, "Transfer-Encoding: chunked"), []int{200, 400}, true, true, 3},
		// Controls: the same bytes framed one way are two requests, both
		// served, on a connection that stays open.
		{"chunked alone", "POST /healthz HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n" + smuggled,
			[]int{405, 400}, false, false, 2},
		{"Content-Length alone", fmt.Sprintf("POST /healthz HTTP/1.1\r\nHost: gw\r\nContent-Length: %d\r\n\r\n%s", len(smuggled), smuggled) + healthz,
			[]int{405, 200}, false, false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			statuses, bodies, closed := rawExchange(t, base, tc.raw, tc.readMore)
			if !cmp.Equal(statuses, tc.want) || closed != tc.closed {
				t.Fatalf("statuses %v, connection closed %v; want %v and closed %v; bodies %q", statuses, closed, tc.want, tc.closed, bodies)
			}
			if !tc.refused {
				return
			}
			var e struct {
				Error map[string]*string `json:"error"`
			}
			last := bodies[len(bodies)-1]
			if err := json.Unmarshal([]byte(last), &e); err != nil {
				t.Fatalf("refusal body %q: %v", last, err)
			}
			keys := slices.Sorted(maps.Keys(e.Error))
			if diff := cmp.Diff([]string{"code", "message", "param", "type"}, keys); diff != "" {
				t.Errorf("refusal body %s: error keys (-want +got):\n%s", last, diff)
			}
			if c := e.Error["code"]; c == nil || *c != "invalid_header" {
				t.Errorf("refusal body %s: want code invalid_header", last)
			}
		})
	}
}

// parseFraming feeds raw to a framingParser, in pieces of size bytes (all
// at once when size is 0), and returns the verdicts and whether the parser
// lost track.
func parseFraming(raw string, size int) (verdicts []bool, lost bool) {
	var p framingParser
	b := []byte(raw)
	for len(b) > 0 && !p.lost {
		n := len(b)
		if size > 0 && size < n {
			n = size
		}
		p.feed(b[:n], func(a bool) { verdicts = append(verdicts, a) })
		b = b[n:]
	}
	return verdicts, p.lost
}

func TestFramingParser(t *testing.T) {
	for _, tc := range []struct {
		name     string
		raw      string
		verdicts []bool
		lost     bool
	}{
		{"GET without body", "GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n", []bool{false, false}, false},
		{"Content-Length body that looks like headers", "POST / HTTP/1.1\r\nContent-Length: 65\r\n\r\n" +
			"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n" + "GET / HTTP/1.1\r\n\r\n",
			[]bool{false, false}, false},
		{"chunked body with extensions and trailers", "POST / HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n" +
			"5 ;a=b\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n" + "GET / HTTP/1.1\r\n\r\n", []bool{false, false}, false},
		{"both headers", "POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", []bool{true}, false},
		{"Transfer-Encoding folded onto a second line", "POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n", []bool{true}, false},
		{"Transfer-Encoding in HTTP/1.0 is ignored for framing", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\n\r\n",
			[]bool{true, false}, false},
		{"bare line feeds", "GET / HTTP/1.1\nHost: a\n\nGET / HTTP/1.1\n\n", []bool{false, false}, false},
		{"stray line ends after a body", "POST / HTTP/1.1\r\nContent-Length: 1\r\n\r\nx\r\nGET / HTTP/1.1\r\n\r\n", []bool{false, false}, false},
		{"unsupported transfer coding", "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\nGET / HTTP/1.1\r\n\r\n", []bool{false}, true},
		{"two different Content-Lengths", "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx", []bool{false}, true},
		{"not HTTP", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, size := range []int{0, 1, 7} {
				verdicts, lost := parseFraming(tc.raw, size)
				if !cmp.Equal(verdicts, tc.verdicts) || lost != tc.lost {
					t.Errorf("in pieces of %d bytes: verdicts %v, lost %v; want %v, %v", size, verdicts, lost, tc.verdicts, tc.lost)
				}
			}
		})
	}
}

// FuzzFramingParser checks the parser against net/http's own reading of
// the same bytes: wherever net/http finds a request, the parser, unless
// it gave up before, ends a header block at the same byte and judges it
// by the header block as net/textproto reads it.
func FuzzFramingParser(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\n",
		"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding:\r\n chunked\r\n\r\n1;x\r\na\r\n0\r\nT: 1\r\n\r\n\r\nGET / HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\nA: b\n c\n\nGET / HTTP/0.9\r\nTransfer-Encoding: chunked\r\n\r\nGET / HTTP/1.1\r\n\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		// Where the parser ends each header block, feeding one byte at a
		// time, and its verdicts.
		var p framingParser
		var ends []int
		var verdicts []bool
		for i := 0; i < len(raw) && !p.lost; i++ {
			p.feed([]byte{raw[i]}, func(a bool) {
				ends = append(ends, i+1)
				verdicts = append(verdicts, a)
			})
		}

		src := strings.NewReader(raw)
		br := bufio.NewReaderSize(src, 64<<10)
		offset := func() int { return len(raw) - src.Len() - br.Buffered() }
		lastMethod := ""
		for k := 0; ; k++ {
			if lastMethod == "POST" {
				// net/http's server skips stray line ends after a POST.
				peek, _ := br.Peek(4)
				n := 0
				for n < len(peek) && (peek[n] == '\r' || peek[n] == '\n') {
					n++
				}
				br.Discard(n)
			}
			start := offset()
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			if k >= len(ends) {
				if !p.lost {
					t.Fatalf("net/http read request %d, ending at %d, the parser found only %d header blocks (ends %v)", k+1, offset(), len(ends), ends)
				}
				return
			}
			// ReadRequest reads no further than the header block before the
			// body is read.
			if end := offset(); end != ends[k] {
				t.Fatalf("request %d: net/http's header block ends at %d, the parser's at %d", k+1, end, ends[k])
			}
			tp := textproto.NewReader(bufio.NewReader(strings.NewReader(raw[start:])))
			line, _ := tp.ReadLine()
			h, _ := tp.ReadMIMEHeader()
			_, _, proto := cutTwice(line)
			major, minor, _ := http.ParseHTTPVersion(proto)
			pre11 := major < 1 || major == 1 && minor < 1
			want := len(h["Transfer-Encoding"]) > 0 && (len(h["Content-Length"]) > 0 || pre11)
			if verdicts[k] != want {
				t.Fatalf("request %d (%q): verdict %v, want %v", k+1, raw[start:ends[k]], verdicts[k], want)
			}
			if _, err := io.Copy(io.Discard, req.Body); err != nil {
				return
			}
			lastMethod = req.Method
		}
	})
}

func cutTwice(line string) (a, b, c string) {
	a, rest, _ := strings.Cut(line, " ")
	b, c, _ = strings.Cut(rest, " ")
	return a, b, c
}

// BenchmarkFramingParser prices following the framing of one request with a
// 1 KiB body, the work the server adds to every request it reads.
func BenchmarkFramingParser(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 1<<10)
	req := []byte(fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: bench\r\n"+
		"Content-Type: application/json\r\nx-gateway-api-key: gw-bench\r\nx-gateway-virtual-key: up\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
	var p framingParser
	record := func(bool) {}
	b.ReportAllocs()
	b.SetBytes(int64(len(req)))
	for b.Loop() {
		p.feed(req, record)
	}
}

// TestRefuseAmbiguousFramingUnknown: a request whose header block the
// parser did not follow is served, and its connection closed afterwards.
func TestRefuseAmbiguousFramingUnknown(t *testing.T) {
	served := false
	h := refuseAmbiguousFraming(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served = true }))
	r := httptest.NewRequest("GET", "/v1/models", nil)
	r = r.WithContext(context.WithValue(r.Context(), framingConnKey{}, &framingConn{}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if !served || w.Header().Get("Connection") != "close" {
		t.Errorf("served %v, Connection %q; want served with Connection: close", served, w.Header().Get("Connection"))
	}
}
