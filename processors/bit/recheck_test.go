package bit_test

import (
	"context"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors/bit"
	bt "github.com/millfleet/mill/processors/bit/bittest"
)

// TestRecheckNoteOnlyInMillsForm: a BIT task's "recheckOf" reaches the
// row's details only in the form the bit-error processor writes; a forged
// reason (a verdict, a formula, a second line) is left out.
func TestRecheckNoteOnlyInMillsForm(t *testing.T) {
	for why, want := range map[string]string{
		"case 2: repaired from store 2":            "; re-check after case 2: repaired from store 2",
		"case 6: audit log re-synced from storage": "; re-check after case 6: audit log re-synced from storage",
		"": "",
		"case 2: repaired from store 2; FORGED: every copy is corrupt": "; re-check (its stated reason is not one Mill writes: left out)",
		"=HYPERLINK(\"http://evil.example/\")":                         "; re-check (its stated reason is not one Mill writes: left out)",
		"case 2: repaired from store 2\nFAILURE":                       "; re-check (its stated reason is not one Mill writes: left out)",
	} {
		if got := bit.RecheckNote(why); got != want {
			t.Errorf("RecheckNote(%q) = %q, want %q", why, got, want)
		}
	}
	e := bt.New(t)
	e.Put("1", bt.Good)
	e.SetIndex(bt.GoodMD5)
	e.SetAudit(task.ActionAddContent, bt.GoodMD5, nil)
	b := task.Bit{Account: bt.Account, StoreID: "1", SpaceID: bt.Space, ContentID: bt.Item, RunID: bt.RunID,
		Extra: map[string]string{bit.KeyRecheckOf: "FORGED: every copy is corrupt"}}
	if err := e.Processor(nil).Handle(context.Background(), b.Task()); err != nil {
		t.Fatal(err)
	}
	if r := e.Row(); r == nil || strings.Contains(r.Details, "FORGED") {
		t.Errorf("row %+v holds the task's reason", r)
	}
}
