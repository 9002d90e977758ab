package admin

import (
	"strings"
	"testing"
)

func TestNewWorkspaceID(t *testing.T) {
	for _, name := range []string{"Team Blue", "!!!", "", strings.Repeat("long name ", 20), "Ünïcode ok"} {
		id := newWorkspaceID(name)
		if !validWorkspaceID(id) || !strings.HasPrefix(id, "ws-") {
			t.Errorf("newWorkspaceID(%q) = %q, not a valid id", name, id)
		}
	}
	if a, b := newWorkspaceID("x"), newWorkspaceID("x"); a == b {
		t.Errorf("two ids for one name are both %q", a)
	}
}
