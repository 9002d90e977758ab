package gateway_test

import (
	"os/exec"
	"strings"
	"testing"
)

// module is the root package's import path.
const module = "github.com/modelgateway/gateway"

// products are the packages of the module's products (docs/architecture.md, Where the package is heading): the
// root never depends on them, and they never depend on memstore.
var products = []string{"admin", "observe", "budget", "guardrail", "prompt", "users", "catalog"}

// TestImportRule keeps the layout's import rule: the data plane (the
// root package) depends on no product package nor on memstore, and no
// product depends on memstore (a host picks its stores). It reads the
// dependencies from go list, and is skipped where no go command runs.
func TestImportRule(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command:", err)
	}
	for _, p := range deps(t, ".") {
		for _, banned := range append(products, "memstore") {
			if under(p, module+"/"+banned) {
				t.Errorf("the root package depends on %s", p)
			}
		}
	}
	for _, prod := range products {
		path := module + "/" + prod
		if !exists(t, path) {
			continue
		}
		for _, p := range deps(t, path) {
			if under(p, module+"/memstore") {
				t.Errorf("%s depends on %s", path, p)
			}
		}
	}
}

// under reports whether import path p is pkg or inside it.
func under(p, pkg string) bool {
	return p == pkg || strings.HasPrefix(p, pkg+"/")
}

// deps lists the packages pkg depends on (itself included), tests left
// out.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// exists reports whether the module has the package path.
func exists(t *testing.T, path string) bool {
	t.Helper()
	out, err := exec.Command("go", "list", "-e", "-f", "{{if .Error}}missing{{end}}", path).Output()
	return err == nil && strings.TrimSpace(string(out)) == ""
}
