package processors

import (
	"context"
	"sync/atomic"
)

type continuationKey struct{}

// WithContinuation returns ctx on which a handler can report (Continue)
// that it queued a continuation of its task, and a function that says
// whether it did. Workman uses it: a task that succeeded by handing its
// work to a continuation (the bit report re-queued to wait for results)
// is not done yet for the record of runs (pkg/runs).
func WithContinuation(ctx context.Context) (context.Context, func() bool) {
	f := new(atomic.Bool)
	return context.WithValue(ctx, continuationKey{}, f), f.Load
}

// Continue reports that the handler queued a continuation of its task
// (a copy that carries on the work); nothing when ctx has no
// WithContinuation.
func Continue(ctx context.Context) {
	if f, ok := ctx.Value(continuationKey{}).(*atomic.Bool); ok {
		f.Store(true)
	}
}
