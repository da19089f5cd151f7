package adversarial

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/workman"
)

// TestDuraCloudLayoutHostileNames: account "dura" keeps its primary store
// in DuraCloud's layout (a bucket per space, <account prefix>.<space>)
// and duplicates it to an s3 store of Mill's layout. Tasks and commands
// naming spaces that would reach another bucket — another space's (upper
// case or a trailing '.', which DuraCloud folds into it), a hidden space,
// another account's, Mill's own bookkeeping, a path — or that DuraCloud's
// rules refuse are refused: Workman dead-letters each DUP and BIT task at
// once as permanent, naming the rule; millctl exits 1 naming it. No
// object of any bucket changes, and no bucket is created.
func TestDuraCloudLayoutHostileNames(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bins := testbin.Build(t, "millctl", "workman")
	m := newMill(t, ctx)

	acct := strings.ToLower(testenv.AccessKeyID())
	other := strings.ToLower(testenv.AccessKeyID())
	books, dest := m.prefix+"dura-books", m.prefix+"dura-dest"
	for _, b := range []string{books, dest, acct + ".photos", acct + ".photos-private", "hidden-" + acct + ".photos", other + ".photos"} {
		_, err := m.s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)})
		must(t, err)
		testenv.CleanupBucket(t, m.s3c, b)
		m.buckets = append(m.buckets, b)
	}
	for _, b := range []string{acct + ".photos", acct + ".photos-private", "hidden-" + acct + ".photos", other + ".photos"} {
		_, err := m.s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("a"), Body: strings.NewReader("content of " + b), ContentType: aws.String("text/plain")})
		must(t, err)
	}
	m.extraAccounts = fmt.Sprintf(`, {"id": "dura", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "s3", "layout": "duracloud", "accountPrefix": %q, "bucket": %q, "prefix": "mill/", "region": "us-east-1"},
  {"id": "2", "kind": "s3", "bucket": %q, "prefix": "mill/", "region": "us-east-1"}]}`, strings.ToUpper(acct), books, dest)
	m.writeConfig([]string{"dura"}, map[string]string{"dura-duplication-policy.json": `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`})
	bucketsBefore := spaceBuckets(t, m, acct)
	before := m.snapshot()

	hostile := []struct{ space, has string }{
		{"Photos", "only lower-case letters"},                    // DuraCloud lower-cases it into photos' bucket
		{"photos.", "ends with '.'"},                             // DuraCloud drops the dot into photos' bucket
		{"photos/../photos-private", "path separator"},           // a path
		{"..", "invalid id"},                                     // the parent
		{".mill-trash", "reserved"},                              // Mill's bookkeeping
		{"9lives", "begins with a lower-case letter"},            // DuraCloud's rule
		{"ph", "3 to 42 characters"},                             // DuraCloud's rule
		{"a..b", `no "..", "-." or ".-"`},                        // DuraCloud's rule
		{"host.9", "the last '.' is not followed by a digit"},    // DuraCloud's rule
		{"ph\x00tos", "control character"},                       // Mill's rule
		{strings.Repeat("p", 43), "3 to 42 characters"},          // DuraCloud's limit
		{"photos-private\n", "control character"},                // Mill's rule
		{"phötos", "only lower-case letters"},                    // DuraCloud's rule
		{"photos-", "it ends with a letter, a digit or '.'"},     // DuraCloud's rule
		{"big-" + strings.Repeat("z", 39), "3 to 42 characters"}, // its bucket name would pass 63
	}
	type sent struct {
		what string
		has  string
	}
	ids := map[string]sent{}
	for _, h := range hostile {
		ids[m.send(queue.KeyDupHigh, dup(t, "dura", "1", "2", h.space, "a"), nil)] = sent{"DUP " + fmt.Sprintf("%q", h.space), h.has}
		ids[m.send(queue.KeyBit, encode(t, task.Bit{Account: "dura", StoreID: "1", SpaceID: h.space, ContentID: "a"}.Task()), nil)] = sent{"BIT " + fmt.Sprintf("%q", h.space), h.has}
	}
	w := m.startWorkman()
	got := map[string]bool{}
	for _, d := range m.deadLetters(len(ids), 90*time.Second, w) {
		s, ok := ids[d.MessageID]
		if !ok {
			t.Errorf("dead letter of no attack: %s %s: %.300s", d.TaskType, d.Reason, d.Error)
			continue
		}
		got[d.MessageID] = true
		if d.Reason != workman.ReasonPermanent || !strings.Contains(d.Error, s.has) {
			t.Errorf("%s: %s %.300q; want %s naming %q", s.what, d.Reason, d.Error, workman.ReasonPermanent, s.has)
		}
	}
	for id, s := range ids {
		if !got[id] {
			t.Errorf("%s: not dead-lettered", s.what)
		}
	}
	w.alive(t)

	// millctl: the same names, refused before any request reaches a bucket.
	for _, h := range hostile {
		if strings.ContainsAny(h.space, "\x00") {
			continue // not an argument a process can be given
		}
		for _, args := range [][]string{
			{"content", "ls", "dura", "1", h.space},
			{"content", "props", "dura", "1", h.space, "a"},
			{"content", "get", "dura", "1", h.space, "a"},
		} {
			code, stdout, stderr := run(t, bins["millctl"], m.env(), args...)
			if code != 1 || !strings.Contains(stderr, h.has) || stdout != "" {
				t.Errorf("millctl %s %q: exit %d, stdout %q, stderr %q; want exit 1 naming %q", args[1], h.space, code, stdout, stderr, h.has)
			}
		}
	}
	// Names of other buckets that are space IDs name a bucket of the
	// account's own (<account prefix>.<name>), which does not exist.
	for _, sp := range []string{"hidden-" + acct + ".photos", other + ".photos"} {
		if code, stdout, stderr := run(t, bins["millctl"], m.env(), "content", "get", "dura", "1", sp, "a"); code != 1 || stdout != "" || !strings.Contains(stderr, "not found") {
			t.Errorf("millctl content get %q: exit %d, stdout %q, stderr %q; want not found", sp, code, stdout, stderr)
		}
	}
	// The account's real spaces, as DuraCloud lists them.
	if code, stdout, stderr := run(t, bins["millctl"], m.env(), "content", "ls", "dura", "1"); code != 0 || stdout != "photos\nphotos-private\n" {
		t.Errorf("millctl content ls dura 1: exit %d %q %s; want photos and photos-private", code, stdout, stderr)
	}

	if d := before.diff(m.snapshot(), func(string) bool { return false }); len(d) > 0 {
		t.Errorf("the hostile names changed the stores:\n%s", strings.Join(d, "\n"))
	}
	if after := spaceBuckets(t, m, acct); !slices.Equal(after, bucketsBefore) {
		t.Errorf("space buckets %q, before %q", after, bucketsBefore)
	}
}

// spaceBuckets lists the buckets whose name holds the account prefix.
func spaceBuckets(t *testing.T, m *mill, acct string) []string {
	t.Helper()
	out, err := m.s3c.ListBuckets(m.ctx, &s3.ListBucketsInput{})
	must(t, err)
	var names []string
	for _, b := range out.Buckets {
		if strings.Contains(aws.ToString(b.Name), acct) {
			names = append(names, aws.ToString(b.Name))
		}
	}
	slices.Sort(names)
	return names
}
