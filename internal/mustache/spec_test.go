package mustache

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// specSuites are the Mustache specification's suites this package
// implements; testdata/spec holds their fixtures as the specification
// publishes them.
var specSuites = []string{"comments", "delimiters", "interpolation", "inverted", "partials", "sections"}

type specCase struct {
	Name     string            `json:"name"`
	Desc     string            `json:"desc"`
	Data     any               `json:"data"`
	Template string            `json:"template"`
	Partials map[string]string `json:"partials"`
	Expected string            `json:"expected"`
}

// loadSpec reads the cases of one suite of the specification.
func loadSpec(t testing.TB, suite string) []specCase {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "spec", suite+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Tests []specCase `json:"tests"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatalf("%s: %v", suite, err)
	}
	if len(file.Tests) == 0 {
		t.Fatalf("%s: no tests", suite)
	}
	return file.Tests
}

func TestSpec(t *testing.T) {
	for _, suite := range specSuites {
		for _, tc := range loadSpec(t, suite) {
			t.Run(suite+"/"+tc.Name, func(t *testing.T) {
				tmpl, err := Parse(tc.Template, func(name string) (string, bool) {
					s, ok := tc.Partials[name]
					return s, ok
				})
				if err != nil {
					t.Fatalf("Parse(%q): %v", tc.Template, err)
				}
				got, err := tmpl.Render(tc.Data, Options{})
				if err != nil {
					t.Fatalf("Render: %v", err)
				}
				if got != tc.Expected {
					t.Errorf("%s\ntemplate: %q\ngot:  %q\nwant: %q", tc.Desc, tc.Template, got, tc.Expected)
				}
			})
		}
	}
}
