package adversarial

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/claimcheck"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/workman"
)

// attack is one hostile input and the dead letter it must end in.
type attack struct {
	name  string
	queue string
	body  string
	attrs map[string]string
	// reason is the dead letter's reason; has, substrings of its error
	// that name the rule broken.
	reason string
	has    []string
}

// dup, bit, bitError, bitReport and audit build task bodies.
func dup(t *testing.T, account, src, dst, sp, content string) string {
	return encode(t, task.Dup{Account: account, StoreID: src, DestStoreID: dst, SpaceID: sp, ContentID: content}.Task())
}

func audit(t *testing.T, a task.Audit) string {
	if a.Account == "" {
		a.Account, a.StoreID, a.SpaceID = "acme", "1", space
	}
	if a.DateTime.IsZero() {
		a.DateTime = time.Now()
	}
	return encode(t, a.Task())
}

// s3Event is an S3 notification of one record.
func s3Event(event, bucket, key string, at time.Time) string {
	return `{"Records":[{"eventVersion":"2.1","eventSource":"aws:s3","awsRegion":"us-east-1","eventTime":"` + at.UTC().Format(time.RFC3339Nano) + `",` +
		`"eventName":"` + event + `","userIdentity":{"principalId":"AWS:FORGER"},` +
		`"s3":{"s3SchemaVersion":"1.0","bucket":{"name":"` + bucket + `","arn":"arn:aws:s3:::` + bucket + `"},` +
		`"object":{"key":"` + key + `","size":3,"eTag":"acbd18db4cc2f85cedef654fccc4a4d8","sequencer":"0A1B2C3D4E5F678901"}}}]}`
}

// TestAdversarialInputs sends every attack to a running workman and checks
// that each is dead-lettered naming its rule, that nothing outside the
// good task's item changed (byte for byte, every object version and every
// file), that the preserved items are all there, and that workman is alive
// and processes a good task sent last.
func TestAdversarialInputs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	built := time.Now()
	testbin.Build(t, "workman")
	start := time.Now()
	t.Logf("built workman in %v", start.Sub(built).Round(time.Millisecond))
	m := newMill(t, ctx)

	// Accounts for the configuration attacks, each with filesystem stores
	// compared like the rest.
	extra := t.TempDir()
	m.dirs = append(m.dirs, extra)
	var accounts []string
	for _, a := range []string{"globex", "loop", "fan", "bloat", "chain"} {
		var ss []string
		for i := 1; i <= 3; i++ {
			root := filepath.Join(extra, a, fmt.Sprint(i))
			must(t, os.MkdirAll(root, 0o755))
			ss = append(ss, fmt.Sprintf(`{"id": "%d", %s"kind": "fs", "root": %q}`, i, map[bool]string{true: `"primary": true, `}[i == 1], root))
		}
		accounts = append(accounts, fmt.Sprintf(`{"id": %q, "status": "active", "stores": [%s]}`, a, strings.Join(ss, ", ")))
	}
	m.extraAccounts = ", " + strings.Join(accounts, ", ")
	sp := func(src, dst string) string { return fmt.Sprintf(`{"srcStoreId": %q, "destStoreId": %q}`, src, dst) }
	// A policy over the 4 MiB limit: valid JSON, a long ignore list.
	var bloat strings.Builder
	bloat.WriteString(`{"defaultPolicies": [` + sp("1", "2") + `], "spacesToIgnore": [`)
	for i := 0; bloat.Len() < 5<<20; i++ {
		fmt.Fprintf(&bloat, `"ignored-%07d", `, i)
	}
	bloat.WriteString(`"last"]}`)
	m.writeConfig([]string{"loop", "fan", "bloat", "chain"}, map[string]string{
		"globex-duplication-policy.json": `{"defaultPolicies": [` + sp("1", "2") + `]}`,
		"loop-duplication-policy.json":   `{"defaultPolicies": [` + sp("1", "2") + `, ` + sp("2", "1") + `]}`,
		"fan-duplication-policy.json":    `{"defaultPolicies": [` + sp("1", "3") + `, ` + sp("2", "3") + `]}`,
		"bloat-duplication-policy.json":  bloat.String(),
		"chain-duplication-policy.json":  `{"defaultPolicies": [` + sp("1", "2") + `, ` + sp("2", "3") + `]}`,
	})
	chain := func(store string) storage.Provider {
		p, err := fsstore.New(filepath.Join(extra, "chain", store))
		must(t, err)
		return p
	}
	must(t, chain("1").CreateSpace(ctx, "s"))
	var err error
	c2 := chain("2")
	must(t, c2.CreateSpace(ctx, "s"))
	_, err = c2.Put(ctx, "s", "keep", strings.NewReader("chain middle"), storage.PutOptions{Size: 12})
	must(t, err)

	// The preserved content: photos/a, b, c on all three stores, in sync.
	items := map[string]string{"a": "alpha content", "b": "bravo content", "c": "charlie content"}
	for id, body := range items {
		for _, s := range []string{"1", "2", "3"} {
			m.put(s, space, id, body)
		}
	}
	live, err := m.stores["1"].Head(ctx, space, "a")
	must(t, err)
	// A space of store 1 whose directory in store 3 is a symbolic link to
	// the outside, and a sidecar in store 3 forged to name a file outside.
	m.put("1", "linked", "x", "x content")
	must(t, os.WriteFile(filepath.Join(m.outside, "secret"), []byte("outside the store"), 0o644))
	must(t, os.Symlink(m.outside, filepath.Join(m.root3, "linked")))
	forgeSidecar(t, m.root3, space, "b", "../../outside/secret")
	// Item c's blob in store 3 replaced by a symbolic link to the outside.
	linkBlob(t, m.root3, space, "c", filepath.Join(m.outside, "secret"))
	// Objects outside any store: a bystander bucket and the producers'
	// state file in the claims bucket.
	bystander := m.prefix + "bystander"
	_, err = m.s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bystander), Key: aws.String("mill/photos/a"), Body: strings.NewReader("not a store")})
	must(t, err)
	const stateKey = "state/dupproducer.json"
	_, err = m.s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(m.claimsBucket), Key: aws.String(stateKey), Body: strings.NewReader(`{"cursor":"acme/photos"}`)})
	must(t, err)

	// A claim-checked task in flight whose reference a forger copies
	// into a message of its own (raw SQS, attributes and all).
	claimed, err := m.claims.Open(ctx, m.sqsc, m.s3c, queue.Name(m.prefix, queue.KeyDupLow), sqsqueue.Config{})
	must(t, err)
	big := encode(t, task.New(task.TypeNoop, map[string]string{"id": "claimed-original", "pad": strings.Repeat("p", 300<<10)}))
	must(t, claimed.Send(ctx, queue.SendEntry{Body: []byte(big)}))
	raw, err := m.sqsc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(m.urls[queue.KeyDupLow]), MaxNumberOfMessages: 1,
		WaitTimeSeconds: 2, MessageAttributeNames: []string{"All"}})
	must(t, err)
	if len(raw.Messages) != 1 {
		t.Fatalf("receive the claim-checked task: %d messages", len(raw.Messages))
	}
	orig := raw.Messages[0]
	claimKey := aws.ToString(orig.MessageAttributes[claimcheck.AttrRef].StringValue)

	// The endpoint rules, through the real binary: a registry naming the
	// metadata address, plain http and a foreign endpoint without its own
	// credentials is refused before anything is received.
	endpointAttack(t, m)

	// The forged tasks' times must be after the seed's writes as S3 keeps
	// them (whole seconds): an event no later than an item's last write
	// is history, recorded and not acted on.
	if d := time.Until(time.Now().Truncate(time.Second).Add(time.Second)); d > 0 {
		time.Sleep(d)
	}
	before := m.snapshot()
	t.Logf("set up in %v; %d objects and files under watch", time.Since(start).Round(time.Millisecond), len(before))

	lower := strings.Repeat("d/", 5<<10)
	now := time.Now()
	hugeProps := map[string]string{}
	for i := range 4000 {
		hugeProps[fmt.Sprintf("property-%04d", i)] = strings.Repeat("v", 100)
	}
	attacks := []attack{
		// Forged DUP tasks: the policies in force decide, not the message.
		{"DUP against the policy (2→1) deleting the primary's item", queue.KeyDupHigh, dup(t, "acme", "2", "1", space, "a"), nil,
			workman.ReasonPermanent, []string{"policy: no-store-policy", "2→1"}},
		{"space-level DUP 2→1", queue.KeyDupLow, dup(t, "acme", "2", "1", space, ""), nil, workman.ReasonPermanent, []string{"policy: no-store-policy"}},
		{"DUP 3→1 of an item store 1 lacks", queue.KeyDupHigh, dup(t, "acme", "3", "1", space, "nope"), nil, workman.ReasonPermanent, []string{"policy: no-store-policy"}},
		{"DUP in a system space", queue.KeyDupHigh, dup(t, "acme", "1", "2", "x-work", "a"), nil, workman.ReasonPermanent, []string{"policy: system-space"}},
		{"DUP in an ignored space", queue.KeyDupLow, dup(t, "acme", "1", "2", "scratch", "a"), nil, workman.ReasonPermanent, []string{"policy: ignored-space"}},
		{"DUP of an account not listed", queue.KeyDupHigh, dup(t, "globex", "1", "2", space, "a"), nil, workman.ReasonPermanent, []string{"policy: account-not-listed"}},
		{"DUP of an unknown account", queue.KeyDupHigh, dup(t, "ghost", "1", "2", space, "a"), nil, workman.ReasonPermanent, []string{"policy: account-not-listed"}},
		{"DUP to an unregistered store", queue.KeyDupHigh, dup(t, "acme", "1", "9", space, "a"), nil, workman.ReasonPermanent, []string{"policy: no-store-policy", "1→9"}},
		{"DUP from a store to itself", queue.KeyDupHigh, dup(t, "acme", "1", "1", space, "a"), nil, workman.ReasonPermanent, []string{`source and destination are both store "1"`}},
		{"DUP deleting from the middle of a chain", queue.KeyDupHigh, dup(t, "chain", "1", "2", "s", "keep"), nil, workman.ReasonPermanent, []string{"policy: source-store"}},
		// Hostile IDs.
		{"DUP with a ../ content ID", queue.KeyDupHigh, dup(t, "acme", "1", "3", space, "../../outside/secret"), nil, workman.ReasonPermanent, []string{`".." segment`}},
		{"DUP with a ../ space ID", queue.KeyDupHigh, dup(t, "acme", "1", "3", "..", "outside"), nil, workman.ReasonPermanent, []string{"invalid id"}},
		{"DUP with a NUL content ID", queue.KeyDupHigh, dup(t, "acme", "1", "2", space, "a\x00b"), nil, workman.ReasonPermanent, []string{"control character"}},
		{"DUP with a 10 KiB content ID", queue.KeyDupHigh, dup(t, "acme", "1", "2", space, lower), nil, workman.ReasonPermanent, []string{"limit 1024"}},
		{"BIT with a space ID holding a slash", queue.KeyBit, encode(t, task.Bit{Account: "acme", StoreID: "1", SpaceID: "a/b", ContentID: "x"}.Task()), nil,
			workman.ReasonPermanent, []string{"invalid id"}},
		{"BIT_REPORT of an unknown account", queue.KeyBitReport, encode(t, task.BitReport{Account: "ghost", StoreID: "1", SpaceID: space, RunID: "r1"}.Task()), nil,
			workman.ReasonPermanent, []string{`unknown account "ghost"`}},
		// The filesystem store's symbolic links and forged sidecars.
		{"DUP into a symlinked space of the fs store", queue.KeyDupHigh, dup(t, "acme", "1", "3", "linked", "x"), nil, workman.ReasonPermanent, []string{"fsstore: refused", "symbolic link"}},
		{"DUP over an item whose sidecar names a file outside", queue.KeyDupHigh, dup(t, "acme", "1", "3", space, "b"), nil, workman.ReasonPermanent, []string{"fsstore: refused"}},
		{"BIT of an item whose blob is a symbolic link", queue.KeyBit, encode(t, task.Bit{Account: "acme", StoreID: "3", SpaceID: space, ContentID: "c"}.Task()), nil,
			workman.ReasonPermanent, []string{"fsstore: refused"}},
		// A forged repair: the copy agrees with the consensus as it is now.
		{"BIT_ERROR repair of a good copy", queue.KeyBitError, encode(t, task.BitError{Account: "acme", StoreID: "2", SpaceID: space, ContentID: "a", Case: 2,
			InternallyResolvable: true, ContentChecksum: "00000000000000000000000000000000", StorageChecksum: live.Checksum}.Task()), nil,
			workman.ReasonPermanent, []string{"biterror: refused by the observation rule"}},
		// Forged AUDIT tasks and S3 events: checked against the store.
		{"AUDIT DELETE_CONTENT of a live item", queue.KeyAudit, audit(t, task.Audit{ContentID: "a", Action: task.ActionDeleteContent}), nil,
			workman.ReasonPermanent, []string{"audit: not confirmed by the store", "the item exists"}},
		{"AUDIT DELETE_SPACE of a live space", queue.KeyAudit, audit(t, task.Audit{Action: task.ActionDeleteSpace}), nil,
			workman.ReasonPermanent, []string{"audit: not confirmed by the store", "the space exists"}},
		{"AUDIT ADD_CONTENT with a false checksum", queue.KeyAudit, audit(t, task.Audit{ContentID: "a", Action: task.ActionAddContent, ContentChecksum: "0123456789abcdef0123456789abcdef"}), nil,
			workman.ReasonPermanent, []string{"audit: not confirmed by the store", "checksum"}},
		{"AUDIT of an unregistered store", queue.KeyAudit, audit(t, task.Audit{Account: "acme", StoreID: "9", SpaceID: space, ContentID: "a", Action: task.ActionDeleteContent}), nil,
			workman.ReasonPermanent, []string{`unknown store "9"`}},
		{"AUDIT with a huge property map", queue.KeyAudit, audit(t, task.Audit{ContentID: "a", Action: task.ActionSetContentProperties, ContentProperties: hugeProps}), nil,
			workman.ReasonPermanent, []string{"too large"}},
		{"S3 ObjectRemoved for a live object", queue.KeyAudit, s3Event("ObjectRemoved:Delete", m.bucket1, "mill/photos/a", now), nil,
			workman.ReasonPermanent, []string{"s3event: not confirmed by HEAD"}},
		{"S3 event for an unregistered bucket", queue.KeyAudit, s3Event("ObjectCreated:Put", bystander, "mill/photos/a", now), nil,
			workman.ReasonPermanent, []string{"no store is registered for bucket"}},
		// Policies an operator got wrong: refused as a whole, naming why.
		{"DUP under a policy with a cycle", queue.KeyDupHigh, dup(t, "loop", "1", "2", "s", "x"), nil, workman.ReasonFailed, []string{"cycle 1→2→1"}},
		{"DUP under a policy with two sources into one store", queue.KeyDupHigh, dup(t, "fan", "1", "3", "s", "x"), nil, workman.ReasonFailed, []string{"two store policies, 1→3 and 2→3"}},
		{"DUP under a 5 MiB policy", queue.KeyDupHigh, dup(t, "bloat", "1", "2", "s", "x"), nil, workman.ReasonFailed, []string{"limit"}},
		// Claim-check references to what is not a claim-checked body.
		{"claim reference to the producers' state file", queue.KeyAudit, `{"millClaimCheck":{"key":"` + stateKey + `","size":2,"sha256":"00"}}`,
			map[string]string{claimcheck.AttrRef: stateKey}, workman.ReasonPermanent, []string{"claimcheck: key outside claims prefix"}},
		{"claim reference with ../", queue.KeyAudit, `{"millClaimCheck":{"key":"claims/../state/dupproducer.json","size":2,"sha256":"00"}}`,
			map[string]string{claimcheck.AttrRef: "claims/../state/dupproducer.json"}, workman.ReasonPermanent, []string{"claimcheck: key not in the claim check's form"}},
		{"claim reference with an empty key", queue.KeyBit, `{"millClaimCheck":{"key":"","size":2,"sha256":"00"}}`,
			map[string]string{claimcheck.AttrRef: ""}, workman.ReasonPermanent, []string{"claimcheck: empty key"}},
		{"claim reference to a blob that never was", queue.KeyBitError, `{"millClaimCheck":{"key":"claims/0123456789abcdef0123456789abcdef","size":2,"sha256":"00"}}`,
			map[string]string{claimcheck.AttrRef: "claims/0123456789abcdef0123456789abcdef"}, workman.ReasonUndecodable, []string{"blob not found"}},
		{"claim error attribute forged on a plain message", queue.KeyBit, `{"v":1,"type":"NOOP","props":{"id":"forged-error-attr"}}`,
			map[string]string{claimcheck.AttrError: "blob not found"}, "", nil},
		// Malformed and unknown.
		{"truncated JSON", queue.KeyAudit, `{"v":1,"type":"DUP","props":{"account":`, nil, workman.ReasonUndecodable, []string{"malformed"}},
		{"unknown task type", queue.KeyBitError, `{"v":1,"type":"rm -rf /","props":{}}`, nil, workman.ReasonUnknownType, []string{`unknown task type "rm -rf /"`}},
		{"DUP without its properties", queue.KeyDupLow, "type=DUP\naccount=acme\n", nil, workman.ReasonPermanent, []string{"missing property"}},
	}
	// 40 made-up task types: dead-lettered, and never a metric label.
	const madeUp = 40
	for i := range madeUp {
		attacks = append(attacks, attack{fmt.Sprintf("made-up type %d", i), queue.KeyDupLow, fmt.Sprintf(`{"v":1,"type":"FROB-%03d","props":{}}`, i), nil,
			workman.ReasonUnknownType, []string{"unknown task type"}})
	}
	// A burst of tasks reading the oversized policy at once.
	for i := range 30 {
		attacks = append(attacks, attack{fmt.Sprintf("burst on the 5 MiB policy %d", i), queue.KeyDupLow, dup(t, "bloat", "1", "2", "s", fmt.Sprintf("burst-%d", i)), nil,
			workman.ReasonFailed, []string{"limit"}})
	}
	// Two more whose sends the SDK retries after SQS took them, so each
	// is in the queue twice: every copy of the first (sent bare) must be
	// dead-lettered; the second's (sent by m.send) count as one send's.
	resent := len(attacks)
	attacks = append(attacks, attack{"burst on the 5 MiB policy, its send retried", queue.KeyDupLow, dup(t, "bloat", "1", "2", "s", "burst-resent"), nil,
		workman.ReasonFailed, []string{"limit"}},
		attack{"DUP in an ignored space, its send retried", queue.KeyDupLow, dup(t, "acme", "1", "2", "scratch", "resent"), nil,
			workman.ReasonPermanent, []string{"policy: ignored-space"}})

	ids := map[string]*attack{}
	// The messages an attack may be in the queue as: one, plus one for
	// each attempt the SDK's retryer made past the first (resend_test.go).
	copies := map[*attack]int{}
	twice, once := false, false
	for i := range attacks {
		a := &attacks[i]
		before := m.resends.Count()
		switch {
		case i == resent && m.sendingTwice(func() {
			_, err := m.sqsc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(m.urls[a.queue]), MessageBody: aws.String(a.body)})
			must(t, err)
		}):
			twice = true
		case i == resent+1 && m.sendingTwice(func() { ids[m.send(a.queue, a.body, a.attrs)] = a }):
			once = true
		case len(a.body) <= claimcheck.DefaultThreshold:
			ids[m.send(a.queue, a.body, a.attrs)] = a
		default:
			// Over SQS's limit: through the claim check, as a sender would;
			// its dead letter is matched by the body it holds.
			q, err := m.claims.Open(ctx, m.sqsc, m.s3c, queue.Name(m.prefix, a.queue), sqsqueue.Config{})
			must(t, err)
			must(t, q.Send(ctx, queue.SendEntry{Body: []byte(a.body)}))
		}
		if copies[a] = 1 + m.resends.Count() - before; copies[a] > 1 {
			t.Logf("%s: its send took %d attempts", a.name, copies[a])
		}
	}
	// The forged copy of the in-flight claim reference, then the original
	// made visible again.
	copyAttrs := map[string]string{}
	for k, v := range orig.MessageAttributes {
		copyAttrs[k] = aws.ToString(v.StringValue)
	}
	m.send(queue.KeyDupLow, aws.ToString(orig.Body), copyAttrs)
	_, err = m.sqsc.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(m.urls[queue.KeyDupLow]),
		ReceiptHandle: orig.ReceiptHandle, VisibilityTimeout: 0})
	must(t, err)

	w := m.startWorkman()
	// Each letter is of the attack sent as its message, else (a copy a
	// retried send made, a claim-checked body) of the one its body is.
	of := func(d *workman.DeadLetter) *attack {
		for i := range attacks {
			if a := &attacks[i]; ids[d.MessageID] == a || ids[d.MessageID] == nil && string(d.Body) == a.body {
				return a
			}
		}
		return nil
	}
	got := map[*attack][]*workman.DeadLetter{}
	m.deadLettersUntil(90*time.Second, w, func(d *workman.DeadLetter) bool {
		a := of(d)
		if a == nil {
			t.Errorf("dead letter of no attack: %s %s: %.300s", d.TaskType, d.Reason, d.Error)
			return false
		}
		got[a] = append(got[a], d)
		for i := range attacks {
			if n := len(got[&attacks[i]]); attacks[i].reason != "" && n == 0 || i == resent && twice && n < 2 {
				return false
			}
		}
		return true
	})
	for i := range attacks {
		a := &attacks[i]
		ds := got[a]
		switch {
		case a.reason == "" && len(ds) > 0:
			t.Errorf("%s: dead-lettered (%s: %.300s), want processed", a.name, ds[0].Reason, ds[0].Error)
		case a.reason == "":
		case len(ds) == 0:
			t.Errorf("%s: no dead letter", a.name)
		case len(ds) > copies[a]:
			t.Errorf("%s: dead-lettered %d times, but sent as at most %d messages", a.name, len(ds), copies[a])
		case i == resent && twice && len(ds) != 2:
			t.Errorf("%s: %d dead letters, want one for each of its 2 messages", a.name, len(ds))
		case i == resent+1 && once && len(ds) != 1:
			t.Errorf("%s: %d dead letters, want 1 (its 2 messages are one m.send)", a.name, len(ds))
		default:
			for _, d := range ds {
				if d.Reason != a.reason {
					t.Errorf("%s: reason %s, want %s (%.300s)", a.name, d.Reason, a.reason, d.Error)
				}
				for _, s := range a.has {
					if !strings.Contains(d.Error, s) {
						t.Errorf("%s: error %.400q does not name %q", a.name, d.Error, s)
					}
				}
			}
			if !strings.HasPrefix(a.name, "made-up") && !strings.HasPrefix(a.name, "burst") {
				t.Logf("%-55s → %-11s %.170s", a.name, ds[0].Reason, ds[0].Error)
			}
		}
	}
	t.Logf("every dead letter in at %v", time.Since(start).Round(time.Millisecond))
	// Alive, and a good task sent last is processed: an item written to
	// store 1 and its AUDIT task, duplicated to stores 2 and 3.
	w.alive(t)
	fresh := m.put("1", space, "fresh", "fresh content")
	m.send(queue.KeyAudit, audit(t, task.Audit{ContentID: "fresh", Action: task.ActionAddContent, ContentChecksum: fresh.Checksum}), nil)
	if !m.drained(30*time.Second, w) {
		t.Errorf("the work queues did not drain")
	}
	t.Logf("drained at %v", time.Since(start).Round(time.Millisecond))
	// The claim-checked original and its forged copy both ran (a
	// duplicate delivery of an idempotent task); the blob is still there.
	testbin.WaitFor(t, 20*time.Second, "the claim-checked task and its copy to run", func() bool {
		b, _ := os.ReadFile(w.record)
		return strings.Count(string(b), "claimed-original") >= 2
	})
	if _, err := m.s3c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(m.claimsBucket), Key: aws.String(claimKey)}); err != nil {
		t.Errorf("the claim-checked body after its forged copy was deleted: %v", err)
	}
	if b, _ := os.ReadFile(w.record); !strings.Contains(string(b), "forged-error-attr") {
		t.Errorf("the plain task with a forged claim-error attribute did not run")
	}

	// Bounded: the burst on the oversized policy and the made-up types.
	if rss := w.PeakRSS(); rss > 300<<20 {
		t.Errorf("workman's peak RSS is %d MiB after a burst on a 5 MiB policy", rss>>20)
	} else {
		t.Logf("workman's peak RSS: %d MiB", rss>>20)
	}
	resp, err := http.Get("http://" + w.addr + "/metrics")
	must(t, err)
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(metrics), "FROB-") || !strings.Contains(string(metrics), `"other"`) {
		t.Errorf("made-up task types reached the metric labels (or no \"other\" label): %d bytes of metrics", len(metrics))
	}

	testbin.WaitFor(t, 30*time.Second, "the good task's item on stores 2 and 3", func() bool {
		b2, err2 := m.read("2", space, "fresh")
		b3, err3 := m.read("3", space, "fresh")
		return err2 == nil && err3 == nil && string(b2) == "fresh content" && string(b3) == "fresh content"
	})
	if !m.drained(30*time.Second, w) {
		t.Errorf("the work queues did not drain after the good task")
	}
	// Late, and allowed: the letter of a copy a retried send queued.
	for _, d := range m.deadLetters(10, 2*time.Second, w) {
		if a := of(d); a != nil && d.Reason == a.reason && len(got[a]) < copies[a] {
			got[a] = append(got[a], d)
			t.Logf("%s: a late letter, of message %s", a.name, d.MessageID)
			continue
		}
		t.Errorf("the good task dead-lettered: %s %.300s", d.Reason, d.Error)
	}
	w.alive(t)

	t.Logf("the good task done at %v", time.Since(start).Round(time.Millisecond))
	// Nothing else changed, byte for byte: only the good item's own keys
	// and files are new.
	after := m.snapshot()
	// (The claim check's own blobs are new too: the huge task's and its
	// dead letter's.)
	claims := "s3://" + m.claimsBucket + "/" + m.claims.Prefix
	if d := before.diff(after, func(p string) bool {
		_, existed := before[p]
		return strings.Contains(p, "/photos/fresh") || strings.HasPrefix(p, claims) && !existed
	}); len(d) > 0 {
		t.Errorf("%d changes outside the good task's item:\n%s", len(d), strings.Join(d, "\n"))
	}
	// The preserved items are there and whole.
	for id, body := range items {
		for _, s := range []string{"1", "2"} {
			if b, err := m.read(s, space, id); err != nil || string(b) != body {
				t.Errorf("store %s item %s: %q, %v", s, id, b, err)
			}
		}
	}
	if b, err := m.read("3", space, "a"); err != nil || string(b) != items["a"] {
		t.Errorf("store 3 item a: %q, %v", b, err)
	}
	if b, err := m.read("1", "linked", "x"); err != nil || string(b) != "x content" {
		t.Errorf("store 1 linked/x: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(m.outside, "secret")); err != nil || string(b) != "outside the store" {
		t.Errorf("the file outside the store: %q, %v", b, err)
	}
	if s := w.Output(); strings.Contains(s, "panic") || strings.Contains(s, "goroutine ") {
		t.Errorf("workman logged a panic")
	}
	w.Signal(t, syscall.SIGINT)
	_ = w.Wait(t, 45*time.Second) // SIGINT waits for the long poll in flight
	if code := w.ExitCode(); code != 0 {
		t.Errorf("workman exit code after SIGINT: %d", code)
	}
	t.Logf("%d attacks in %v", len(attacks)+1, time.Since(start).Round(time.Millisecond))
}

// forgeSidecar rewrites the sidecar of item id in space of the fs store at
// root so that it names blob instead of its own.
func forgeSidecar(t *testing.T, root, sp, id, blob string) {
	t.Helper()
	p := sidecarOf(t, root, sp, id)
	b, err := os.ReadFile(p)
	must(t, err)
	var meta map[string]any
	must(t, json.Unmarshal(b, &meta))
	if _, ok := meta["blob"]; !ok {
		t.Fatalf("sidecar %s has no blob field: %s", p, b)
	}
	meta["blob"] = blob
	b, err = json.Marshal(meta)
	must(t, err)
	must(t, os.WriteFile(p, b, 0o644))
}

// linkBlob replaces the blob of item id with a symbolic link to target.
func linkBlob(t *testing.T, root, sp, id, target string) {
	t.Helper()
	p, err := fsstoreBlob(root, sp, id)
	must(t, err)
	must(t, os.Remove(p))
	must(t, os.Symlink(target, p))
}

func fsstoreBlob(root, sp, id string) (string, error) {
	s, err := fsstore.New(root)
	if err != nil {
		return "", err
	}
	return s.BlobPath(sp, id)
}

// sidecarOf finds the sidecar of item id: the file beside its blob whose
// name is the item's and ends in ".m".
func sidecarOf(t *testing.T, root, sp, id string) string {
	t.Helper()
	blob, err := fsstoreBlob(root, sp, id)
	must(t, err)
	matches, err := filepath.Glob(filepath.Join(filepath.Dir(blob), id+"*.m"))
	must(t, err)
	if len(matches) != 1 {
		t.Fatalf("sidecars of %s: %v", id, matches)
	}
	return matches[0]
}

// endpointAttack starts workman with a registry whose stores break the
// endpoint rules: it must exit 1 naming each, having received nothing.
func endpointAttack(t *testing.T, m *mill) {
	t.Helper()
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "accounts.json"), []byte(`{"accounts": [{"id": "acme", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "s3", "bucket": "b1", "region": "us-east-1", "endpoint": "http://169.254.169.254/", "allowInsecureEndpoint": true, "ambientCredentials": true},
  {"id": "2", "kind": "s3", "bucket": "b2", "region": "us-east-1", "endpoint": "http://storage.example.com/", "ambientCredentials": true},
  {"id": "3", "kind": "s3", "bucket": "b3", "region": "us-east-1", "endpoint": "https://minio.example.com/"}]}]}`), 0o644))
	canary := m.send(queue.KeyAudit, `{"v":1,"type":"NOOP","props":{"id":"endpoint-canary"}}`, nil)
	c := testbin.Run(t, 30*time.Second, testbin.Spec{Path: testbin.Build(t, "workman")["workman"], Args: []string{"--config-dir", dir, "--queues", "audit", "--task-types", "NOOP,AUDIT,DUP",
		"--http-addr", "", "--cloudwatch=false", "--fleet-table", "", "--instance-metadata=false"}, Env: append(m.env(), "MILL_CONFIG_DIR="+dir)})
	out := c.Output()
	if c.ExitCode() != 1 {
		t.Fatalf("workman with a registry breaking the endpoint rules: %v\n%s", c.Err(), out)
	}
	for _, s := range []string{"169.254.169.254 is a link-local or metadata address", "is plain http: use https", "is not an AWS endpoint: name the credentials"} {
		if !strings.Contains(out, s) {
			t.Errorf("workman's refusal does not say %q:\n%s", s, out)
		}
	}
	// Nothing was received: the canary is still visible, then removed.
	r, err := m.sqsc.ReceiveMessage(m.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(m.urls[queue.KeyAudit]), MaxNumberOfMessages: 10,
		WaitTimeSeconds: 1, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameApproximateReceiveCount}})
	must(t, err)
	if len(r.Messages) != 1 || aws.ToString(r.Messages[0].MessageId) != canary || r.Messages[0].Attributes["ApproximateReceiveCount"] != "1" {
		t.Fatalf("the canary task after the refused start: %d messages", len(r.Messages))
	}
	_, err = m.sqsc.DeleteMessage(m.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(m.urls[queue.KeyAudit]), ReceiptHandle: r.Messages[0].ReceiptHandle})
	must(t, err)
	t.Logf("%-55s → exit 1: %s", "workman with metadata, plain-http and foreign endpoints", strings.Join(strings.Fields(firstLine(string(out))), " "))
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
