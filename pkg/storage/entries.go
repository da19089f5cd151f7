package storage

import (
	"context"
	"errors"
	"fmt"
	"iter"
)

// Entry is one item of a listing with what the listing itself tells about
// it: its size and storage class (see Info.StorageClass), and the state of
// its restore when the listing reports it (S3 does when asked; RestoreNone
// also means "not reported": Head tells).
type Entry struct {
	ID           string
	Size         int64
	StorageClass string
	Restore      RestoreState
}

// EntryLister is implemented by providers whose listing reports each item's
// size (S3's ListObjectsV2 does): ListEntries is ListContent with sizes and
// storage classes, in the same order and with the same marker, limit and
// errors.
type EntryLister interface {
	ListEntries(ctx context.Context, space, after string, limit int) (entries []Entry, more bool, err error)
}

// WalkEntries iterates over every item of space in byte-wise ascending
// order, starting strictly after `after`, with its size and storage class,
// in pages of pageSize (DefaultPageSize when <= 0); memory is one page.
// When the provider (or the provider a decorator wraps, see Unwrap) is an
// EntryLister, a page is one request; otherwise each listed item is read
// with Head, and an item deleted between the listing and its Head is left
// out, as a later listing would leave it out. An error ends the iteration
// after being yielded once with a zero Entry.
func WalkEntries(ctx context.Context, p Provider, space, after string, pageSize int) iter.Seq2[Entry, error] {
	if pageSize <= 0 {
		pageSize = DefaultPageSize
	}
	page := headPage(p)
	if el, ok := p.(EntryLister); ok {
		page = listerPage(el)
	} else if el, ok := Unwrap(p).(EntryLister); ok {
		page = listerPage(el)
	}
	return func(yield func(Entry, error) bool) {
		marker := after
		for {
			es, last, more, err := page(ctx, space, marker, pageSize)
			if err != nil {
				yield(Entry{}, err)
				return
			}
			for _, e := range es {
				if !yield(e, nil) {
					return
				}
			}
			if !more {
				return
			}
			if last == "" {
				yield(Entry{}, fmt.Errorf("storage: walk %q: provider reported more content after %q but returned none", space, marker))
				return
			}
			marker = last
		}
	}
}

// pageFunc returns one page of entries and the last ID the listing gave
// (the next marker).
type pageFunc func(ctx context.Context, space, after string, limit int) (es []Entry, last string, more bool, err error)

func listerPage(el EntryLister) pageFunc {
	return func(ctx context.Context, space, after string, limit int) ([]Entry, string, bool, error) {
		es, more, err := el.ListEntries(ctx, space, after, limit)
		if err != nil || len(es) == 0 {
			return es, "", more, err
		}
		return es, es[len(es)-1].ID, more, nil
	}
}

// headPage lists with ListContent and reads each item with Head.
func headPage(p Provider) pageFunc {
	return func(ctx context.Context, space, after string, limit int) ([]Entry, string, bool, error) {
		ids, more, err := p.ListContent(ctx, space, after, limit)
		if err != nil || len(ids) == 0 {
			return nil, "", more, err
		}
		out := make([]Entry, 0, len(ids))
		for _, id := range ids {
			info, err := p.Head(ctx, space, id)
			if errors.Is(err, ErrNotFound) {
				continue // deleted since it was listed
			}
			if err != nil {
				return nil, "", false, err
			}
			out = append(out, Entry{ID: id, Size: info.Size, StorageClass: info.StorageClass})
		}
		return out, ids[len(ids)-1], more, nil
	}
}
