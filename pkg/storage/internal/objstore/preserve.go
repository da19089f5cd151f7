package objstore

import (
	"context"
	"fmt"
	"time"
)

// Preserver is how a provider without service versions keeps an object
// recoverable before it is deleted or replaced: a server-side copy of its
// state S (what the service reports of it) to a trash name.
type Preserver[S any] struct {
	// Read returns the object's state; an error Missing accepts means
	// there is no object.
	Read    func(ctx context.Context, key string) (*S, error)
	Missing func(err error) bool
	// Copy copies the object in state st to tkey, failing when st is no
	// longer current; an error Stale accepts is such a failure.
	Copy  func(ctx context.Context, st *S, key, tkey string) error
	Stale func(err error) bool
	// Forget removes a copy on a best-effort basis.
	Forget func(ctx context.Context, tkey string)
	// What the service calls an object, in errors ("blob").
	What string
}

// Preserve copies the object at key, in state have (nil: read it; no
// object, as for a first write, is nothing to keep), to a new trash name
// under prefix (Layout.TrashItemPrefix) for reason. A concurrent writer
// may replace the state read before it is copied (then that writer kept
// it): the current state is read and copied instead, 20 tries in all.
// undo removes the copy, for when the replacement then fails.
func (p Preserver[S]) Preserve(ctx context.Context, key, prefix, reason string, have *S) (undo func(), err error) {
	undo = func() {}
	for try := 0; ; try++ {
		if have == nil {
			have, err = p.Read(ctx, key)
			if p.Missing(err) {
				return undo, nil
			}
			if err != nil {
				return undo, err
			}
		}
		tkey := prefix + TrashName(time.Now(), RandHex(), reason)
		err := p.Copy(ctx, have, key, tkey)
		if err == nil {
			return func() { p.Forget(ctx, tkey) }, nil
		}
		if try == 19 || !p.Stale(err) {
			return undo, fmt.Errorf("keep the replaced %s recoverable under %s: %w", p.What, TrashPrefix, err)
		}
		have = nil
	}
}
