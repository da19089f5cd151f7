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

// testBetween: Between lists the entries of [since, until) of every space
// and store, each once over pages of any size, and refuses a bad token.
func testBetween(t *testing.T, l auditlog.Log) {
	b, ok := l.(auditlog.Between)
	if !ok {
		t.Fatalf("%T does not implement auditlog.Between", l)
	}
	ctx := context.Background()
	put := func(store, space, id string, at time.Time) {
		t.Helper()
		e := entry(id, at, task.ActionAddContent, "0123456789abcdef0123456789abcdef")
		e.StoreID, e.SpaceID = store, space
		if _, err := l.Put(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	put("1", "photos", "early", t0.Add(-time.Millisecond))
	put("1", "photos", "a", t0)
	put("2", "photos", "b", t0.Add(time.Second))
	put("1", "docs", "c", t0.Add(time.Minute))
	put("1", "docs", "late", t0.Add(time.Hour))
	want := []string{"1/docs/c", "1/photos/a", "2/photos/b"}
	for _, limit := range []int{1, 2, 100} {
		var got []string
		tok := ""
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatalf("limit %d: the pages do not end", limit)
			}
			es, next, err := b.Between(ctx, t0, t0.Add(time.Hour), tok, limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(es) > limit {
				t.Fatalf("limit %d: page of %d", limit, len(es))
			}
			for _, e := range es {
				got = append(got, e.StoreID+"/"+e.SpaceID+"/"+e.ContentID)
			}
			if next == "" {
				break
			}
			tok = next
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: got %q, want %q", limit, got, want)
		}
	}
	if _, _, err := b.Between(ctx, t0, t0.Add(time.Hour), "bad!", 10); !errors.Is(err, auditlog.ErrBadPageToken) {
		t.Fatalf("bad token: %v, want ErrBadPageToken", err)
	}
}
