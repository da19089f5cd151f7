package objstore

import (
	"io"
	"slices"
	"testing"

	"github.com/millfleet/mill/pkg/storage"
)

func TestPage(t *testing.T) {
	p := NewPage("b", 2)
	var full bool
	for _, id := range []string{"", "a", "b", "c", "d", "e"} {
		if full = p.Add(id); full {
			break
		}
	}
	if !full || !slices.Equal(p.IDs, []string{"c", "d"}) {
		t.Errorf("page after b, limit 2: %q, full %v", p.IDs, full)
	}
	if p := NewPage("", 0); p.Limit != storage.DefaultPageSize || p.IDs == nil || p.Add("x") || len(p.IDs) != 1 {
		t.Errorf("default page: %+v", p)
	}
}

func TestClampRange(t *testing.T) {
	for _, tc := range []struct{ off, n, size, wantOff, wantN int64 }{
		{0, -1, 10, 0, 10},
		{3, 4, 10, 3, 4},
		{8, 4, 10, 8, 2},
		{12, 4, 10, 10, 0},
		{12, -1, 10, 10, 0},
	} {
		if off, n := ClampRange(tc.off, tc.n, tc.size); off != tc.wantOff || n != tc.wantN {
			t.Errorf("ClampRange(%d, %d, %d) = %d, %d", tc.off, tc.n, tc.size, off, n)
		}
	}
}

func TestGetCurrent(t *testing.T) {
	tries := 0
	_, _, err := GetCurrent(func() (io.ReadCloser, *storage.Info, error) {
		tries++
		if tries < 3 {
			return nil, nil, storage.ErrChanged
		}
		return nil, &storage.Info{}, nil
	})
	if err != nil || tries != 3 {
		t.Errorf("GetCurrent after two rewrites: %v, %d tries", err, tries)
	}
	tries = 0
	if _, _, err := GetCurrent(func() (io.ReadCloser, *storage.Info, error) { tries++; return nil, nil, storage.ErrChanged }); err == nil || tries != 20 {
		t.Errorf("GetCurrent always changed: %v, %d tries", err, tries)
	}
}
