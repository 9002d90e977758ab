package control

import (
	"strings"
	"testing"
)

func TestMaskSecret(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"abc", "***"},
		{"1234567", "*******"},
		{"sk-secret-9876", "sk**********76"},
		{"ключ-секрет", "кл*******ет"},
	} {
		if got := MaskSecret(tc.in); got != tc.want {
			t.Errorf("MaskSecret(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSlugOf(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"My First Key", "my-first-key"},
		{"  --OpenAI__prod!! ", "openai-prod"},
		{"!!!", ""},
		{strings.Repeat("a", 80), strings.Repeat("a", 64)},
	} {
		if got := SlugOf(tc.in); got != tc.want {
			t.Errorf("SlugOf(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
