package bitlogtest

import (
	"fmt"
	"testing"

	"github.com/millfleet/mill/pkg/bitlog"
)

// testSpacePages: the rows of one space in one producer run (what the bit
// report reads, page by page) come in byte-wise content ID order, whole,
// and only theirs, whatever the neighbouring spaces, stores, accounts and
// runs of the same month hold; a result filter and a page token made
// elsewhere keep their meaning (the token is a key of the whole log: the
// rows after it).
func testSpacePages(t *testing.T, l bitlog.Log) {
	const run, other = "20240305T030000Z", "20240306T030000Z" // producer runs of one month
	var want []bitlog.Row
	for i, id := range []string{"x", "Y", "item-02", "a/b", "item-10", "é", "item-1", "Z z"} {
		r := row(run, "a", id, bitlog.ResultSuccess)
		if i%3 == 1 {
			r.Result, r.Case = bitlog.ResultFailure, 3
		}
		r.Bytes = int64(i)
		record(t, l, r)
		want = append(want, r)
	}
	byKey(want)
	for _, n := range []bitlog.Row{row(run, "b", "item-02", bitlog.ResultSuccess), row(run, "A", "x", bitlog.ResultSuccess),
		row(other, "a", "item-03", bitlog.ResultFailure), row(run, "a0", "a", bitlog.ResultFailure)} {
		record(t, l, n)
	}
	n := row(run, "a", "item-04", bitlog.ResultSuccess)
	n.StoreID = "2"
	record(t, l, n)
	n.StoreID, n.Account = "1", "acme2"
	record(t, l, n)

	space := bitlog.Filter{RunID: run, Account: "acme", StoreID: "1", SpaceID: "a"}
	pages := func(f bitlog.Filter) []bitlog.Row {
		t.Helper()
		var out []bitlog.Row
		for i := 0; ; i++ {
			rows, next := results(t, l, f)
			out = append(out, rows...)
			if next == "" {
				return out
			}
			if i > 20 {
				t.Fatalf("%+v: pagination does not end", f)
			}
			f.After = next
		}
	}
	same := func(what string, got, want []bitlog.Row) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s:\n got %v\nwant %v", what, got, want)
		}
	}
	for _, limit := range []int{1, 2, 3, 100} {
		f := space
		f.Limit = limit
		same(fmt.Sprintf("the space in pages of %d", limit), pages(f), want)
	}
	var fails []bitlog.Row
	for _, r := range want {
		if r.Result == bitlog.ResultFailure {
			fails = append(fails, r)
		}
	}
	f := space
	f.Result, f.Limit = bitlog.ResultFailure, 1
	same("the space's failures in pages of 1", pages(f), fails)

	// Tokens of other listings: before the space, inside it, after it.
	for _, k := range []bitlog.PageKey{
		{RunID: run, Account: "acme", StoreID: "1", SpaceID: "", ContentID: "zzz"},
		{RunID: run, Account: "acme", StoreID: "0", SpaceID: "b", ContentID: "a"},
		{RunID: run, Account: "acme", StoreID: "1", SpaceID: "a", ContentID: "item-1"},
		{RunID: run, Account: "acme", StoreID: "1", SpaceID: "a", ContentID: ""},
		{RunID: run, Account: "acme", StoreID: "1", SpaceID: "a0", ContentID: ""},
		{RunID: other, Account: "", StoreID: "", SpaceID: "", ContentID: ""},
		{RunID: "20240304T030000Z", Account: "zz", StoreID: "", SpaceID: "", ContentID: ""},
	} {
		var after []bitlog.Row
		for _, r := range want {
			if k.Less(bitlog.KeyOf(r)) {
				after = append(after, r)
			}
		}
		f := space
		f.After, f.Limit = bitlog.EncodeToken(k), 2
		same(fmt.Sprintf("the space after %+v", k), pages(f), after)
	}
}

// byKey sorts rows by their page key (byte-wise).
func byKey(rows []bitlog.Row) {
	for i := 1; i < len(rows); i++ {
		for j := i; j > 0 && bitlog.KeyOf(rows[j]).Less(bitlog.KeyOf(rows[j-1])); j-- {
			rows[j], rows[j-1] = rows[j-1], rows[j]
		}
	}
}
