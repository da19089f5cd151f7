package task_test

import (
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/task"
)

// TestGroup: a task's queue group is its account when SQS can carry it as
// a MessageGroupId, else none.
func TestGroup(t *testing.T) {
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
		tk := task.New(task.TypeDup, map[string]string{task.KeyAccount: account})
		if got := tk.Group(); got != want {
			t.Errorf("account %q: group %q, want %q", account, got, want)
		}
	}
}
