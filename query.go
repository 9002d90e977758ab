package gateway

import "strings"

// gatewayParamPrefix starts the name of every query parameter that is the
// gateway's own, as x-gateway-* starts the names of its headers.
const gatewayParamPrefix = "x-gateway-"

// stripGatewayParams returns the raw query q without the parameters whose
// names, unescaped and lower-cased, start with x-gateway-: a caller may put
// its gateway key in the query (?x-gateway-api-key=…), and the gateway's
// own credential never goes to a provider. Parameters are separated by '&'
// or ';', since some servers split on either. What remains is kept byte
// for byte and in order, each parameter after the separator that preceded
// it. It returns q itself, allocating nothing, when q holds no such
// parameter.
func stripGatewayParams(q string) string {
	var b []byte
	dropped := false // b holds what is kept
	kept := false    // b holds at least one parameter, maybe empty
	for i := 0; i <= len(q); {
		j := strings.IndexAny(q[i:], "&;")
		if j < 0 {
			j = len(q)
		} else {
			j += i
		}
		p := q[i:j]
		switch {
		case gatewayParam(p):
			if !dropped {
				dropped = true
				b = make([]byte, 0, len(q))
				if i > 0 {
					b = append(b, q[:i-1]...) // the parameters before p and their separators
					kept = true
				}
			}
		case dropped:
			if kept {
				b = append(b, q[i-1])
			}
			b = append(b, p...)
			kept = true
		}
		i = j + 1
	}
	if !dropped {
		return q
	}
	return string(b)
}

// gatewayParam reports whether the query parameter p ("name=value", or a
// bare name) is the gateway's own: whether its name, unescaped ('+' as a
// space, %XX as its byte, a malformed escape as written) and lower-cased,
// starts with gatewayParamPrefix. Decoding leniently, rather than refusing
// a malformed name, errs on the side of dropping.
func gatewayParam(p string) bool {
	n := 0 // bytes of gatewayParamPrefix matched
	for i := 0; i < len(p) && n < len(gatewayParamPrefix); i++ {
		c := p[i]
		switch {
		case c == '=':
			return false
		case c == '+':
			c = ' '
		case c == '%' && i+2 < len(p):
			hi, ok1 := unhexDigit(p[i+1])
			lo, ok2 := unhexDigit(p[i+2])
			if ok1 && ok2 {
				c = hi<<4 | lo
				i += 2
			}
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != gatewayParamPrefix[n] {
			return false
		}
		n++
	}
	return n == len(gatewayParamPrefix)
}

// unhexDigit returns the value of the hexadecimal digit c, and whether c
// is one.
func unhexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
