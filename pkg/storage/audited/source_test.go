package audited_test

import (
	"context"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/audited"
	"github.com/millfleet/mill/pkg/task"
)

// A provider configured with a source store names it on the tasks of its
// content writes (Put, Copy) and on no other.
func TestSourceStoreOnContentWrites(t *testing.T) {
	ctx := context.Background()
	q := memqueue.New("audit", memqueue.Config{})
	inner, src := newFakeStore(), newFakeStore()
	p, err := audited.New(inner, q, audited.Config{Account: "acct1", StoreID: "2", SourceStoreID: "1", UserID: "mill-duplication"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []storage.Provider{p, src} {
		if err := s.CreateSpace(ctx, "sp"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := src.Put(ctx, "sp", "b", strings.NewReader("hi"), storage.PutOptions{Size: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Put(ctx, "sp", "a", strings.NewReader("hello"), storage.PutOptions{Size: 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Copy(ctx, src, "sp", "b", "sp", "b"); err != nil {
		t.Fatal(err)
	}
	if err := p.SetProperties(ctx, "sp", "a", map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	if err := p.Delete(ctx, "sp", "a"); err != nil {
		t.Fatal(err)
	}
	want := map[task.Action]string{task.ActionCreateSpace: "", task.ActionAddContent: "1", task.ActionCopyContent: "1",
		task.ActionSetContentProperties: "", task.ActionDeleteContent: ""}
	msgs := q.Messages()
	if len(msgs) != len(want) {
		t.Fatalf("%d AUDIT tasks, want %d", len(msgs), len(want))
	}
	for _, m := range msgs {
		tk, err := task.Decode(m.Body)
		if err != nil {
			t.Fatal(err)
		}
		a := task.Action(tk.Get(task.KeyAction))
		if got, ok := tk.Props[task.KeySourceStoreID]; got != want[a] || ok != (want[a] != "") {
			t.Errorf("%s: source-store-id %q (set %v), want %q", a, got, ok, want[a])
		}
	}
}
