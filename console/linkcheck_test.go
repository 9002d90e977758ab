package console

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoReflectMethodCalls links a program that serves the console and
// asks the linker which reachable functions look methods up by
// reflection. There must be none: one such call (text/template's
// executor has one) makes the linker keep every exported method of every
// type in the program, which made the standalone server a third bigger.
func TestNoReflectMethodCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("links a program")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	cmd := exec.Command(goTool, "build", "-ldflags=-dumpdep", "-o", filepath.Join(t.TempDir(), "linkcheck"), "./testdata/linkcheck")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%.2000s", err, out)
	}
	var found []string
	for line := range strings.Lines(string(out)) {
		if strings.Contains(line, "<ReflectMethod>") {
			found = append(found, strings.TrimSpace(line))
		}
	}
	if len(found) > 0 {
		t.Errorf("the linker keeps all exported methods; reflective method lookups reachable:\n%s", strings.Join(found[:min(len(found), 10)], "\n"))
	}
}
