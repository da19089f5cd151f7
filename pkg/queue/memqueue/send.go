package memqueue

import (
	"context"
	"fmt"
	"maps"

	"github.com/millfleet/mill/pkg/queue"
)

func size(e queue.SendEntry) int {
	n := len(e.Body)
	for k, v := range e.Attributes {
		n += len(k) + len(v)
	}
	return n
}

// Send stores the entries. An entry with a delay outside 0..queue.MaxDelay
// or a Group queue.CheckGroup refuses fails with queue.ErrInvalid, one larger than MaxBodyBytes with
// queue.ErrTooLarge; the others are stored.
func (q *Queue) Send(ctx context.Context, entries ...queue.SendEntry) error {
	_, err := q.SendIDs(ctx, entries...)
	return err
}

// SendIDs is Send that also returns the message ID given to each stored
// entry, by index ("" for an entry that failed): what SQS's
// SendMessageBatch answers (internal/testkit/sqsfair serves it).
func (q *Queue) SendIDs(ctx context.Context, entries ...queue.SendEntry) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ids := make([]string, len(entries))
	if len(entries) == 0 {
		return ids, nil
	}
	failed := map[int]error{}
	q.mu.Lock()
	q.countLocked(OpSend, len(entries))
	now := q.cfg.Clock.Now()
	for i, e := range entries {
		if err := q.fault(OpSend, i); err != nil {
			failed[i] = err
			continue
		}
		if err := queue.CheckDelay(e.Delay); err != nil {
			failed[i] = err
			continue
		}
		if err := queue.CheckGroup(e.Group); err != nil {
			failed[i] = err
			continue
		}
		if n := size(e); n > q.cfg.MaxBodyBytes {
			failed[i] = fmt.Errorf("%d bytes > %d: %w", n, q.cfg.MaxBodyBytes, queue.ErrTooLarge)
			continue
		}
		ids[i] = newID()
		q.msgs = append(q.msgs, &message{
			id:        ids[i],
			body:      append([]byte(nil), e.Body...),
			attrs:     maps.Clone(e.Attributes),
			group:     e.Group,
			sentAt:    now,
			visibleAt: now.Add(e.Delay),
		})
	}
	q.notifyLocked()
	q.mu.Unlock()
	if len(failed) > 0 {
		return ids, &queue.BatchError{Op: "send", Failed: failed}
	}
	return ids, nil
}
