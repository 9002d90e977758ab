package gateway

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestCheckLabel(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"prod key", true},
		{strings.Repeat("é", 127), true}, // 254 bytes
		{strings.Repeat("a", 255), true},
		{strings.Repeat("a", 256), false},
		{"a\x00b", false},
		{"tab\there", false},
		{"del\x7f", false},
		{"c1\u0085", false},
		{"\xff", false},
	} {
		err := checkLabel("name", tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("checkLabel(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
		var e *Error
		if err != nil && (!errors.As(err, &e) || e.Status != 400 || e.Param != "name") {
			t.Errorf("checkLabel(%q) = %#v, want a 400 naming name", tc.name, err)
		}
	}
}

func TestCheckMetadata(t *testing.T) {
	many := map[string]string{}
	for i := range 65 {
		many["k"+strconv.Itoa(i)] = "v"
	}
	for _, tc := range []struct {
		md map[string]string
		ok bool
	}{
		{nil, true},
		{map[string]string{"_user": "ann"}, true},
		{many, false},
		{map[string]string{"big": strings.Repeat("x", 8<<10)}, false},
		{map[string]string{"": "v"}, false},
	} {
		err := checkMetadata("defaults.metadata", tc.md)
		if (err == nil) != tc.ok {
			t.Errorf("checkMetadata(%d keys) = %v, want ok %v", len(tc.md), err, tc.ok)
		}
		var e *Error
		if err != nil && (!errors.As(err, &e) || e.Param != "defaults.metadata") {
			t.Errorf("checkMetadata = %#v, want a 400 naming defaults.metadata", err)
		}
	}
}
