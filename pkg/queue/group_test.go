package queue_test

import (
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/queue"
)

// TestGroupFor: a task's queue group is its account when SQS can carry it
// as a MessageGroupId, else none.
func TestGroupFor(t *testing.T) {
	for account, want := range map[string]string{
		"acme":                   "acme",
		"acme-2.org_x":           "acme-2.org_x",
		"":                       "",
		"two words":              "",
		"ünï":                    "",
		strings.Repeat("a", 128): strings.Repeat("a", 128),
		strings.Repeat("a", 129): "",
		"new\nline":              "",
	} {
		if got := queue.GroupFor(account); got != want {
			t.Errorf("account %q: group %q, want %q", account, got, want)
		}
	}
}
