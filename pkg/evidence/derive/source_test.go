package derive_test

import (
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/evidence"
	"github.com/millfleet/mill/pkg/evidence/derive"
	"github.com/millfleet/mill/pkg/task"
)

// A replication's or repair's source copy is in the store its audit entry
// names; an entry naming none, or naming the copy written itself, says
// the store is unrecorded.
func TestFromEntrySource(t *testing.T) {
	entry := func(user string, action task.Action, source string) auditlog.Entry {
		return auditlog.Entry{Account: "acme", StoreID: "2", SpaceID: "photos", ContentID: "a", Action: action,
			UserID: user, Time: t0, Checksum: md5a, SourceStoreID: source}
	}
	obj := evidence.Copy{Account: "acme", Store: "2", Space: "photos", ContentID: "a"}
	at := func(store string) evidence.Copy { c := obj; c.Store = store; return c }
	dupU, repU := derive.DefaultUsers.Duplication, derive.DefaultUsers.Repair
	for _, tc := range []struct {
		name string
		en   auditlog.Entry
		typ  evidence.EventType
		want evidence.Copy
	}{
		{"replication", entry(dupU, task.ActionAddContent, "1"), evidence.Replication, at("1")},
		{"server-side replication", entry(dupU, task.ActionCopyContent, "1"), evidence.Replication, at("1")},
		{"repair", entry(repU, task.ActionAddContent, "3"), evidence.Repair, at("3")},
		{"entry naming none", entry(dupU, task.ActionAddContent, ""), evidence.Replication, at(derive.Unrecorded)},
		{"entry naming the copy written", entry(dupU, task.ActionAddContent, "2"), evidence.Replication, at(derive.Unrecorded)},
		{"control characters", entry(dupU, task.ActionAddContent, "1\n"), evidence.Replication, at("1\uFFFD")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := derive.FromEntry(tc.en, derive.DefaultUsers)
			if err != nil {
				t.Fatal(err)
			}
			if e == nil || e.Type != tc.typ || e.Source == nil {
				t.Fatalf("event %+v, want a %s with a source", e, tc.typ)
			}
			if *e.Source != tc.want {
				t.Errorf("source %+v, want %+v", *e.Source, tc.want)
			}
		})
	}
	// A copy from another space of the same store keeps the store.
	en := entry(dupU, task.ActionCopyContent, "2")
	en.SourceSpaceID, en.SourceContentID = "old", "b"
	if e, err := derive.FromEntry(en, derive.DefaultUsers); err != nil || *e.Source != (evidence.Copy{Account: "acme", Store: "2", Space: "old", ContentID: "b"}) {
		t.Errorf("copy within the store: %+v, %v", e, err)
	}
	// The source store is event content: an entry naming one is another
	// entry (its hash, so its ID) than one naming none.
	a, _ := derive.FromEntry(entry(dupU, task.ActionAddContent, "1"), derive.DefaultUsers)
	b, _ := derive.FromEntry(entry(dupU, task.ActionAddContent, ""), derive.DefaultUsers)
	if a.ID == b.ID {
		t.Error("entries with and without a source store give one event ID")
	}
}

// A write of the DuraCloud migration (its user) is a replication from the
// DuraCloud store its entry names, by Mill's software, marked a migration;
// its property changes are no event.
func TestFromEntryMigration(t *testing.T) {
	en := auditlog.Entry{Account: "acme", StoreID: "2", SpaceID: "photos", ContentID: "a", Action: task.ActionAddContent,
		UserID: derive.DefaultUsers.Migration, Time: t0, Checksum: md5a, SourceStoreID: "dura"}
	e, err := derive.FromEntry(en, derive.DefaultUsers)
	if err != nil {
		t.Fatal(err)
	}
	if e == nil || e.Type != evidence.Replication || e.Source == nil || e.Source.Store != "dura" ||
		e.Agent.Kind != evidence.Software || e.Agent.Name != "mill-migrate" || !strings.HasPrefix(e.Detail, "migration; ") {
		t.Fatalf("event %+v, want a replication from store dura by mill-migrate, detail migration; …", e)
	}
	en.Action = task.ActionSetContentProperties
	if e, err := derive.FromEntry(en, derive.DefaultUsers); err != nil || e != nil {
		t.Errorf("a property change of the migration: %+v, %v; want no event", e, err)
	}
}
