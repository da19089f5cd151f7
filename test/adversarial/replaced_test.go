package adversarial

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/deadletter"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	"github.com/millfleet/mill/pkg/storage/s3store"
	"github.com/millfleet/mill/pkg/task"
)

// TestReplacedReplicas: replicas whose bytes are replaced behind Mill's
// back with the MD5 Mill recorded kept — an S3 object overwritten by a raw
// PutObject that copies its "mill-md5" metadata, an fs blob swapped under
// its sidecar — are found and repaired from the good copy by the real
// workman, with no dead letter but the forged task's:
//
//   - a DUP task (as the audit processor or the dup producer sends it)
//     does not take the replaced S3 replica for in sync: it copies over it;
//   - a forged AUDIT task repeating the kept recorded MD5 is refused (the
//     copy's checksum is its ETag), recording nothing;
//   - a bit run started by the real bitproducer finds both replaced
//     replicas as copies that differ (case 2, not case 10), the bit-error
//     processor repairs them from store 1 through the audited provider (the
//     audit processor confirms the repair's AUDIT task), and the re-checks
//     record what they saw: case 1 after the repair.
func TestReplacedReplicas(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	testbin.Build(t, "workman")
	producer := testbin.Build(t, "bitproducer")["bitproducer"]
	m := newMill(t, ctx)
	m.writeConfig(nil, nil)

	// The preserved content, on all three stores with its index rows and
	// audit entries (through the audit processor, as Mill's writes are).
	items := map[string]string{"dup-me": "duplicated content", "bit-me": "bit-checked content"}
	for id, body := range items {
		for _, s := range []string{"1", "2", "3"} {
			info := m.put(s, space, id, body)
			size := info.Size
			m.send(queue.KeyAudit, encode(t, task.Audit{Account: "acme", StoreID: s, SpaceID: space, ContentID: id,
				Action: task.ActionAddContent, UserID: "seed", DateTime: time.Now().Add(time.Second), ContentChecksum: info.Checksum,
				ContentMimetype: info.MimeType, ContentSize: &size}.Task()), nil)
		}
	}
	w := m.startWorkman("--recheck-delay", "2s")
	if !m.drained(time.Minute, w) {
		t.Fatal("the seed's AUDIT tasks did not drain")
	}

	// Replace dup-me's S3 replica in store 2, then a DUP 1→2 of it.
	replaceObject(t, m, m.bucket2, "mill/"+space+"/dup-me", "REPLACED duplicated bytes, longer than before")
	if info, err := m.stores["2"].Head(ctx, space, "dup-me"); err != nil || info.Checksum != md5hex(items["dup-me"]) {
		t.Fatalf("store 2's replaced dup-me: %+v, %v; want the original recorded MD5 kept", info, err)
	}
	m.send(queue.KeyDupHigh, encode(t, task.Dup{Account: "acme", StoreID: "1", DestStoreID: "2", SpaceID: space, ContentID: "dup-me"}.Task()), nil)
	if !m.drained(time.Minute, w) {
		t.Fatal("the DUP task did not drain")
	}
	if got, err := m.read("2", space, "dup-me"); err != nil || string(got) != items["dup-me"] {
		t.Fatalf("store 2's dup-me after the DUP: %q, %v; want %q (a replaced replica is not in sync)", got, err, items["dup-me"])
	}

	// Replace bit-me's replicas in stores 2 (S3) and 3 (fs).
	replaceObject(t, m, m.bucket2, "mill/"+space+"/bit-me", "REPLACED bit-checked bytes!")
	replaceBlob(t, m.stores["3"].(*fsstore.Store), space, "bit-me", strings.ToUpper(items["bit-me"]))

	// A forged AUDIT task repeating the kept recorded MD5 of store 2's
	// replaced bit-me, dated after the replacement (a second later: S3
	// keeps whole seconds), cannot make it look captured: the copy's
	// checksum is its ETag, and the task is refused, recording nothing.
	replacedAt, err := m.stores["2"].Head(ctx, space, "bit-me")
	must(t, err)
	testbin.WaitFor(t, 5*time.Second, "a second after the replacement", func() bool {
		return time.Now().Truncate(time.Second).After(replacedAt.Modified)
	})
	size := replacedAt.Size
	forged := m.send(queue.KeyAudit, encode(t, task.Audit{Account: "acme", StoreID: "2", SpaceID: space, ContentID: "bit-me",
		Action: task.ActionAddContent, UserID: "mallory", DateTime: time.Now(), ContentChecksum: md5hex(items["bit-me"]),
		ContentMimetype: "text/plain", ContentSize: &size}.Task()), nil)
	dl := m.deadLetters(1, 30*time.Second, w)
	if len(dl) != 1 || dl[0].MessageID != forged || dl[0].Reason != deadletter.ReasonPermanent ||
		!strings.Contains(dl[0].Error, "not confirmed by the store") || !strings.Contains(dl[0].Error, md5hex("REPLACED bit-checked bytes!")) {
		for _, d := range dl {
			t.Errorf("dead letter %s: %s %s: %.300s", d.MessageID, d.Processor, d.Reason, d.Error)
		}
		t.Fatalf("the forged AUDIT task repeating a contradicted recorded MD5: %d dead letters, want its own, refused as not confirmed", len(dl))
	}

	// A bit run, as the real bitproducer starts it.
	if run := testbin.Run(t, 2*time.Minute, testbin.Spec{Path: producer, Args: []string{"--config-dir", m.conf, "--queue-prefix", m.prefix,
		"--state", filepath.Join(t.TempDir(), "bit-state.json"), "--lease-table", "none"}, Env: m.env()}); run.Err() != nil {
		t.Fatalf("bitproducer: %v\n%s", run.Err(), run.Output())
	}
	testbin.WaitFor(t, 2*time.Minute, "the bit run's repairs", func() bool {
		for _, s := range []string{"2", "3"} {
			if got, err := m.read(s, space, "bit-me"); err != nil || string(got) != items["bit-me"] {
				return false
			}
		}
		return true
	})
	if !m.drained(time.Minute, w) {
		t.Fatal("the bit run did not drain")
	}
	if dl := m.deadLetters(1, 5*time.Second, w); len(dl) != 0 {
		for _, d := range dl {
			t.Errorf("dead letter: %s %s: %.300s", d.Processor, d.Reason, d.Error)
		}
	}

	// What the bit log says: the re-check of each repaired replica, case 1,
	// with the repair it followed; every other copy case 1 as it was.
	rows, _, err := m.bitLog().Results(ctx, bitlog.Filter{Account: "acme", SpaceID: space, Limit: 100})
	must(t, err)
	seen := map[string]bitlog.Row{}
	for _, r := range rows {
		seen[r.StoreID+"/"+r.ContentID] = r
	}
	for _, s := range []string{"1", "2", "3"} {
		for id, body := range items {
			r, ok := seen[s+"/"+id]
			if !ok {
				t.Errorf("no bit log row for %s in store %s", id, s)
				continue
			}
			sum := md5hex(body)
			if r.Result != bitlog.ResultSuccess || r.Case != 1 || r.ContentChecksum != sum || r.StorageChecksum != sum {
				t.Errorf("store %s %s: %s case %d C=%s S=%s (%s); want SUCCESS case 1 with %s", s, id, r.Result, r.Case,
					r.ContentChecksum, r.StorageChecksum, r.Details, sum)
			}
			repaired := s != "1" && id == "bit-me"
			if noted := strings.Contains(r.Details, "re-check after case 2: repaired from store 1"); noted != repaired {
				t.Errorf("store %s %s: details %q; a note of the repair is expected exactly for the replaced replicas", s, id, r.Details)
			}
		}
	}
	w.alive(t)
}

// md5hex is the MD5 of s in hex.
func md5hex(s string) string {
	sum, _, _ := storage.MD5Hex(strings.NewReader(s))
	return sum
}

// replaceObject overwrites an S3 object's bytes with a raw PutObject that
// keeps its metadata ("mill-md5" included) and content type.
func replaceObject(t *testing.T, m *mill, bucket, key, body string) {
	t.Helper()
	h, err := m.s3c.HeadObject(m.ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	must(t, err)
	if h.Metadata[s3store.MetaMD5] == "" {
		t.Fatalf("s3://%s/%s carries no %s", bucket, key, s3store.MetaMD5)
	}
	_, err = m.s3c.PutObject(m.ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
		Body: bytes.NewReader([]byte(body)), Metadata: h.Metadata, ContentType: h.ContentType})
	must(t, err)
}

// replaceBlob swaps an fs item's blob for a new file holding body,
// leaving its sidecar (and the MD5 it records) as it was.
func replaceBlob(t *testing.T, s *fsstore.Store, sp, id, body string) {
	t.Helper()
	path, err := s.BlobPath(sp, id)
	must(t, err)
	tmp := path + ".tmp"
	must(t, os.WriteFile(tmp, []byte(body), 0o644))
	must(t, os.Rename(tmp, path))
}
