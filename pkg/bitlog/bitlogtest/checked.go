package bitlogtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
)

// testChecked: Checked lists the rows checked in [since, until) across
// runs, stores and spaces, by time then key, every row once over pages of
// any size; a replaced row moves to its new time; a bad token is refused.
func testChecked(t *testing.T, l bitlog.Log) {
	c, ok := l.(bitlog.Checked)
	if !ok {
		t.Fatalf("%T does not implement bitlog.Checked", l)
	}
	ctx := context.Background()
	rec := func(run, store, space, id string, at time.Time, res bitlog.Result) {
		t.Helper()
		if err := l.Record(ctx, bitlog.Row{RunID: run, Account: "acme", StoreID: store, SpaceID: space, ContentID: id,
			Result: res, Method: bitlog.MethodRead, CheckedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	const r1, r2 = "20240305T140000Z", "20240405T140000Z"
	rec(r1, "1", "b", "x", t0.Add(-time.Second), bitlog.ResultSuccess) // before the period
	rec(r1, "1", "b", "y", t0, bitlog.ResultSuccess)
	rec(r1, "2", "a", "y", t0, bitlog.ResultFailure) // same instant: key order
	rec(r2, "1", "a", "z", t0.Add(time.Microsecond), bitlog.ResultSuccess)
	rec("", "1", "a", "w", t0.Add(time.Minute), bitlog.ResultError)
	rec(r1, "1", "a", "v", t0.Add(time.Hour), bitlog.ResultSuccess) // at until: out
	want := []string{r1 + ":acme/1/b/y", r1 + ":acme/2/a/y", r2 + ":acme/1/a/z", ":acme/1/a/w"}
	for _, limit := range []int{1, 2, 3, 100} {
		var got []string
		tok := ""
		for pages := 0; ; pages++ {
			if pages > len(want)+1 {
				t.Fatalf("limit %d: the pages do not end", limit)
			}
			rows, next, err := c.Checked(ctx, t0, t0.Add(time.Hour), tok, limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) > limit {
				t.Fatalf("limit %d: page of %d", limit, len(rows))
			}
			for _, r := range rows {
				got = append(got, r.Key())
			}
			if next == "" {
				break
			}
			tok = next
		}
		if len(got) != len(want) {
			t.Fatalf("limit %d: got %q, want %q", limit, got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("limit %d: got %q, want %q", limit, got, want)
			}
		}
	}
	// A redelivered check replaces its row: it is listed at its new time.
	rec(r1, "1", "b", "y", t0.Add(2*time.Hour), bitlog.ResultFailure)
	rows, _, err := c.Checked(ctx, t0.Add(2*time.Hour), t0.Add(3*time.Hour), "", 10)
	if err != nil || len(rows) != 1 || rows[0].Key() != r1+":acme/1/b/y" || rows[0].Result != bitlog.ResultFailure {
		t.Fatalf("replaced row: %+v %v, want its new result at its new time", rows, err)
	}
	if _, _, err := c.Checked(ctx, t0, t0.Add(time.Hour), "not a token!", 10); !errors.Is(err, bitlog.ErrBadPageToken) {
		t.Fatalf("bad token: %v, want ErrBadPageToken", err)
	}
}
