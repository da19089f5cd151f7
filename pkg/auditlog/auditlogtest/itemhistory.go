package auditlogtest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/task"
)

// testItemHistory: ItemHistory lists one item's entries newest first (in
// one millisecond, by action name descending, as Latest orders them),
// each once over pages of any size, none of another item or of the
// space; it refuses a malformed token and one made for another item.
func testItemHistory(t *testing.T, l auditlog.Log) {
	h, ok := l.(auditlog.ItemHistory)
	if !ok {
		t.Fatalf("%T does not implement auditlog.ItemHistory", l)
	}
	ctx := context.Background()
	sum := "0123456789abcdef0123456789abcdef"
	var want []string
	for i, a := range []task.Action{task.ActionAddContent, task.ActionCopyContent, task.ActionSetContentProperties, task.ActionDeleteContent} {
		e := entry("item", t0.Add(time.Duration(i)*time.Minute), a, sum)
		put(t, l, e)
		want = append([]string{string(a)}, want...)
	}
	// Two in the same millisecond: the greater action name first.
	late := t0.Add(time.Hour)
	put(t, l, entry("item", late, task.ActionAddContent, sum))
	put(t, l, entry("item", late, task.ActionSetContentProperties, sum))
	want = append([]string{string(task.ActionSetContentProperties), string(task.ActionAddContent)}, want...)
	// Neighbours: another item (a prefix of it), the space, another store.
	put(t, l, entry("ite", late, task.ActionAddContent, sum))
	put(t, l, entry("item2", late, task.ActionAddContent, sum))
	put(t, l, entry("", late, task.ActionAddContent, ""))
	other := entry("item", late, task.ActionAddContent, sum)
	other.StoreID = "2"
	put(t, l, other)

	var otherTok string
	for _, limit := range []int{1, 2, 5, 100} {
		var got []string
		var times []time.Time
		tok := ""
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatalf("limit %d: the pages do not end", limit)
			}
			es, next, err := h.ItemHistory(ctx, "acme", "1", "photos", "item", tok, limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(es) > limit {
				t.Fatalf("limit %d: page of %d", limit, len(es))
			}
			for _, e := range es {
				if e.Account != "acme" || e.StoreID != "1" || e.SpaceID != "photos" || e.ContentID != "item" {
					t.Fatalf("limit %d: entry of another item: %+v", limit, e)
				}
				got, times = append(got, string(e.Action)), append(times, e.Time)
			}
			if next == "" {
				break
			}
			tok = next
		}
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: got %q, want %q", limit, got, want)
		}
		if !slices.IsSortedFunc(times, func(a, b time.Time) int { return b.Compare(a) }) {
			t.Fatalf("limit %d: not newest first: %v", limit, times)
		}
		if limit == 1 {
			otherTok = tok
		}
	}
	latest, err := l.Latest(ctx, "acme", "1", "photos", "item")
	if err != nil {
		t.Fatal(err)
	}
	if first, _, err := h.ItemHistory(ctx, "acme", "1", "photos", "item", "", 1); err != nil || len(first) != 1 || first[0].Key() != latest.Key() {
		t.Fatalf("the first entry is not Latest's: %v, %v", first, err)
	}
	if es, next, err := h.ItemHistory(ctx, "acme", "1", "photos", "none", "", 10); err != nil || len(es) != 0 || next != "" {
		t.Fatalf("an item without entries: %v %q %v", es, next, err)
	}
	for _, tok := range []string{"garbage!", otherTok} {
		if _, _, err := h.ItemHistory(ctx, "acme", "1", "photos", "item2", tok, 10); !errors.Is(err, auditlog.ErrBadPageToken) {
			t.Errorf("token %q for another item: %v, want ErrBadPageToken", tok, err)
		}
	}
}
