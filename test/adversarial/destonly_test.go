package adversarial

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/task"
)

// TestDestinationOnlySpaces runs the real dupproducer and workman over
// two spaces that exist only on secondary stores, both covered by the
// policy's defaults: "userspace", which a user made directly on store 2,
// and "photos", which Mill duplicated from store 1 to stores 2 and 3
// before its source item and space were deleted. The producer's sweeps
// leave the user's space and item alone; what Mill put on stores 2 and 3
// is deleted, and then its spaces.
func TestDestinationOnlySpaces(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	testbin.Build(t, "workman")
	dp := testbin.Build(t, "dupproducer")["dupproducer"]
	m := newMill(t, ctx)
	m.writeConfig(nil, nil)
	m.put("2", "userspace", "mine", "a user's own content")
	info := m.put("1", space, "a", "alpha content")
	w := m.startWorkman()
	m.send(queue.KeyAudit, audit(t, task.Audit{ContentID: "a", Action: task.ActionAddContent, ContentChecksum: info.Checksum}), nil)
	if !m.drained(60*time.Second, w) {
		t.Fatal("the AUDIT task and its duplication did not drain")
	}
	for _, s := range []string{"2", "3"} {
		if b, err := m.read(s, space, "a"); err != nil || string(b) != "alpha content" {
			t.Fatalf("store %s: a not duplicated: %q %v", s, b, err)
		}
	}
	// The source item and space go, as DuraStore deletes them.
	must(t, m.stores["1"].Delete(ctx, space, "a"))
	must(t, m.stores["1"].DeleteSpace(ctx, space))
	m.send(queue.KeyAudit, audit(t, task.Audit{ContentID: "a", Action: task.ActionDeleteContent}), nil)
	if !m.drained(60*time.Second, w) {
		t.Fatal("the DELETE_CONTENT did not drain")
	}
	m.send(queue.KeyAudit, audit(t, task.Audit{Action: task.ActionDeleteSpace}), nil)
	if !m.drained(60*time.Second, w) {
		t.Fatal("the DELETE_SPACE did not drain")
	}

	state := filepath.Join(t.TempDir(), "state.json")
	for run := 1; run <= 2; run++ { // the space goes once its items have: in this run or the next
		c := testbin.Run(t, 2*time.Minute, testbin.Spec{Path: dp, Args: []string{"--frequency", "0", "--progress", "off",
			"--lease-table", "none", "--state", state, "--queue", queue.KeyDupLow}, Env: m.env()})
		if c.Err() != nil {
			t.Fatalf("dupproducer: %v\n%s", c.Err(), c.Output())
		}
		if !m.drained(90*time.Second, w) {
			t.Fatal("the DUP tasks did not drain")
		}
		must(t, os.Remove(state)) // a new run next time (--frequency 0: one run)
	}
	if b, err := m.read("2", "userspace", "mine"); err != nil || string(b) != "a user's own content" {
		t.Errorf("the user's item on store 2: %q %v", b, err)
	}
	if _, err := m.stores["2"].SpaceACLs(ctx, "userspace"); err != nil {
		t.Errorf("the user's space on store 2: %v", err)
	}
	for _, s := range []string{"2", "3"} {
		if _, err := m.stores[s].SpaceACLs(ctx, space); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("store %s: Mill's space %s still there (%v)", s, space, err)
		}
	}
}
