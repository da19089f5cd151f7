package auditlog

import (
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/task"
)

// An entry without a source store keeps the hash (so the key) it had
// before entries recorded one, and an entry with one is another event.
func TestHashSourceStore(t *testing.T) {
	size := int64(3)
	e := Entry{Account: "acme", StoreID: "2", SpaceID: "photos", ContentID: "a", Action: task.ActionCopyContent, UserID: "mill-duplication",
		Time: time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC), Checksum: "0cc175b9c0f1b6a831c399e269772661", Size: &size,
		SourceSpaceID: "photos", SourceContentID: "a", StoreType: "s3"}
	before := EventHash(e.UserID, e.Checksum, e.MimeType, "3", jsonMap(e.Properties), jsonMap(e.SpaceACLs),
		e.SourceSpaceID, e.SourceContentID, e.StoreType)
	if got := e.Hash(); got != before {
		t.Errorf("hash without a source store %s, want the former %s", got, before)
	}
	e.SourceStoreID = "1"
	with := e.Hash()
	if with == before {
		t.Error("the source store does not change the hash")
	}
	e.SourceStoreID = "3"
	if e.Hash() == with {
		t.Error("two source stores give one hash")
	}
	if got := FromAudit(task.Audit{Account: "acme", SourceStoreID: "1"}); got.SourceStoreID != "1" {
		t.Errorf("FromAudit dropped the source store: %+v", got)
	}
}
