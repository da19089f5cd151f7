package audit_test

import (
	"context"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/storage"
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
