package runs_test

import (
	"testing"

	"github.com/millfleet/mill/pkg/runs"
	"github.com/millfleet/mill/pkg/task"
)

// TestTaskKey: attempts and a re-queued copy's bookkeeping do not change a
// task's key; any other property does, and so does the type.
func TestTaskKey(t *testing.T) {
	base := task.BitReport{Account: "acme", StoreID: "1", SpaceID: "photos", RunID: "20260501T030000Z"}.Task()
	k := runs.TaskKey(base)
	same := base.Clone()
	same.Attempts = 2
	same.Set("rechecks", "3")
	if runs.TaskKey(same) != k {
		t.Error("attempts or rechecks changed the key")
	}
	other := base.Clone()
	other.Set(task.KeySpaceID, "docs")
	typed := base.Clone()
	typed.Type = task.TypeBit
	// A property whose value holds what would be the next key.
	shifted := base.Clone()
	shifted.Set(task.KeyAccount, "acme\x002:x")
	for _, o := range []*task.Task{other, typed, shifted} {
		if runs.TaskKey(o) == k {
			t.Errorf("%v has the key of %v", o, base)
		}
	}
}
