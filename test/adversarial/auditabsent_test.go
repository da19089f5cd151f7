package adversarial

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/auditlog/dynamoauditlog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/task"
)

// TestForgedWriteOfAbsentItem: AUDIT content writes (ADD_CONTENT,
// COPY_CONTENT, SET_CONTENT_PROPERTIES) for items that are not in store 1,
// sent to a running workman, are history only: each is in the audit log,
// none gets a content-index row (a row a bit report would call missing and
// a repair would bring back) or a copy in stores 2 and 3, and none is a
// dead letter. A real write audited beside them is indexed and duplicated,
// and a write deleted again before its AUDIT task is handled ends as the
// delete's tombstone, whichever task workman takes first.
func TestForgedWriteOfAbsentItem(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	m := newMill(t, ctx)
	m.writeConfig(nil, nil)
	real := m.put("1", space, "real", "real content")
	brief := m.put("1", space, "brief", "written, then deleted")
	must(t, m.stores["1"].Delete(ctx, space, "brief"))
	w := m.startWorkman()
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second))) // after the writes' whole second
	ghosts := map[string]task.Action{"ghost-add": task.ActionAddContent, "ghost-copy": task.ActionCopyContent,
		"ghost-props": task.ActionSetContentProperties}
	for id, a := range ghosts {
		m.send(queue.KeyAudit, audit(t, task.Audit{ContentID: id, Action: a, UserID: "mallory",
			ContentChecksum: "0123456789abcdef0123456789abcdef", ContentMimetype: "text/plain"}), nil)
	}
	m.send(queue.KeyAudit, audit(t, task.Audit{ContentID: "real", Action: task.ActionAddContent, ContentChecksum: real.Checksum}), nil)
	m.send(queue.KeyAudit, audit(t, task.Audit{ContentID: "brief", Action: task.ActionAddContent, ContentChecksum: brief.Checksum,
		DateTime: time.Now().Add(-time.Second)}), nil)
	m.send(queue.KeyAudit, audit(t, task.Audit{ContentID: "brief", Action: task.ActionDeleteContent}), nil)
	if !m.drained(90*time.Second, w) {
		t.Fatalf("the AUDIT tasks did not drain\n%s", w.Output())
	}
	if dl := m.deadLetters(1, 3*time.Second, w); len(dl) != 0 {
		t.Errorf("dead letter: %s %s", dl[0].Reason, dl[0].Error)
	}

	idx, log := pgcontentindex.New(m.db()), dynamoauditlog.New(m.cfg.DynamoDB(), m.table)
	item := func(id string) contentindex.Item {
		return contentindex.Item{Account: "acme", StoreID: "1", SpaceID: space, ContentID: id}
	}
	for id, a := range ghosts {
		if r, err := idx.Get(ctx, item(id)); !errors.Is(err, contentindex.ErrNotFound) {
			t.Errorf("%s of absent %s: content index row %+v, %v; want none", a, id, r, err)
		}
		if e, err := log.Latest(ctx, "acme", "1", space, id); err != nil || e.Action != a || e.UserID != "mallory" {
			t.Errorf("%s of absent %s: audit entry %+v, %v; want the claim recorded as history", a, id, e, err)
		}
		for _, s := range []string{"2", "3"} {
			if _, err := m.stores[s].Head(ctx, space, id); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("store %s has %s: %v", s, id, err)
			}
		}
	}
	if !strings.Contains(w.Output(), "a write of an item not in the store") {
		t.Errorf("workman did not log why the writes were not indexed\n%s", w.Output())
	}
	if r, err := idx.Get(ctx, item("real")); err != nil || r.Deleted || r.Checksum != real.Checksum {
		t.Errorf("the real write's row: %+v, %v", r, err)
	}
	for _, s := range []string{"2", "3"} {
		if b, err := m.read(s, space, "real"); err != nil || string(b) != "real content" {
			t.Errorf("store %s: the real write not duplicated: %q, %v", s, b, err)
		}
	}
	if r, err := idx.Get(ctx, item("brief")); err != nil || !r.Deleted {
		t.Errorf("the deleted write's row: %+v, %v; want the delete's tombstone", r, err)
	}
	w.alive(t)
}
