package spacestats_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/spacestats"
)

func TestGroups(t *testing.T) {
	at := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	rows := []spacestats.Stats{
		{RunID: "r1", Account: "acme", StoreID: "1", SpaceID: "a", Items: 1, Bytes: 10, Measured: at},
		{RunID: "r2", Account: "acme", StoreID: "1", SpaceID: "b", Items: 2, Bytes: 20, Measured: at.Add(time.Hour)},
		{RunID: "r1", Account: "acme", StoreID: "2", SpaceID: "a", Items: 3, Bytes: 30, Measured: at},
		{RunID: "r1", Account: "beta", StoreID: "1", SpaceID: "a", Items: 4, Bytes: 40, Measured: at},
	}
	show := func(gs []spacestats.Group) string {
		var b strings.Builder
		for _, g := range gs {
			fmt.Fprintf(&b, "%s/%s/%s:%d:%d:%d:%s ", g.Account, g.StoreID, g.SpaceID, g.Spaces, g.Items, g.Bytes, g.RunID)
		}
		return b.String()
	}
	for level, want := range map[spacestats.Level]string{
		spacestats.ByAccount: "acme//:3:6:60:r2 beta//:1:4:40:r1 ",
		spacestats.ByStore:   "acme/1/:2:3:30:r2 acme/2/:1:3:30:r1 beta/1/:1:4:40:r1 ",
		spacestats.BySpace:   "acme/1/a:1:1:10:r1 acme/1/b:1:2:20:r2 acme/2/a:1:3:30:r1 beta/1/a:1:4:40:r1 ",
	} {
		if got := show(spacestats.Groups(rows, level)); got != want {
			t.Errorf("by %s: %q, want %q", level, got, want)
		}
	}
	if _, err := spacestats.ParseLevel("bucket"); err == nil {
		t.Error("ParseLevel(bucket) accepted")
	}
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 5 << 30: "5.0 GiB", 3 << 40: "3.0 TiB"} {
		if got := spacestats.FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
