package guardrail

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

var allPII = bitEmail | bitPhone | bitCard | bitIBAN | bitSSN | bitIP

func TestScanPII(t *testing.T) {
	tests := []struct {
		in   string
		want string // the text redacted
	}{
		{"write to jane.doe+x@mail.example.com.", "write to [EMAIL_ADDRESS]."},
		{"not an email: a@b, @home, x@localhost", "not an email: a@b, @home, x@localhost"},
		{"card 4111 1111 1111 1111 ok", "card [CREDIT_CARD] ok"},
		{"card 4111-1111-1111-1111", "card [CREDIT_CARD]"},
		{"card 4111111111111111", "card [CREDIT_CARD]"},
		{"luhn fails 4111 1111 1111 1112", "luhn fails 4111 1111 1111 1112"},
		{"mixed separators 4111 1111-1111 1111", "mixed separators 4111 1111-1111 1111"},
		{"amex 378282246310005.", "amex [CREDIT_CARD]."},
		{"too long 41111111111111111111111", "too long 41111111111111111111111"},
		{"ssn 123-45-6789", "ssn [SSN]"},
		{"ssn area 000-12-3456 666-12-3456 912-12-3456", "ssn area 000-12-3456 666-12-3456 912-12-3456"},
		{"ssn group 123-00-4567 serial 123-45-0000", "ssn group 123-00-4567 serial 123-45-0000"},
		{"ssn inside 1123-45-6789", "ssn inside 1123-45-6789"},
		{"iban DE89370400440532013000 end", "iban [IBAN_CODE] end"},
		{"iban GB82 WEST 1234 5698 7654 32", "iban [IBAN_CODE]"},
		{"iban bad DE89370400440532013001", "iban bad DE89370400440532013001"},
		{"lower de89370400440532013000", "lower de89370400440532013000"},
		{"ip 192.168.1.20, and 10.0.0.1.", "ip [IP_ADDRESS], and [IP_ADDRESS]."},
		{"version 1.2.3.4.5 and 256.1.1.1", "version 1.2.3.4.5 and 256.1.1.1"},
		{"v6 2001:db8::8a2e:370:7334 and ::1", "v6 [IP_ADDRESS] and [IP_ADDRESS]"},
		{"time 10:30:45 std::vector", "time 10:30:45 std::vector"},
		{"call +44 20 7946 0958 now", "call [PHONE_NUMBER] now"},
		{"call (415) 555-2671 or 415.555.2671", "call [PHONE_NUMBER] or [PHONE_NUMBER]"},
		{"call 1-800-555-0199", "call [PHONE_NUMBER]"},
		{"year 2023 and 12345", "year 2023 and 12345"},
		{"date 2023-01-15", "date 2023-01-15"},
		{"", ""},
	}
	for _, tc := range tests {
		got := redact(tc.in, scanPII(tc.in, allPII))
		if got != tc.want {
			t.Errorf("redact(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

func TestLuhnAndMod97(t *testing.T) {
	for d, want := range map[string]bool{"79927398713": true, "79927398710": false, "0": true, "4012888888881881": true} {
		if luhn([]byte(d)) != want {
			t.Errorf("luhn(%s) != %v", d, want)
		}
	}
	for s, want := range map[string]bool{"GB82WEST12345698765432": true, "GB82WEST12345698765433": false, "NL91ABNA0417164300": true, "FR1420041010050500013M02606": true} {
		if mod97([]byte(s)) != want {
			t.Errorf("mod97(%s) != %v", s, want)
		}
	}
}

func TestPIICategories(t *testing.T) {
	in := "mail a@b.example, ssn 123-45-6789"
	v := run(t, "default.pii", `{"categories":["SSN"]}`, text(in))
	if v.Pass || !strings.Contains(v.Explanation, "1 SSN") || strings.Contains(v.Explanation, "EMAIL") {
		t.Errorf("verdict %+v", v)
	}
	if strings.Contains(v.Explanation, "6789") {
		t.Error("the explanation shows the data")
	}
}

func TestPIIRedacts(t *testing.T) {
	c, err := NewRegistry(Env{}).New("default.pii", json.RawMessage(`{"categories":["EMAIL_ADDRESS","PHONE_NUMBER"],"redact":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if !c.(Rewriter).Rewrites() {
		t.Fatal("a redacting pii check does not rewrite")
	}
	in := &Input{Parts: []string{"no data", "reach me at x@y.example or +1 415 555 2671"}}
	v, err := c.Check(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"no data", "reach me at [EMAIL_ADDRESS] or [PHONE_NUMBER]"}
	if !v.Pass || len(v.Parts) != 2 || v.Parts[0] != want[0] || v.Parts[1] != want[1] {
		t.Errorf("verdict %+v, want parts %q", v, want)
	}
	if in.Parts[1] == v.Parts[1] {
		t.Error("the input was modified")
	}
}
