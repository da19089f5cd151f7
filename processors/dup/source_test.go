package dup_test

import (
	"context"
	"testing"

	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors/dup"
)

// The AUDIT task of a replicated item names the store it was read from;
// the duplication's other writes (properties, deletions, spaces) name
// none.
func TestAuditNamesSourceStore(t *testing.T) {
	e := setup(t, nil, nil, nil)
	put(t, e.src, "new", "hello", map[string]string{"creator": "bob"})
	put(t, e.src, "props", "same", map[string]string{"creator": "bob"})
	put(t, e.dst, "props", "same", map[string]string{"creator": "eve"})
	put(t, e.dst, "gone", "old", nil)
	ctx := context.Background()
	for _, id := range []string{"new", "props", "gone"} {
		if _, err := e.proc.Process(ctx, dupTask(id)); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	got := map[string]string{}
	for _, m := range e.audit.Messages() {
		tk, err := task.Decode(m.Body)
		if err != nil {
			t.Fatal(err)
		}
		a, err := task.AuditFrom(tk)
		if err != nil {
			t.Fatal(err)
		}
		if a.UserID != dup.UserID || a.StoreID != "2" {
			t.Errorf("AUDIT task of user %q store %q", a.UserID, a.StoreID)
		}
		action := a.Action
		if action == task.ActionCopyContent { // a server-side copy; a streamed one is a put
			action = task.ActionAddContent
		}
		got[string(action)+" "+a.ContentID] = a.SourceStoreID
	}
	want := map[string]string{"ADD_CONTENT new": "1", "SET_CONTENT_PROPERTIES props": "", "DELETE_CONTENT gone": ""}
	for k, v := range want {
		if s, ok := got[k]; !ok || s != v {
			t.Errorf("%s: source store %q (present %v), want %q; all: %v", k, s, ok, v, got)
		}
	}
}
