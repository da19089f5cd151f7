package fixity_test

import (
	"context"
	"slices"
	"strings"

	"github.com/millfleet/mill/pkg/bitlog"
)

// fakeVerdicts is a bitlog.Verdicts over a fixed list, sorted by content
// id, per space ("account/store/space"); it counts its calls and the
// largest page it returned.
type fakeVerdicts struct {
	bySpace map[string][]bitlog.Verdict
	calls   int
	maxPage int
}

func (f *fakeVerdicts) put(space string, vs ...bitlog.Verdict) {
	if f.bySpace == nil {
		f.bySpace = map[string][]bitlog.Verdict{}
	}
	all := append(f.bySpace[space], vs...)
	slices.SortFunc(all, func(a, b bitlog.Verdict) int { return strings.Compare(a.ContentID, b.ContentID) })
	f.bySpace[space] = all
}

func (f *fakeVerdicts) Verdicts(_ context.Context, account, storeID, spaceID, after string, limit int) ([]bitlog.Verdict, bool, error) {
	f.calls++
	n := bitlog.PageSize(limit)
	var out []bitlog.Verdict
	for _, v := range f.bySpace[account+"/"+storeID+"/"+spaceID] {
		if v.ContentID <= after {
			continue
		}
		if len(out) == n {
			return out, true, nil
		}
		out = append(out, v)
	}
	f.maxPage = max(f.maxPage, len(out))
	return out, false, nil
}
