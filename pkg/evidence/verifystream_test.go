package evidence

import (
	"context"
	"slices"
	"testing"

	"github.com/millfleet/mill/pkg/blob/dirblob"
	"golang.org/x/mod/sumdb/tlog"
)

// TestLeafStreamTilesAndRoots: at sizes around every tile boundary of the
// first two levels, the streaming verifier compares exactly the tiles
// tlog says a tree of that size has (tlog.NewTiles), finds them all as
// the log wrote them, and its root is tlog's.
func TestLeafStreamTilesAndRoots(t *testing.T) {
	if testing.Short() {
		t.Skip("appends 65,793 events")
	}
	ctx := context.Background()
	skey, _ := testKey(t)
	dir := dirblob.New(t.TempDir(), nil)
	l, err := Open(ctx, dir, skey, Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, size := range []int{1, 2, 3, 255, 256, 257, 511, 512, 513, 65535, 65536, 65537, 65793} {
		if _, err := l.Append(ctx, fixityEvents(n, size-n)); err != nil {
			t.Fatal(err)
		}
		n = size
		cp := l.Checkpoint()
		r := &Report{}
		var got []string
		s := &leafStream{ctx: ctx, blobs: dir, r: r, checks: []rootCheck{{cp.Size, cp.Root, "checkpoint", "root differs"}},
			onTile: func(t tlog.Tile) { got = append(got, t.Path()) }}
		ok, err := s.run(cp.Size)
		if err != nil || !ok || !r.OK() {
			t.Fatalf("size %d: ok %v, %v, problems %v", size, ok, err, r.Problems)
		}
		var want []string
		for _, t := range tlog.NewTiles(TileHeight, 0, int64(size)) {
			want = append(want, t.Path())
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("size %d: compared tiles\n%v\nwant\n%v", size, got, want)
		}
		if len(s.checks) != 0 {
			t.Fatalf("size %d: the checkpoint's root was not checked", size)
		}
	}
}
