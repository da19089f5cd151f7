package audit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/task"
)

// TestWriteOfAnAbsentItemIsHistory: a content write (ADD_CONTENT,
// COPY_CONTENT, SET_CONTENT_PROPERTIES) whose item is not in its store is
// history only: one audit entry, but no content-index row and no DUP task.
// Indexed, a forged write of an item that never existed would become a
// recorded fact (the row), then a bit report's ERROR and a "repair" that
// brings back a copy from another store. The legitimate case, a write
// deleted again before its AUDIT task is processed, is indexed and
// duplicated by the delete's own task.
func TestWriteOfAnAbsentItemIsHistory(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	item := func(id string) contentindex.Item {
		return contentindex.Item{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: id}
	}
	actions := []task.Action{task.ActionAddContent, task.ActionCopyContent, task.ActionSetContentProperties}
	for _, a := range actions {
		id := "ghost-" + string(a)
		tk := add(id, t0, "0123456789abcdef0123456789abcdef")
		tk.Set(task.KeyAction, string(a))
		f.handle(t, tk)
		if r, err := f.index.Get(ctx, item(id)); !errors.Is(err, contentindex.ErrNotFound) {
			t.Errorf("%s of an absent item: index row %+v, %v; want none", a, r, err)
		}
		if got, err := f.log.Latest(ctx, "acme", "1", "photos", id); err != nil || got.Action != a {
			t.Errorf("%s of an absent item: audit entry %+v, %v; want it recorded", a, got, err)
		}
	}
	if n := len(drain(t, f.dups)); n != 0 {
		t.Errorf("writes of absent items queued %d DUP tasks", n)
	}
	if n := f.log.Len(); n != len(actions) {
		t.Errorf("%d audit entries, want %d (one per write)", n, len(actions))
	}

	// Written, then deleted, and only then the write's AUDIT task: history;
	// the delete's own task tombstones the row and duplicates the delete.
	f.handle(t, add("brief", t0, "c1"))
	f.handle(t, task.Audit{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: "brief",
		Action: task.ActionDeleteContent, DateTime: t0.Add(time.Second)}.Task())
	if r := f.row(t, "brief"); !r.Deleted {
		t.Errorf("the delete did not tombstone the row: %+v", r)
	}
	dups := dupsOf(t, drain(t, f.dups))
	if len(dups) != 2 {
		t.Fatalf("%d DUP tasks, want 2 (the delete's)", len(dups))
	}
	for _, d := range dups {
		if d.ContentID != "brief" {
			t.Errorf("DUP = %+v", d)
		}
	}
	if n := f.log.Len(); n != len(actions)+2 {
		t.Errorf("%d audit entries, want %d", n, len(actions)+2)
	}
}
