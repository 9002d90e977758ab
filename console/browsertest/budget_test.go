package browsertest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// budget spends a key's tokens budget (a usage-limits policy) until the
// gateway answers 412, then checks that the policies page shows the key
// exhausted. It is skipped when the gateway serves no usage-limits
// policies.
func budget(t *testing.T, ctx context.Context, s *server) {
	var key struct {
		ID  string `json:"id"`
		Key string `json:"key"`
	}
	if st := s.api(adminKey, "POST", "/api-keys/workspace/service", `{"name":"budgeted","workspace_id":"default","scopes":["completions.write"]}`, &key); st != 200 {
		t.Fatalf("creating the budgeted key: %d", st)
	}
	policy := `{"name":"Browser budget","conditions":[{"key":"api_key","value":"` + key.ID + `"}],` +
		`"group_by":[{"key":"api_key"}],"type":"tokens","credit_limit":40,"workspace_id":"default"}`
	switch st := s.api(adminKey, "POST", "/policies/usage-limits", policy, nil); st {
	case 200, 201:
	case 404:
		t.Skip("the gateway serves no usage-limits policies (POST /policies/usage-limits is 404)")
	default:
		t.Fatalf("creating the usage-limits policy: %d", st)
	}
	refused := false
	for i := 0; i < 50 && !refused; i++ {
		switch st := s.complete(key.Key, fmt.Sprintf("budget-%d", i)); st {
		case 200:
		case 412:
			refused = true
		default:
			t.Fatalf("budgeted completion %d: %d", i, st)
		}
	}
	if !refused {
		t.Fatal("50 completions never exhausted a 40-token budget")
	}
	do(t, ctx, "policies", chromedp.Navigate(s.url+"/console/policies"), chromedp.WaitVisible(chromedp.CSS("main h1")))
	text := run(t, ctx, "usage", chromedp.TextContent(chromedp.CSS("main")))
	if !strings.Contains(text, "Browser budget") || !strings.Contains(text, "exhausted") {
		t.Errorf("the policies page does not show the exhausted budget:\n%s", text)
	}
	item := run(t, ctx, "entity", chromedp.Evaluate[string](`(document.querySelector('.usage li.exhausted') || {}).textContent || ''`))
	if !strings.Contains(item, key.ID) {
		t.Errorf("exhausted entity %q, want the key %s", item, key.ID)
	}
}
