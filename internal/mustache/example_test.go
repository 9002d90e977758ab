package mustache_test

import (
	"errors"
	"fmt"

	"github.com/modelgateway/gateway/internal/mustache"
)

// A prompt is a JSON array of chat messages with tags inside its strings:
// rendered in JSON mode, a value with quotes and newlines stays inside its
// string, and a strict render names a variable the caller left out.
func ExampleTemplate_Render() {
	tmpl, err := mustache.Parse(`[{"role":"system","content":"{{>persona}}"},{"role":"user","content":"{{question}}"}]`,
		func(name string) (string, bool) {
			if name == "persona" {
				return "You are {{name}}.", true
			}
			return "", false
		})
	if err != nil {
		panic(err)
	}
	fmt.Println(tmpl.Vars())

	opts := mustache.Options{Escape: mustache.EscapeJSON, Strict: true}
	out, err := tmpl.Render(map[string]any{"name": "Ada", "question": "What does \"\\n\" mean?\nThanks"}, opts)
	fmt.Println(out, err)

	_, err = tmpl.Render(map[string]any{"name": "Ada"}, opts)
	var missing *mustache.MissingError
	if errors.As(err, &missing) {
		fmt.Println("missing:", missing.Name)
	}
	// Output:
	// [name question]
	// [{"role":"system","content":"You are Ada."},{"role":"user","content":"What does \"\\n\" mean?\nThanks"}] <nil>
	// missing: question
}
