package e2e

import (
	"context"
	"fmt"
	"sync"

	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors/bit"
)

// redeliverer makes SQS's at-least-once delivery deterministic for chosen
// items: once an item's first check has recorded its row (its BIT message
// is being deleted) and the repair that check set going is done (for a
// case-7 item, its ADD_CONTENT AUDIT message is being deleted: the audit
// entry is restored), the BIT message is sent again, as SQS redelivers a
// message whose delete kept failing or whose visibility timeout passed
// under load. The redelivered check sees the repaired item (case 1); the
// run's row must keep what the first check found.
type redeliverer struct {
	bitQ queue.Queue
	mu   sync.Mutex
	// items are the chosen items by store/space/content.
	items map[string]*redelivery
}

type redelivery struct {
	needAudit, audited bool
	body               *queue.SendEntry // the first check's message, once it is deleted
	sent               int
}

func newRedeliverer(bitQ queue.Queue, afterCheck, afterAudit []fault) *redeliverer {
	r := &redeliverer{bitQ: bitQ, items: map[string]*redelivery{}}
	for _, f := range afterCheck {
		r.items[f.key()] = &redelivery{}
	}
	for _, f := range afterAudit {
		r.items[f.key()] = &redelivery{needAudit: true}
	}
	return r
}

// Sent returns how many times the item's BIT message was redelivered.
func (r *redeliverer) Sent(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if it := r.items[key]; it != nil {
		return it.sent
	}
	return 0
}

// deleted is told of every message Workman deletes, before it is.
func (r *redeliverer) deleted(ctx context.Context, m *queue.Message) error {
	t, err := task.Decode(m.Body)
	if err != nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	it := r.items[t.Get(task.KeyStoreID)+"/"+t.Get(task.KeySpaceID)+"/"+t.Get(task.KeyContentID)]
	if it == nil || it.sent > 0 {
		return nil
	}
	switch {
	case t.Type == task.TypeBit && t.Attempts == 0 && t.Get(bit.KeyRecheckOf) == "" && it.body == nil:
		it.body = &queue.SendEntry{Body: m.Body, Group: m.Group}
	case t.Type == task.TypeAudit && t.Get(task.KeyUserID) == bit.DefaultUserID:
		it.audited = true
	default:
		return nil
	}
	if it.body == nil || (it.needAudit && !it.audited) {
		return nil
	}
	// Sent while the message that completed the item is not yet deleted,
	// so no queue looks idle in between; a failed send fails the delete,
	// which Workman retries.
	if err := r.bitQ.Send(ctx, *it.body); err != nil {
		return fmt.Errorf("redeliver %s: %w", t, err)
	}
	it.sent++
	return nil
}

// deleteHook tells on of each message before deleting it.
type deleteHook struct {
	queue.Queue
	on func(ctx context.Context, m *queue.Message) error
}

func (q deleteHook) Delete(ctx context.Context, msgs ...*queue.Message) error {
	for _, m := range msgs {
		if err := q.on(ctx, m); err != nil {
			return err
		}
	}
	return q.Queue.Delete(ctx, msgs...)
}
