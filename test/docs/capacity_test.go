package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/pricing"
)

// The request list in docs/CAPACITY.md is pricing.Markdown() between
// these lines; test/e2e's TestRequestsPerTaskType counts every case of the
// same list at a proxy.
const (
	requestsBegin = "<!-- requests per task: generated from pkg/pricing.TaskRequests (go test ./test/docs -run TestCapacityRequests -update) -->\n"
	requestsEnd   = "<!-- end of requests per task -->\n"
)

// TestCapacityRequests: docs/CAPACITY.md's per-task request table is the
// one pkg/pricing renders from the list the end-to-end test counts and the
// runs' cost estimates use. With -update it rewrites the table.
func TestCapacityRequests(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "CAPACITY.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, requestsBegin), strings.Index(doc, requestsEnd)
	if i < 0 || j < i {
		t.Fatalf("%s: no request table between %q and %q", path, strings.TrimSpace(requestsBegin), strings.TrimSpace(requestsEnd))
	}
	got, want := doc[i+len(requestsBegin):j], pricing.Markdown()
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(doc[:i+len(requestsBegin)]+want+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the request table differs from pricing.Markdown(); run go test ./test/docs -run TestCapacityRequests -update\ngot:\n%s\nwant:\n%s", path, got, want)
}
