package guardrail

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"
	"strings"
)

// The PII categories of the pii check, as its categories parameter names
// them; a redacted finding is replaced by its category in brackets
// ("[EMAIL_ADDRESS]").
const (
	PIIEmail = "EMAIL_ADDRESS" // local@domain.tld
	PIIPhone = "PHONE_NUMBER"  // + and 8 to 15 digits, or a North American number: 10 digits (11 after a 1), or 3, 3 and 4 grouped
	PIICard  = "CREDIT_CARD"   // 13 to 19 digits, grouped by spaces or hyphens or not, with a valid Luhn check digit
	PIIIBAN  = "IBAN_CODE"     // an upper-case IBAN, grouped by fours or not, with valid mod-97 check digits
	PIISSN   = "SSN"           // a US social security number written ddd-dd-dddd, of an area, group and serial in use
	PIIIP    = "IP_ADDRESS"    // an IPv4 or IPv6 address
)

var piiCategories = []string{PIIEmail, PIIPhone, PIICard, PIIIBAN, PIISSN, PIIIP}

// piiSet is a set of categories.
type piiSet uint8

func categoryBit(c string) piiSet {
	for i, n := range piiCategories {
		if n == c {
			return 1 << i
		}
	}
	return 0
}

// The bits of piiSet, in the order of piiCategories.
const (
	bitEmail piiSet = 1 << iota
	bitPhone
	bitCard
	bitIBAN
	bitSSN
	bitIP
)

func (s piiSet) has(b piiSet) bool { return s&b != 0 }

// finding is one piece of personal data: s[start:end] is of category.
type finding struct {
	category   string
	start, end int
}

// scanPII returns the findings of the categories in set, in order and
// not overlapping. It runs in time linear in len(s), and skips at once
// the words that no detector of set can start (most words of a prompt).
func scanPII(s string, set piiSet) []finding {
	var out []finding
	var emails []finding
	if set.has(bitEmail) {
		emails = scanEmails(s)
	}
	starts := startBytes(s, set)
	e := 0
	for i := 0; i < len(s); {
		if e < len(emails) && i >= emails[e].start {
			out = append(out, emails[e])
			i = emails[e].end
			e++
			continue
		}
		c := s[i]
		if !starts[c] || !startsWord(s, i) {
			if !isAlnum(c) {
				i++
				continue
			}
			// No detector starts inside a word: skip the rest of it.
			for i++; i < len(s) && isAlnum(s[i]); i++ {
			}
			continue
		}
		limit := len(s)
		if e < len(emails) {
			limit = emails[e].start
		}
		if f, ok := matchAt(s[:limit], i, set); ok {
			out = append(out, f)
			i = f.end
			continue
		}
		// Skip the rest of the word.
		if !isAlnum(c) {
			i++
			continue
		}
		for i++; i < len(s) && isAlnum(s[i]); i++ {
		}
	}
	return out
}

// startBytes returns the bytes a finding of set can start with in s
// (see matchAt): digits for the numbers, '+' and '(' for phone numbers,
// upper-case letters for IBANs, and hex digits and ':' for IPv6
// addresses, only when s has a colon at all, as each of them has two.
func startBytes(s string, set piiSet) *[256]bool {
	var t [256]bool
	mark := func(from, to byte) {
		for c := from; c <= to; c++ {
			t[c] = true
		}
	}
	if set.has(bitSSN | bitIP | bitCard | bitPhone) {
		mark('0', '9')
	}
	if set.has(bitPhone) {
		t['+'], t['('] = true, true
	}
	if set.has(bitIBAN) {
		mark('A', 'Z')
	}
	if set.has(bitIP) && strings.IndexByte(s, ':') >= 0 {
		mark('0', '9')
		mark('a', 'f')
		mark('A', 'F')
		t[':'] = true
	}
	return &t
}

// startsWord reports whether s[i] starts a word: what precedes it is
// not part of a word, nor a dot or hyphen after one ("1.2" and "a-1"
// continue at the 2 and the 1), nor a colon after a hex digit or a colon
// (an IPv6 address continues).
func startsWord(s string, i int) bool {
	if i == 0 {
		return true
	}
	p := s[i-1]
	if isAlnum(p) || p == '_' {
		return false
	}
	if i == 1 {
		return true
	}
	if p == ':' {
		return !isHex(s[i-2]) && s[i-2] != ':'
	}
	return !((p == '.' || p == '-') && isAlnum(s[i-2]))
}

// matchAt tries each detector at s[i], which starts a word.
func matchAt(s string, i int, set piiSet) (finding, bool) {
	c := s[i]
	if isDigit(c) {
		if set.has(bitSSN) {
			if end := matchSSN(s, i); end > 0 {
				return finding{PIISSN, i, end}, true
			}
		}
		if set.has(bitIP) {
			if end := matchIPv4(s, i); end > 0 {
				return finding{PIIIP, i, end}, true
			}
		}
		if set.has(bitCard) {
			if end := matchCard(s, i); end > 0 {
				return finding{PIICard, i, end}, true
			}
		}
	}
	if set.has(bitPhone) && (isDigit(c) || c == '+' || c == '(') {
		if end := matchPhone(s, i); end > 0 {
			return finding{PIIPhone, i, end}, true
		}
	}
	if set.has(bitIP) && (isHex(c) || c == ':') {
		if end := matchIPv6(s, i); end > 0 {
			return finding{PIIIP, i, end}, true
		}
	}
	if set.has(bitIBAN) && isUpper(c) {
		if end := matchIBAN(s, i); end > 0 {
			return finding{PIIIBAN, i, end}, true
		}
	}
	return finding{}, false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isAlnum(c byte) bool { return alnum[c] }
func isHex(c byte) bool   { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// alnum holds the ASCII letters and digits.
var alnum = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
	}
	return t
}()

// endsWord reports whether s[end] does not continue a word or number.
func endsWord(s string, end int) bool {
	if end >= len(s) {
		return true
	}
	c := s[end]
	if isAlnum(c) || c == '_' || c == '@' {
		return false
	}
	// "1.5" or "12-3" continues the number.
	return !((c == '.' || c == '-') && end+1 < len(s) && isDigit(s[end+1]))
}

func isLocal(c byte) bool  { return isAlnum(c) || strings.IndexByte("._%+-", c) >= 0 }
func isDomain(c byte) bool { return isAlnum(c) || c == '.' || c == '-' }

// scanEmails returns the e-mail addresses of s.
func scanEmails(s string) []finding {
	var out []finding
	lo := 0
	for from := 0; from < len(s); {
		a := strings.IndexByte(s[from:], '@')
		if a < 0 {
			break
		}
		a += from
		from = a + 1
		l := a
		for l > lo && isLocal(s[l-1]) {
			l--
		}
		for l < a && s[l] == '.' {
			l++
		}
		r := a + 1
		for r < len(s) && isDomain(s[r]) {
			r++
		}
		for r > a+1 && (s[r-1] == '.' || s[r-1] == '-') {
			r--
		}
		if l == a || !validDomain(s[a+1:r]) || (r < len(s) && s[r] == '@') {
			continue
		}
		out = append(out, finding{PIIEmail, l, r})
		lo, from = r, r
	}
	return out
}

// validDomain reports whether d is labels joined by dots, the last of at
// least two letters.
func validDomain(d string) bool {
	dot := strings.LastIndexByte(d, '.')
	if dot <= 0 || len(d)-dot-1 < 2 || strings.Contains(d, "..") || d[0] == '-' {
		return false
	}
	for i := dot + 1; i < len(d); i++ {
		if isDigit(d[i]) || d[i] == '-' {
			return false
		}
	}
	return true
}

// digitsAt returns the value of the n digits at s[i], or -1.
func digitsAt(s string, i, n int) int {
	if i+n > len(s) {
		return -1
	}
	v := 0
	for _, c := range []byte(s[i : i+n]) {
		if !isDigit(c) {
			return -1
		}
		v = v*10 + int(c-'0')
	}
	return v
}

// matchSSN matches ddd-dd-dddd at s[i] whose area is not 000, 666 or
// 900-999, whose group is not 00 and whose serial is not 0000.
func matchSSN(s string, i int) int {
	if i+11 > len(s) || s[i+3] != '-' || s[i+6] != '-' {
		return 0
	}
	area, group, serial := digitsAt(s, i, 3), digitsAt(s, i+4, 2), digitsAt(s, i+7, 4)
	if area <= 0 || area == 666 || area >= 900 || group <= 0 || serial <= 0 || !endsWord(s, i+11) {
		return 0
	}
	return i + 11
}

// matchIPv4 matches a dotted-quad IPv4 address at s[i].
func matchIPv4(s string, i int) int {
	end := i
	for end < len(s) && end-i <= 15 && (isDigit(s[end]) || s[end] == '.') {
		end++
	}
	for end > i && s[end-1] == '.' {
		end--
	}
	if strings.Count(s[i:end], ".") != 3 {
		return 0
	}
	a, err := netip.ParseAddr(s[i:end])
	if err != nil || !a.Is4() || !endsWord(s, end) {
		return 0
	}
	return end
}

// matchCard matches 13 to 19 digits at s[i], in groups separated by one
// space or hyphen (the same throughout), that pass the Luhn check.
func matchCard(s string, i int) int {
	var digits [19]byte
	n, best := 0, 0
	var sep byte
	for j := i; j <= len(s); j++ {
		if j < len(s) && isDigit(s[j]) {
			if n == len(digits) {
				break
			}
			digits[n] = s[j]
			n++
			continue
		}
		// A group ends at j.
		if n >= 13 && endsWordCard(s, j) && luhn(digits[:n]) {
			best = j
		}
		if j == len(s) || (s[j] != ' ' && s[j] != '-') || (sep != 0 && s[j] != sep) || j+1 >= len(s) || !isDigit(s[j+1]) {
			break
		}
		sep = s[j]
	}
	return best
}

// endsWordCard is endsWord, where a separator and more digits may follow
// (the longest Luhn-valid prefix is taken).
func endsWordCard(s string, end int) bool {
	return end >= len(s) || !(isAlnum(s[end]) || s[end] == '_' || s[end] == '@' || s[end] == '.' && end+1 < len(s) && isDigit(s[end+1]))
}

// luhn reports whether the digits end in a valid Luhn check digit.
func luhn(d []byte) bool {
	sum := 0
	for k := range d {
		v := int(d[len(d)-1-k] - '0')
		if k%2 == 1 {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
	}
	return sum%10 == 0
}

// matchPhone matches a phone number at s[i]: an optional '+', then digits
// in groups separated by one space, hyphen or dot, the first group
// possibly in parentheses. With '+' it has 8 to 15 digits in groups of 1
// to 5; without, it is written as North American numbers are: 10 digits
// (11 starting with 1) in one run, or groups of 3, 3 and 4 digits after
// an optional 1.
func matchPhone(s string, i int) int {
	j, plus := i, false
	if s[j] == '+' {
		plus = true
		j++
	}
	var groups [8]int
	ng, n, best, open, parens := 0, 0, 0, false, 0
	var first byte
	for ; j < len(s) && j-i < 32; j++ {
		c := s[j]
		switch {
		case isDigit(c):
			if n == 0 {
				first = c
			}
			n++
			if j == i || !isDigit(s[j-1]) {
				if ng == len(groups) {
					return best
				}
				ng++
			}
			groups[ng-1]++
			if j+1 < len(s) && isDigit(s[j+1]) {
				continue
			}
			if !open && endsWord(s, j+1) && phoneShape(groups[:ng], n, plus, first) {
				best = j + 1
			}
			continue
		case c == '(' && !open && parens == 0 && (j == i || s[j-1] == ' ' || s[j-1] == '+'):
			open, parens = true, 1
		case c == ')' && open && isDigit(s[j-1]):
			open = false
		case (c == ' ' || c == '-' || c == '.') && j > i && (isDigit(s[j-1]) || s[j-1] == ')') && j+1 < len(s) && (isDigit(s[j+1]) || s[j+1] == '('):
		default:
			return best
		}
	}
	return best
}

// phoneShape reports whether digit groups make a phone number.
func phoneShape(groups []int, n int, plus bool, first byte) bool {
	if plus {
		if n < 8 || n > 15 {
			return false
		}
		for _, g := range groups {
			if g > 5 && len(groups) > 1 {
				return false
			}
		}
		return true
	}
	switch len(groups) {
	case 1:
		return n == 10 || n == 11 && first == '1'
	case 3:
		return groups[0] == 3 && groups[1] == 3 && groups[2] == 4
	case 4:
		return groups[0] == 1 && first == '1' && groups[1] == 3 && groups[2] == 3 && groups[3] == 4
	}
	return false
}

// matchIPv6 matches an IPv6 address at s[i].
func matchIPv6(s string, i int) int {
	end, colons := i, 0
	for end < len(s) && end-i <= 45 && (isHex(s[end]) || s[end] == ':' || s[end] == '.') {
		if s[end] == ':' {
			colons++
		}
		end++
	}
	if colons < 2 || end-i > 45 || strings.IndexFunc(s[i:end], func(r rune) bool { return r != ':' && r != '.' }) < 0 {
		return 0
	}
	for end > i && (s[end-1] == '.' || s[end-1] == ':' && (end-2 < i || s[end-2] != ':')) {
		end--
	}
	a, err := netip.ParseAddr(s[i:end])
	if err != nil || !a.Is6() || !endsWord(s, end) {
		return 0
	}
	return end
}

// matchIBAN matches an upper-case IBAN at s[i]: two letters, two check
// digits, then 11 to 30 letters or digits, written in one run or in
// groups of four separated by single spaces, with valid mod-97 check
// digits.
func matchIBAN(s string, i int) int {
	if i+4 > len(s) || !isUpper(s[i+1]) || !isDigit(s[i+2]) || !isDigit(s[i+3]) {
		return 0
	}
	var buf [34]byte
	n, best, group := 0, 0, 0
	for j := i; j <= len(s); j++ {
		if j < len(s) && (isUpper(s[j]) || isDigit(s[j])) {
			if n == len(buf) {
				return best
			}
			buf[n] = s[j]
			n++
			group++
			continue
		}
		if n >= 15 && endsWord(s, j) && mod97(buf[:n]) {
			best = j
		}
		// Only groups of four continue, after one space.
		if group != 4 || j+1 >= len(s) || s[j] != ' ' || !(isUpper(s[j+1]) || isDigit(s[j+1])) {
			return best
		}
		group = 0
	}
	return best
}

// mod97 reports whether the IBAN b (compact) has valid check digits.
func mod97(b []byte) bool {
	r := 0
	add := func(c byte) {
		if isDigit(c) {
			r = (r*10 + int(c-'0')) % 97
		} else {
			r = (r*100 + int(c-'A') + 10) % 97
		}
	}
	for _, c := range b[4:] {
		add(c)
	}
	for _, c := range b[:4] {
		add(c)
	}
	return r == 1
}

// redact returns s with each finding replaced by its category in brackets.
func redact(s string, fs []finding) string {
	var b strings.Builder
	b.Grow(len(s))
	at := 0
	for _, f := range fs {
		b.WriteString(s[at:f.start])
		b.WriteString("[" + f.category + "]")
		at = f.end
	}
	b.WriteString(s[at:])
	return b.String()
}

type piiCheck struct {
	set       piiSet
	redacting bool
}

func newPII(params json.RawMessage) (Check, error) {
	var p struct {
		Categories []string `json:"categories"`
		Redact     bool     `json:"redact"`
		Timeout    int      `json:"timeout"` // accepted for the reference's sake; the engine's limit applies
	}
	if err := DecodeParameters(params, &p); err != nil {
		return nil, err
	}
	if len(p.Categories) == 0 {
		return nil, paramError("categories", "must name at least one of "+strings.Join(piiCategories, ", "))
	}
	c := &piiCheck{redacting: p.Redact}
	for _, name := range p.Categories {
		switch name {
		case "CREDIT_CARD_NUMBER":
			name = PIICard
		case "IBAN":
			name = PIIIBAN
		}
		bit := categoryBit(name)
		if bit == 0 {
			return nil, paramError("categories", "holds "+quote(name)+"; the categories detected are "+strings.Join(piiCategories, ", "))
		}
		c.set |= bit
	}
	return c, nil
}

// Rewrites reports whether the check redacts what it finds.
func (c *piiCheck) Rewrites() bool { return c.redacting }

// Check looks for personal data in every part of the text. Found data
// fails the check, or is redacted when the check redacts: the check then
// passes with the rewritten parts.
func (c *piiCheck) Check(ctx context.Context, in *Input) (Verdict, error) {
	counts := map[string]int{}
	var parts []string
	for i, p := range in.Parts {
		fs := scanPII(p, c.set)
		for _, f := range fs {
			counts[f.category]++
		}
		if len(fs) > 0 && c.redacting {
			if parts == nil {
				parts = append([]string(nil), in.Parts...)
			}
			parts[i] = redact(p, fs)
		}
		if ctx.Err() != nil {
			return Verdict{}, ctx.Err()
		}
	}
	if len(counts) == 0 {
		return Verdict{Pass: true, Explanation: "No personal data found."}, nil
	}
	names := make([]string, 0, len(counts))
	for k, n := range counts {
		names = append(names, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(names)
	if c.redacting {
		return Verdict{Pass: true, Explanation: "Redacted " + strings.Join(names, ", ") + ".", Parts: parts}, nil
	}
	return Verdict{Explanation: "Found " + strings.Join(names, ", ") + "."}, nil
}
