package objstore

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestPreserve(t *testing.T) {
	missing, stale, broken := errors.New("missing"), errors.New("stale"), errors.New("broken")
	var reads, copies int
	var copied, forgot string
	copyErrs := []error{stale, stale, nil}
	p := Preserver[int]{
		Read: func(context.Context, string) (*int, error) {
			reads++
			v := reads
			return &v, nil
		},
		Missing: func(err error) bool { return errors.Is(err, missing) },
		Copy: func(_ context.Context, st *int, key, tkey string) error {
			err := copyErrs[copies]
			copies++
			if err == nil {
				copied = tkey
			}
			return err
		},
		Stale:  func(err error) bool { return errors.Is(err, stale) },
		Forget: func(_ context.Context, tkey string) { forgot = tkey },
		What:   "thing",
	}
	have := 0
	undo, err := p.Preserve(t.Context(), "k", "p/", "deleted", &have)
	if err != nil || copies != 3 || reads != 2 || !strings.HasPrefix(copied, "p/") || !strings.HasSuffix(copied, ".deleted") {
		t.Fatalf("after two stale copies: %v, %d copies, %d reads, %q", err, copies, reads, copied)
	}
	if undo(); forgot != copied {
		t.Errorf("undo forgot %q, not %q", forgot, copied)
	}
	p.Read = func(context.Context, string) (*int, error) { return nil, missing }
	copies = 0
	if undo, err := p.Preserve(t.Context(), "k", "p/", "deleted", nil); err != nil || copies != 0 || undo == nil {
		t.Errorf("no object: %v, %d copies", err, copies)
	}
	p.Copy = func(context.Context, *int, string, string) error { return broken }
	if _, err := p.Preserve(t.Context(), "k", "p/", "deleted", &have); !errors.Is(err, broken) || !strings.Contains(err.Error(), "keep the replaced thing recoverable under .mill-trash/") {
		t.Errorf("broken copy: %v", err)
	}
	p.Read = func(context.Context, string) (*int, error) { return &have, nil }
	p.Copy = func(context.Context, *int, string, string) error { copies++; return stale }
	copies = 0
	if _, err := p.Preserve(t.Context(), "k", "p/", "deleted", &have); !errors.Is(err, stale) || copies != 20 {
		t.Errorf("always stale: %v after %d copies", err, copies)
	}
}
