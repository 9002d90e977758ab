// Reading the answer of a request for its usage as it goes to the caller:
// which answers are read, how (as they pass, or kept compressed and read
// once complete), and the model a request body names. The scanner itself
// is in usage.go.

package gateway

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// answerCoding is how an answer's body is encoded, as far as reading its
// usage goes.
type answerCoding uint8

const (
	codingIdentity answerCoding = iota
	codingGzip
	codingDeflate
	codingOther // not read
)

// usageAnswer says whether the usage of an answer with header h can be
// read, whether it is a text/event-stream, and its encoding: JSON and
// server-sent events are read, anything else is not.
func usageAnswer(h http.Header) (ok, sse bool, coding answerCoding) {
	// The media type without its parameters, compared as
	// mime.ParseMediaType would, without the map it allocates.
	mt, _, _ := strings.Cut(h.Get("Content-Type"), ";")
	mt = strings.TrimSpace(mt)
	switch {
	case strings.EqualFold(mt, "text/event-stream"):
		sse = true
	case strings.EqualFold(mt, "application/json"), len(mt) > 5 && strings.EqualFold(mt[len(mt)-5:], "+json"):
	default:
		return false, false, codingOther
	}
	switch ce := strings.ToLower(strings.TrimSpace(h.Get("Content-Encoding"))); ce {
	case "", "identity":
	case "gzip", "x-gzip":
		coding = codingGzip
	case "deflate":
		coding = codingDeflate
	default:
		coding = codingOther
	}
	return true, sse, coding
}

// maxCompressedUsage caps the compressed answer kept to read its usage
// once it is complete; the usage of a longer one is not read. At most
// maxDecodedUsage bytes of it are decoded, so that a small answer that
// inflates to gigabytes costs no more than a long plain one.
const (
	maxCompressedUsage = 1 << 20
	maxDecodedUsage    = 32 << 20
)

// usageTap says how the request's answer is read for its usage as it
// goes to the caller (see requestState.usageStart).
type usageTap uint8

const (
	tapOff        usageTap = iota // not read
	tapScan                       // read as it passes
	tapCompressed                 // kept, compressed, and read once complete
	tapDone                       // read to the end: usageDone ran
)

// usageStart decides, as the response's status goes out with header h,
// whether the answer is read for its usage: when the gateway logs
// requests or a tokens policy charges it, and it is JSON or server-sent
// events. An answer the caller takes compressed (the caller's
// Accept-Encoding is forwarded) is kept, up to maxCompressedUsage, and
// read once complete; one in an encoding the standard library does not
// decode is not read. The body reaches the caller unchanged either way.
func (st *requestState) usageStart(h http.Header) {
	if !st.wantUsage && !st.logged {
		return
	}
	ok, sse, coding := usageAnswer(h)
	if !ok {
		return
	}
	st.usage.sse = sse
	switch coding {
	case codingIdentity:
		st.tap = tapScan
	case codingGzip, codingDeflate:
		st.tap, st.zcoding = tapCompressed, coding
	}
}

// usageWrite reads p, a piece of the answer the caller got.
func (st *requestState) usageWrite(p []byte) {
	switch st.tap {
	case tapScan:
		st.usage.write(p)
	case tapCompressed:
		if len(st.zbody)+len(p) > maxCompressedUsage {
			st.tap, st.zbody = tapOff, nil
			return
		}
		st.zbody = append(st.zbody, p...)
	}
}

// usageDone ends the reading of the answer, decoding a compressed one, and
// returns what was read of it. It runs once the response is complete, and
// may run more than once.
func (st *requestState) usageDone() *usageScanner {
	if st.tap == tapCompressed {
		var r io.ReadCloser
		var err error
		if st.zcoding == codingGzip {
			r, err = gzip.NewReader(bytes.NewReader(st.zbody))
		} else {
			r = flate.NewReader(bytes.NewReader(st.zbody))
		}
		if err == nil {
			buf := make([]byte, 32<<10)
			lr := io.LimitReader(r, maxDecodedUsage)
			for {
				n, err := lr.Read(buf)
				st.usage.write(buf[:n])
				if err != nil {
					break
				}
			}
			r.Close()
		}
		st.zbody = nil
	}
	if st.tap != tapOff {
		st.tap = tapDone
	}
	return &st.usage
}

// requestModel returns the model a JSON request body names at its top
// level, or "" when it names none or is not a JSON object. It reads no
// further than the model member.
func requestModel(b []byte) string {
	start, end := modelSpan(b)
	v := b[start:end]
	if bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v) {
		return string(v)
	}
	var s string
	if json.Unmarshal(b[start-1:end+1], &s) != nil {
		return ""
	}
	return s
}
