package audit_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/audit"
)

// TestS3EventPrincipalIsAClaim: an S3 event's principal, which a forged
// event sets, is recorded as the event's claim ("s3-event:…"), never as
// the user it names (here Mill's own bit-error processor).
func TestS3EventPrincipalIsAClaim(t *testing.T) {
	f := setup(t)
	f.prov.items["photos/a"] = &storage.Info{ContentID: "a", ProviderChecksum: "md5:0cc175b9c0f1b6a831c399e269772661", Size: 1}
	body := strings.Replace(s3Body("acme-1", "m/photos/a", "ObjectCreated:Put", t0), `"eventName"`,
		`"userIdentity":{"principalId":"mill-biterror\n"},"eventName"`, 1)
	f.handle(t, decode(t, body))
	got, err := f.log.Latest(context.Background(), "acme", "1", "photos", "a")
	if err != nil || got.UserID != "s3-event:mill-biterror?" {
		t.Fatalf("entry = %+v, %v; want the user s3-event:mill-biterror?", got, err)
	}
}

// TestForgedCreateSpaceRefused: a CREATE_SPACE of a space the store does
// not have is refused before it is recorded, duplicated or announced to
// operators.
func TestForgedCreateSpaceRefused(t *testing.T) {
	f := setup(t)
	err := f.p.Handle(context.Background(), task.Audit{Account: "acme", StoreID: "1", SpaceID: "ghost", Action: task.ActionCreateSpace,
		UserID: "admin", DateTime: t0}.Task())
	if !processors.IsPermanent(err) || !errors.Is(err, audit.ErrNotConfirmed) || !strings.Contains(err.Error(), "the space does not exist") {
		t.Fatalf("err = %v, want a permanent ErrNotConfirmed", err)
	}
	if len(f.notifier.spaces) != 0 || len(drain(t, f.dups)) != 0 {
		t.Errorf("a forged CREATE_SPACE was announced (%v) or duplicated", f.notifier.spaces)
	}
	if _, err := f.log.Latest(context.Background(), "acme", "1", "ghost", ""); err == nil {
		t.Error("a forged CREATE_SPACE was recorded in the audit log")
	}
}
