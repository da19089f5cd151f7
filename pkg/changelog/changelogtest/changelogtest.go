// Package changelogtest is the conformance suite of changelog.Log.
package changelogtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/changelog"
)

// Harness is how the suite makes what one subtest runs on.
type Harness struct {
	// New returns an empty log (required).
	New func(t *testing.T) changelog.Log
}

// Run is the contract of changelog.Log; every implementation runs it with
// a Harness whose New returns an empty log.
func Run(t *testing.T, h Harness) {
	if h.New == nil {
		t.Fatal("changelogtest: Harness.New is required")
	}
	newLog := h.New
	ctx := context.Background()
	t.Run("Invalid", func(t *testing.T) {
		l := newLog(t)
		if _, err := l.Record(ctx, changelog.Change{Action: "policy.save"}); err == nil {
			t.Error("Record without user and target succeeded")
		}
		if _, _, err := l.List(ctx, "../etc/passwd", 10); !errors.Is(err, changelog.ErrBadToken) {
			t.Errorf("List with a forged token = %v, want ErrBadToken", err)
		}
	})
	t.Run("NewestFirstPaged", func(t *testing.T) {
		l := newLog(t)
		base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
		var recorded []changelog.Change
		for i := range 5 {
			c, err := l.Record(ctx, changelog.Change{Time: base.Add(time.Duration(i) * time.Minute), User: "ana", Role: "admin",
				Action: "policy.save", Target: "acme", Summary: "save " + string(rune('a'+i)), Before: "v1", After: "v2"})
			if err != nil {
				t.Fatal(err)
			}
			if c.ID == "" {
				t.Fatal("Record gave no ID")
			}
			recorded = append(recorded, c)
		}
		// Same millisecond: still two entries.
		if _, err := l.Record(ctx, changelog.Change{Time: base, User: "bo", Action: "policy.delete", Target: "acme"}); err != nil {
			t.Fatal(err)
		}
		var got []changelog.Change
		after := ""
		for pages := 0; ; pages++ {
			page, next, err := l.List(ctx, after, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) > 2 || pages > 5 {
				t.Fatalf("page of %d entries (page %d)", len(page), pages)
			}
			got = append(got, page...)
			if next == "" {
				break
			}
			after = next
		}
		if len(got) != 6 {
			t.Fatalf("listed %d entries, want 6", len(got))
		}
		for i := 0; i < 4; i++ {
			if got[i] != recorded[4-i] {
				t.Errorf("entry %d = %+v\nwant %+v", i, got[i], recorded[4-i])
			}
		}
		// The last two share a millisecond: either order.
		if !(got[4] == recorded[0] && got[5].User == "bo") && !(got[5] == recorded[0] && got[4].User == "bo") {
			t.Errorf("last entries = %+v, %+v; want the first save and bo's delete", got[4], got[5])
		}
	})
}
