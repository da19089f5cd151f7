package adversarial

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/lease/dynamolease"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	"github.com/millfleet/mill/pkg/storage/s3store"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/producers/looping"
)

// TestStalledSweeps: a registry where one account's store names a
// credentials profile that does not exist, another's source bucket does
// not exist, and a third's fs store holds a space whose record is a
// symbolic link, beside good accounts (acme's S3 and fs stores, and an fs
// account). dupproducer and bitproducer (the real binaries) are run twice
// each: every good space is swept both times, each broken store is named
// in the summary and the logged notification, the exit status is 3, and
// the state resumes nothing broken. Once the registry is fixed, the next
// runs sweep everything and exit 0.
func TestStalledSweeps(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	bins := testbin.Build(t, "dupproducer", "bitproducer")
	m := newMill(t, ctx)
	leaseTable := m.prefix + "leases"
	ddb := m.cfg.DynamoDB()
	testenv.CleanupTable(t, ddb, leaseTable)
	_, err := ddb.CreateTable(ctx, dynamolease.CreateTableInput(leaseTable))
	must(t, err)

	// acme: photos on store 1, duplicated to 2 and 3.
	for _, id := range []string{"a", "b"} {
		m.put("1", space, id, "content "+id)
	}
	extra := t.TempDir()
	fsStore := func(account, id string) (string, storage.Provider) {
		root := filepath.Join(extra, account, id)
		must(t, os.MkdirAll(root, 0o755))
		p, err := fsstore.New(root)
		must(t, err)
		return root, p
	}
	fill := func(p storage.Provider, sp string, ids ...string) {
		must(t, p.CreateSpace(ctx, sp))
		for _, id := range ids {
			_, err := p.Put(ctx, sp, id, strings.NewReader(id), storage.PutOptions{Size: int64(len(id))})
			must(t, err)
		}
	}
	goodRoot1, good1 := fsStore("good", "1")
	goodRoot2, _ := fsStore("good", "2")
	fill(good1, "docs", "d1", "d2", "d3")
	profRoot1, prof1 := fsStore("noprofile", "1")
	fill(prof1, "held", "h1")
	absentBucket, npBucket := m.prefix+"absent", m.prefix+"np"
	_, err = m.s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(npBucket)})
	must(t, err)
	testenv.CleanupBucket(t, m.s3c, npBucket)
	nbRoot2, _ := fsStore("nobucket", "2")
	linkRoot1, link1 := fsStore("linked", "1")
	linkRoot2, _ := fsStore("linked", "2")
	fill(link1, "fine", "f1")
	fill(link1, "bent", "b1")
	record := filepath.Join(linkRoot1, "bent", ".mill-space.json")
	must(t, os.Rename(record, record+".moved"))
	must(t, os.Symlink(record+".moved", record))

	registry := func(profile string) string {
		return fmt.Sprintf(`,
 {"id": "good", "status": "active", "stores": [{"id": "1", "primary": true, "kind": "fs", "root": %q}, {"id": "2", "kind": "fs", "root": %q}]},
 {"id": "noprofile", "status": "active", "stores": [{"id": "1", "primary": true, "kind": "fs", "root": %q},
   {"id": "2", "kind": "s3", "bucket": %q, "prefix": "np/", "region": "us-east-1"%s}]},
 {"id": "nobucket", "status": "active", "stores": [{"id": "1", "primary": true, "kind": "s3", "bucket": %q, "prefix": "nb/", "region": "us-east-1"},
   {"id": "2", "kind": "fs", "root": %q}]},
 {"id": "linked", "status": "active", "stores": [{"id": "1", "primary": true, "kind": "fs", "root": %q}, {"id": "2", "kind": "fs", "root": %q}]}`,
			goodRoot1, goodRoot2, profRoot1, npBucket, profile, absentBucket, nbRoot2, linkRoot1, linkRoot2)
	}
	policy := `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`
	files := map[string]string{}
	listed := []string{"good", "noprofile", "nobucket", "linked"}
	for _, a := range listed {
		files[a+"-duplication-policy.json"] = policy
	}
	m.extraAccounts = registry(`, "profile": "mill-no-such-profile"`)
	m.writeConfig(listed, files)

	// The children read an empty shared config: the profile is missing.
	awsDir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(awsDir, "config"), nil, 0o600))
	must(t, os.WriteFile(filepath.Join(awsDir, "credentials"), nil, 0o600))
	env := append(m.env(), "AWS_CONFIG_FILE="+filepath.Join(awsDir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(awsDir, "credentials"),
		"MILL_LEASE_TABLE="+leaseTable, "MILL_PROGRESS=off", "MILL_FREQUENCY=1s")
	dupState := "s3://" + m.claimsBucket + "/dupproducer.json"
	bitState := "s3://" + m.claimsBucket + "/bitproducer.json"

	run := func(bin string, args ...string) (int, string, string) {
		t.Helper()
		c := testbin.Run(t, 2*time.Minute, testbin.Spec{Path: bins[bin], Args: args, Env: env})
		return c.ExitCode(), c.Stdout(), c.Stderr()
	}
	// taken receives and deletes every message of a queue: the tasks'
	// "account/space/content" (content "" for a space-level task).
	taken := func(key string) map[string]bool {
		t.Helper()
		out := map[string]bool{}
		// Empty when two receives in a row are and the queue's depth
		// says so: a receive may answer empty while messages wait (a
		// loaded emulator; a retried receive whose first answer broke
		// left its messages in flight for the visibility timeout).
		for empty, deadline := 0, time.Now().Add(time.Minute); empty < 2 && time.Now().Before(deadline); {
			r, err := m.sqsc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(m.urls[key]),
				MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
			must(t, err)
			if len(r.Messages) == 0 {
				if m.depth(key) == 0 {
					empty++
				}
				continue
			}
			for _, msg := range r.Messages {
				tk, err := task.Decode([]byte(aws.ToString(msg.Body)))
				must(t, err)
				out[tk.Get(task.KeyAccount)+"/"+tk.Get(task.KeySpaceID)+"/"+tk.Get(task.KeyContentID)] = true
				_, err = m.sqsc.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(m.urls[key]), ReceiptHandle: msg.ReceiptHandle})
				must(t, err)
			}
		}
		return out
	}
	expectAll := func(what string, got map[string]bool, want ...string) {
		t.Helper()
		for _, w := range want {
			if !got[w] {
				keys := slices.Sorted(func(yield func(string) bool) {
					for k := range got {
						if !yield(k) {
							return
						}
					}
				})
				t.Errorf("%s: %s not swept (swept %v)", what, w, keys)
			}
		}
	}
	goodDup := []string{"acme/photos/a", "acme/photos/b", "good/docs/d1", "good/docs/d3"}
	broken := []string{"noprofile/(store 2)", "nobucket/(store 1)", "linked/(store 1)"}
	dupArgs := []string{"--state", dupState, "--config-dir", m.conf}
	for i := 1; i <= 2; i++ {
		code, out, errOut := run("dupproducer", dupArgs...)
		if code != 3 {
			t.Fatalf("dupproducer run %d exited %d, want 3 (failures):\n%s\n%s", i, code, out, testbin.CutLines(errOut, 300))
		}
		for _, b := range broken {
			if !strings.Contains(out, b) || !strings.Contains(errOut, "notification") {
				t.Errorf("dupproducer run %d: %s not in the summary, or no notification:\n%s", i, b, out)
			}
		}
		if !strings.Contains(out, "mill-no-such-profile") || !strings.Contains(out, "NoSuchBucket") || !strings.Contains(out, "symbolic link") {
			t.Errorf("dupproducer run %d: the summary does not say what failed:\n%s", i, out)
		}
		got := taken(queue.KeyDupLow)
		expectAll(fmt.Sprintf("dupproducer run %d", i), got, goodDup...)
		for k := range got {
			if strings.HasPrefix(k, "linked/bent/") || strings.HasPrefix(k, "noprofile/") || strings.HasPrefix(k, "nobucket/") {
				t.Errorf("dupproducer run %d queued %s of a broken store", i, k)
			}
		}
		time.Sleep(1100 * time.Millisecond) // the next run is due a second after this one's start
	}
	bitArgs := []string{"--state", bitState, "--config-dir", m.conf}
	for i := 1; i <= 2; i++ {
		code, out, errOut := run("bitproducer", bitArgs...)
		if code != 3 || !strings.Contains(out, "nobucket/1/(store)") || !strings.Contains(out, "linked/1/(store)") ||
			!strings.Contains(out, "noprofile/2/(store)") {
			t.Fatalf("bitproducer run %d exited %d, want 3 naming the broken stores:\n%s\n%s", i, code, out, testbin.CutLines(errOut, 300))
		}
		reports := taken(queue.KeyBitReport)
		expectAll(fmt.Sprintf("bitproducer run %d reports", i), reports, "acme/photos/", "good/docs/", "noprofile/held/")
		taken(queue.KeyBit)
		time.Sleep(1100 * time.Millisecond)
	}

	// Fixed: the profile dropped, the bucket created, the link replaced.
	m.extraAccounts = registry("")
	m.writeConfig(listed, files)
	_, err = m.s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(absentBucket)})
	must(t, err)
	testenv.CleanupBucket(t, m.s3c, absentBucket)
	nb, err := s3store.New(m.s3c, s3store.Config{Bucket: absentBucket, Prefix: "nb/"})
	must(t, err)
	fill(nb, "late", "l1")
	must(t, os.Remove(record))
	must(t, os.Rename(record+".moved", record))
	code, out, errOut := run("dupproducer", dupArgs...)
	if code != 0 {
		t.Fatalf("dupproducer after the fix exited %d:\n%s\n%s", code, out, testbin.CutLines(errOut, 300))
	}
	expectAll("dupproducer after the fix", taken(queue.KeyDupLow), append(goodDup, "noprofile/held/h1", "nobucket/late/l1", "linked/bent/b1")...)
	code, out, errOut = run("bitproducer", bitArgs...)
	if code != 0 {
		t.Fatalf("bitproducer after the fix exited %d:\n%s\n%s", code, out, testbin.CutLines(errOut, 300))
	}
	expectAll("bitproducer after the fix", taken(queue.KeyBitReport), "nobucket/late/", "linked/bent/", "linked/fine/", "good/docs/")

	// The state is the journal's, and reads back whole.
	st, err := looping.NewS3Store(m.s3c, m.claimsBucket, "dupproducer.json").Load(ctx)
	if err != nil || st.InRun() || len(st.Morsels) == 0 {
		t.Fatalf("dupproducer state: %+v %v", st, err)
	}
}
