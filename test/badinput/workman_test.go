package badinput

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/wiring"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/auditlog/dynamoauditlog"
	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/deadletter"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/claimcheck"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/task"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// badCase is one message sent to a work queue and what must become of it.
type badCase struct {
	name  string
	queue string // queue key
	body  string
	attrs map[string]string
	// reason and errHas: the dead letter's reason and substrings of its
	// error. An empty reason means the message must not be dead-lettered.
	reason string
	errHas []string
	form   string // dead-letter form, when it matters
	// refused: dead-lettered before any attempt, its body not a task (a
	// claim-check reference the claim check refuses).
	refused bool
}

// registered reports whether the workman binary serves typ, judged from
// its --help: a binary without the AUDIT/DUP dependency flags registers
// only NOOP, and the test then expects "no processor registered" dead
// letters for AUDIT and DUP (and says so in its log).
func registered(help string, typ task.Type) bool {
	switch typ {
	case task.TypeNoop:
		return true
	case task.TypeAudit:
		return strings.Contains(help, "audit-table") || strings.Contains(help, "database-url")
	case task.TypeDup:
		return strings.Contains(help, "config-dir") || strings.Contains(help, "config-bucket")
	}
	return false
}

// missingClaim has the shape of a claim-check key (the prefix and 32 hex
// digits), but no blob.
const missingClaim = "claims/00000000000000000000000000000000"

func TestWorkmanSurvivesBadInput(t *testing.T) {
	cfg := testenv.AWS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := testbin.Build(t, "workman")["workman"]
	help := testbin.Run(t, time.Minute, testbin.Spec{Path: bin, Args: []string{"--help"}}).Output()
	auditWired, dupWired := registered(help, task.TypeAudit), registered(help, task.TypeDup)
	t.Logf("workman binary: AUDIT wired=%v, DUP wired=%v", auditWired, dupWired)

	prefix := testenv.Prefix(t)
	sqsc := cfg.SQS()
	testenv.CleanupQueues(t, sqsc, prefix)
	urls := map[string]string{}
	for _, k := range queue.AllKeys { // a wired workman opens every queue its processors send to
		u, err := (setup.Queue{Client: sqsc, QueueName: queue.Name(prefix, k), VisibilityTimeout: 30 * time.Second}).Ensure(ctx)
		if err != nil {
			t.Fatalf("ensure %s: %v", k, err)
		}
		urls[k] = u
	}

	// The claim check's bucket: workman keeps bodies over the threshold
	// there (the oversized dead letter below), and so does this test's
	// claim-checked sender.
	s3c := cfg.S3()
	claimsBucket := prefix + "claims"
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(claimsBucket)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, s3c, claimsBucket)
	claims := &wiring.Claims{Bucket: claimsBucket, Prefix: setup.DefaultClaimsPrefix}
	// A producer's state file shares the bucket; a forged reference names it.
	const stateKey, state = "state/dupproducer.json", `{"cursor":"acme/photos"}`
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(claimsBucket), Key: aws.String(stateKey), Body: strings.NewReader(state)}); err != nil {
		t.Fatal(err)
	}

	// Send side: what SQS cannot carry is refused before it leaves.
	audit, err := sqsqueue.Open(ctx, sqsc, queue.Name(prefix, queue.KeyAudit), sqsqueue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	refusals := []struct {
		name string
		body []byte
		want error
	}{
		{"NUL byte in a body (a NUL content ID written raw)", []byte(`{"v":1,"type":"DUP","props":{"contentId":"a` + "\x00" + `b"}}`), queue.ErrInvalid},
		{"U+FFFE in a body", []byte("type=NOOP\nx=\uFFFE\n"), queue.ErrInvalid},
		{"invalid UTF-8", []byte("type=NOOP\nx=\xff\n"), queue.ErrInvalid},
		{"over the SQS size limit", bytes.Repeat([]byte("x"), sqsqueue.DefaultMaxMessageBytes+1), queue.ErrTooLarge},
	}
	for _, r := range refusals {
		err := audit.Send(ctx, queue.SendEntry{Body: r.body})
		if !errors.Is(err, r.want) {
			t.Errorf("send %s: %v, want %v", r.name, err, r.want)
		}
	}
	// The raw SDK, past our client-side check: SQS itself refuses a NUL.
	if _, err := sqsc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(urls[queue.KeyAudit]), MessageBody: aws.String("type=NOOP\nx=\x00\n")}); err == nil {
		t.Logf("note: the emulator accepted a NUL byte that SQS refuses (emulator gap); sqsqueue refuses it client-side")
		purge(t, ctx, sqsc, urls[queue.KeyAudit])
	}

	// An encoded task escapes control characters, so a NUL content ID
	// travels (as \u0000) and must be refused by the processor.
	nulDup, err := task.Encode(&task.Task{Type: task.TypeDup, Props: map[string]string{
		"account": "acme", "storeId": "1", "destStoreId": "2", "spaceId": "space", "contentId": "a\x00b"}}, task.FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("d/", 5<<10) // a 10 KiB content ID
	notWired := "no processor registered"

	expectProc := func(wired bool, has ...string) []string {
		if !wired {
			return []string{notWired}
		}
		return has
	}
	cases := []badCase{
		{name: "truncated JSON", queue: queue.KeyAudit, body: `{"v":1,"type":"NOOP","props":{"id":`, reason: deadletter.ReasonUndecodable, errHas: []string{"malformed", "json"}},
		{name: "JSON envelope of an unknown version", queue: queue.KeyAudit, body: `{"v":7,"type":"NOOP","props":{}}`, reason: deadletter.ReasonUndecodable, errHas: []string{"unsupported envelope version 7"}},
		{name: "JSON with an unknown field", queue: queue.KeyDupHigh, body: `{"v":1,"type":"NOOP","props":{},"evil":true}`, reason: deadletter.ReasonUndecodable, errHas: []string{"evil"}},
		{name: "JSON with reserved property", queue: queue.KeyDupHigh, body: `{"v":1,"type":"NOOP","props":{"attempts":"0"}}`, reason: deadletter.ReasonUndecodable, errHas: []string{`"attempts" is reserved`}},
		{name: "properties with a bad escape", queue: queue.KeyAudit, body: "#Mon Jan 01 00:00:00 UTC 2024\ntype=NOOP\nid=\\uZZZZ\n", reason: deadletter.ReasonUndecodable, errHas: []string{"line 3", `\uZZZZ`}},
		{name: "properties without a type", queue: queue.KeyAudit, body: "account=acme\nspaceId=s\n", reason: deadletter.ReasonUndecodable, errHas: []string{`missing property "type"`}},
		{name: "properties with negative attempts", queue: queue.KeyAudit, body: "type=NOOP\nattempts=-4\n", reason: deadletter.ReasonUndecodable, errHas: []string{"line 2", "attempts"}},
		{name: "empty body", queue: queue.KeyAudit, body: " ", reason: deadletter.ReasonUndecodable, errHas: []string{`missing property "type"`}},
		{name: "unknown task type (JSON)", queue: queue.KeyAudit, body: `{"v":1,"type":"FROBNICATE","props":{}}`, reason: deadletter.ReasonUnknownType, errHas: []string{`unknown task type "FROBNICATE"`}},
		{name: "unknown task type (properties)", queue: queue.KeyDupHigh, body: "type=rm -rf /\n", reason: deadletter.ReasonUnknownType, errHas: []string{`unknown task type "rm -rf /"`}},
		{name: "AUDIT without its properties", queue: queue.KeyAudit, body: `{"v":1,"type":"AUDIT","props":{"account":"acme"}}`, reason: deadletter.ReasonPermanent, errHas: expectProc(auditWired, "missing property")},
		{name: "DUP without its properties", queue: queue.KeyDupHigh, body: "type=DUP\naccount=acme\n", reason: deadletter.ReasonPermanent, errHas: expectProc(dupWired, "missing property")},
		{name: "DUP with a ../ content ID", queue: queue.KeyDupHigh, body: `{"v":1,"type":"DUP","props":{"account":"acme","storeId":"1","destStoreId":"2","spaceId":"space","contentId":"../../../../etc/passwd"}}`,
			reason: deadletter.ReasonPermanent, errHas: expectProc(dupWired, `".." segment`)},
		{name: "DUP with a NUL content ID (escaped)", queue: queue.KeyDupHigh, body: string(nulDup), reason: deadletter.ReasonPermanent, errHas: expectProc(dupWired, "control character")},
		{name: "DUP with a 10 KiB content ID", queue: queue.KeyDupHigh, body: `{"v":1,"type":"DUP","props":{"account":"acme","storeId":"1","destStoreId":"2","spaceId":"space","contentId":"` + long + `"}}`,
			reason: deadletter.ReasonPermanent, errHas: expectProc(dupWired, "content ID is 10240 bytes (limit 1024)")},
		// A DUP task is a request, not an authority: the policies in force
		// (acme: 1→2) decide.
		{name: "forged DUP against the policy (2→1)", queue: queue.KeyDupHigh, body: `{"v":1,"type":"DUP","props":{"account":"acme","storeId":"2","destStoreId":"1","spaceId":"space","contentId":"x"}}`,
			reason: deadletter.ReasonPermanent, errHas: expectProc(dupWired, "policy: no-store-policy: acme/space: no store policy 2→1")},
		{name: "forged DUP in a system space", queue: queue.KeyDupHigh, body: `{"v":1,"type":"DUP","props":{"account":"acme","storeId":"1","destStoreId":"2","spaceId":"x-work","contentId":"x"}}`,
			reason: deadletter.ReasonPermanent, errHas: expectProc(dupWired, "policy: system-space")},
		{name: "forged DUP of an account not duplicated", queue: queue.KeyDupHigh, body: `{"v":1,"type":"DUP","props":{"account":"globex","storeId":"1","destStoreId":"2","spaceId":"space","contentId":"x"}}`,
			reason: deadletter.ReasonPermanent, errHas: expectProc(dupWired, "policy: account-not-listed")},
		// (Errors name a long ID by its first 200 bytes, so the reason
		// survives the dead letter's 8 KiB error limit.)
		{name: "S3 event for an unknown bucket", queue: queue.KeyAudit, body: s3Event("no-such-bucket-" + strings.TrimSuffix(prefix, "-")),
			reason: deadletter.ReasonPermanent, errHas: expectProc(auditWired, "registered for bucket")},
		{name: "claim-check reference to a missing blob", queue: queue.KeyAudit, body: `{"millClaimCheck":{"key":"` + missingClaim + `","size":300000,"sha256":"00"}}`,
			attrs: map[string]string{claimcheck.AttrRef: missingClaim}, reason: deadletter.ReasonUndecodable, errHas: []string{"blob not found", `"` + missingClaim + `"`}},
		{name: "claim-check reference outside the claims prefix", queue: queue.KeyAudit, body: `{"millClaimCheck":{"key":"` + stateKey + `","size":2,"sha256":"00"}}`,
			attrs: map[string]string{claimcheck.AttrRef: stateKey}, reason: deadletter.ReasonPermanent, errHas: []string{"claimcheck: key outside claims prefix"}, refused: true},
		// Over the claim-check threshold, under the SQS limit, not a task:
		// its envelope passes the SQS limit, and the claim check carries
		// it whole (without a claim check, workman falls back to the raw
		// form: pkg/workman's tests).
		{name: "oversized malformed body", queue: queue.KeyAudit, body: `{"oversized":"` + strings.Repeat(`\"`, (claimcheck.DefaultThreshold+4<<10)/2) + `"}`,
			reason: deadletter.ReasonUndecodable, errHas: []string{"oversized"}, form: deadletter.FormEnvelope},
		// Over the threshold, a valid task: processed like any other.
		{name: "oversized valid NOOP", queue: queue.KeyAudit, body: `{"v":1,"type":"NOOP","props":{"id":"big","pad":"` + strings.Repeat("p", claimcheck.DefaultThreshold+1<<10) + `"}}`},
		{name: "s3:TestEvent", queue: queue.KeyAudit, body: `{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2024-01-01T00:00:00.000Z","Bucket":"b"}`},
	}

	tmp := t.TempDir()
	record := filepath.Join(tmp, "noop.record")
	httpAddr := testbin.FreeAddr(t)
	w := testbin.Start(t, testbin.Spec{Path: bin, Args: []string{
		"--queue-prefix", prefix, "--queues", queue.KeyAudit + "," + queue.KeyDupHigh,
		"--http-addr", httpAddr, "--cloudwatch=false", "--fleet-table", "", "--log-level", "debug", "--worker-id", "badinput",
		"--receive-wait", "1s", "--queue-backoff-min", "1s", "--queue-backoff-max", "2s",
		"--long-poll-wait", "1s", "--grace-period", "5s", "--noop-record", record},
		Env: append(os.Environ(), append(wiredEnv(t, ctx, cfg, prefix, tmp, auditWired || dupWired), "MILL_CLAIMS_BUCKET="+claimsBucket)...)})

	ids := map[string]*badCase{} // message ID → case
	attempts := map[*badCase]int{}
	for i := range cases {
		c := &cases[i]
		in := &sqs.SendMessageInput{QueueUrl: aws.String(urls[c.queue]), MessageBody: aws.String(c.body)}
		for k, v := range c.attrs {
			if in.MessageAttributes == nil {
				in.MessageAttributes = map[string]sqstypes.MessageAttributeValue{}
			}
			in.MessageAttributes[k] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
		}
		r, err := sqsc.SendMessage(ctx, in)
		if err != nil {
			t.Fatalf("send %s: %v", c.name, err)
		}
		ids[aws.ToString(r.MessageId)] = c
		// A send the SDK retried after SQS took it queued the task twice.
		if res, ok := retry.GetAttemptResults(r.ResultMetadata); ok && len(res.Results) > 1 {
			attempts[c] = len(res.Results)
			t.Logf("%s: its send took %d attempts", c.name, len(res.Results))
		}
	}

	// Over SQS's own limit, sent through the claim check as millctl
	// enqueue and the processors send: workman runs it whole.
	hugeQ, err := claims.Open(ctx, sqsc, s3c, queue.Name(prefix, queue.KeyAudit), sqsqueue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	huge := `{"v":1,"type":"NOOP","props":{"id":"huge-claim-checked","pad":"` + strings.Repeat("h", 300<<10) + `"}}`
	if err := hugeQ.Send(ctx, queue.SendEntry{Body: []byte(huge)}); err != nil {
		t.Fatalf("send a 300 KiB task through the claim check: %v", err)
	}

	// Read the dead letters until every expected one arrived.
	want := 0
	for _, c := range cases {
		if c.reason != "" {
			want++
		}
	}
	// Through the claim check, as millctl dlq reads it: the oversized
	// dead letter is a blob.
	dlq, err := claims.Open(ctx, sqsc, s3c, queue.Name(prefix, queue.KeyDeadLetter), sqsqueue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[*badCase]*deadletter.Letter{}
	forms := map[*badCase]string{}
	letters := map[*badCase]int{}
	lettered := map[string]bool{} // message IDs: a letter may be delivered twice
	deadline := time.Now().Add(90 * time.Second)
	for len(got) < want && time.Now().Before(deadline) {
		select {
		case <-w.Done():
			t.Fatalf("workman exited while processing bad input: %v", w.Err())
		default:
		}
		ms, err := dlq.Receive(ctx, 10, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			d, err := deadletter.Decode(m)
			if err != nil {
				t.Errorf("dead letter %s: %v", m.ID, err)
				continue
			}
			c := ids[d.MessageID]
			if c == nil {
				// A retried task comes back as a new message (attempts+1):
				// find its case by the task it carries.
				c = caseOf(cases, d.Body)
			}
			if c == nil {
				t.Errorf("dead letter for an unknown message %s: %+v", d.MessageID, d)
				continue
			}
			if lettered[d.MessageID] {
				continue
			}
			lettered[d.MessageID] = true
			if letters[c]++; letters[c] > max(1, attempts[c]) {
				t.Errorf("%s: dead-lettered %d times, from a send of %d attempts", c.name, letters[c], max(1, attempts[c]))
			}
			if got[c] == nil {
				got[c], forms[c] = d, m.Attributes[deadletter.AttrForm]
			} else if d.Reason != got[c].Reason {
				t.Errorf("%s: the copies of its task dead-lettered as %s and %s", c.name, got[c].Reason, d.Reason)
			}
		}
		if len(ms) > 0 {
			_ = dlq.Delete(ctx, ms...)
		}
	}
	for i := range cases {
		c := &cases[i]
		d := got[c]
		switch {
		case c.reason == "" && d != nil:
			t.Errorf("%s: dead-lettered (%s: %s), want processed", c.name, d.Reason, d.Error)
		case c.reason == "":
		case d == nil:
			t.Errorf("%s: no dead letter within the deadline", c.name)
		default:
			for _, s := range c.errHas {
				if !strings.Contains(d.Error, s) {
					t.Errorf("%s: error %q does not mention %q", c.name, d.Error, s)
				}
			}
			if d.Error == "" {
				t.Errorf("%s: dead letter without an error", c.name)
			}
			if d.Reason != c.reason {
				t.Errorf("%s: reason %q, want %q (error %.300q)", c.name, d.Reason, c.reason, d.Error)
			}
			if c.refused && d.Attempts != 0 {
				t.Errorf("%s: dead letter after %d attempts, want 0 (refused before any)", c.name, d.Attempts)
			}
			if c.reason == deadletter.ReasonPermanent && !c.refused {
				// Straight to the dead letter: the failed attempt is the
				// first, and the task it carries was never retried.
				if d.Attempts != 1 {
					t.Errorf("%s: dead letter after %d attempts, want 1 (no retry)", c.name, d.Attempts)
				}
				if tk, err := task.Decode(d.Body); err != nil || tk.Attempts != 0 {
					t.Errorf("%s: dead-lettered task (err %v) is not the original with attempts 0", c.name, err)
				}
			}
			if len(d.Error) > 2<<10 {
				t.Errorf("%s: dead-letter error is %d bytes; IDs must be named briefly", c.name, len(d.Error))
			}
			if !sameTask(d.Body, []byte(c.body)) {
				t.Errorf("%s: dead letter holds %d bytes, not the original %d", c.name, len(d.Body), len(c.body))
			}
			if c.form != "" && forms[c] != c.form {
				t.Errorf("%s: dead-letter form %q, want %q", c.name, forms[c], c.form)
			}
			t.Logf("%-45s → %s: %.150s", c.name, d.Reason, d.Error)
		}
	}
	if out, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(claimsBucket), Key: aws.String(stateKey)}); err != nil {
		t.Errorf("the state file the forged reference named: %v", err)
	} else {
		b, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if string(b) != state {
			t.Errorf("the state file changed: %q", b)
		}
	}

	// Still alive and working: a valid NOOP completes after all that.
	after := fmt.Sprintf(`{"v":1,"type":"NOOP","props":{"id":"after-%s"}}`, testenv.Unique())
	if _, err := sqsc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(urls[queue.KeyAudit]), MessageBody: aws.String(after)}); err != nil {
		t.Fatal(err)
	}
	var afterID struct {
		Props map[string]string `json:"props"`
	}
	_ = json.Unmarshal([]byte(after), &afterID)
	testbin.WaitFor(t, 60*time.Second, "the valid NOOP sent after the bad input to complete", func() bool {
		b, _ := os.ReadFile(record)
		return strings.Contains(string(b), afterID.Props["id"])
	})
	if b, _ := os.ReadFile(record); !strings.Contains(string(b), "big") {
		t.Errorf("the oversized valid NOOP did not complete; record: %q", b)
	}
	if b, _ := os.ReadFile(record); !strings.Contains(string(b), "huge-claim-checked") {
		t.Errorf("the 300 KiB claim-checked NOOP did not complete; record: %q", b)
	}
	// No blob is deleted with its message (the claims expiry removes
	// them): the two claim-checked bodies — the oversized dead letter's
	// envelope and the 300 KiB task — are still there.
	if out, err := s3c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(claimsBucket), Prefix: aws.String(claims.Prefix)}); err != nil {
		t.Fatal(err)
	} else if len(out.Contents) != 2 {
		t.Errorf("%d claim-check blobs, want 2 (kept until the claims expiry)", len(out.Contents))
	}
	w.Healthy(t, httpAddr)
	for _, q := range []string{queue.KeyAudit, queue.KeyDupHigh} {
		testbin.WaitFor(t, 30*time.Second, q+" to be empty (nothing stuck in flight)", func() bool {
			o, err := sqsc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(urls[q]),
				AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
			return err == nil && o.Attributes["ApproximateNumberOfMessages"] == "0" && o.Attributes["ApproximateNumberOfMessagesNotVisible"] == "0"
		})
	}
	if s := w.Output(); strings.Contains(s, "panic") || strings.Contains(s, "goroutine ") {
		t.Errorf("workman logged a panic")
	}

	// A clean stop: SIGINT, exit 0. (Wait reports the cancelled context
	// even after a clean exit; the exit code is what counts.)
	w.Signal(t, syscall.SIGINT)
	_ = w.Wait(t, 45*time.Second) // SIGINT waits for the long poll in flight
	if code := w.ExitCode(); code != 0 {
		t.Errorf("workman exit code after SIGINT: %d, want 0", code)
	}
}

// wiredEnv returns the environment a workman serving AUDIT and DUP needs:
// a config directory (registry with two filesystem stores, a policy), a
// migrated database schema and an audit-log table, all on the test prefix.
func wiredEnv(t *testing.T, ctx context.Context, cfg *awsconfig.Config, prefix, tmp string, wired bool) []string {
	t.Helper()
	if !wired {
		return []string{"MILL_TASK_TYPES=NOOP"}
	}
	conf := filepath.Join(tmp, "config")
	must(t, os.MkdirAll(conf, 0o755))
	must(t, os.WriteFile(filepath.Join(conf, "accounts.json"), []byte(fmt.Sprintf(`{"accounts": [
  {"id": "acme", "status": "active", "stores": [
    {"id": "1", "primary": true, "kind": "fs", "root": %q},
    {"id": "2", "kind": "fs", "root": %q}]}]}`, filepath.Join(tmp, "store1"), filepath.Join(tmp, "store2"))), 0o644))
	must(t, os.WriteFile(filepath.Join(conf, "duplication-accounts.json"), []byte(`["acme"]`), 0o644))
	must(t, os.WriteFile(filepath.Join(conf, "acme-duplication-policy.json"), []byte(`{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`), 0o644))
	dbURL := testenv.Schema(t)
	pool, err := pgxpool.New(ctx, dbURL)
	must(t, err)
	_, err = milldb.Up(ctx, pool)
	pool.Close()
	must(t, err)
	table := prefix + "audit"
	ddb := cfg.DynamoDB()
	testenv.CleanupTable(t, ddb, table)
	_, err = ddb.CreateTable(ctx, dynamoauditlog.CreateTableInput(table))
	must(t, err)
	return []string{"MILL_TASK_TYPES=NOOP,AUDIT,DUP", "MILL_CONFIG_DIR=" + conf, "MILL_DATABASE_URL=" + dbURL, "MILL_AUDIT_TABLE=" + table,
		"MILL_REPORTS_BUCKET=" + prefix + "reports"}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// caseOf returns the case whose body decodes to the same task as body,
// attempts aside.
func caseOf(cases []badCase, body []byte) *badCase {
	for i := range cases {
		if sameTask(body, []byte(cases[i].body)) {
			return &cases[i]
		}
	}
	return nil
}

// sameTask reports whether a and b are the same bytes, or decode to the
// same task apart from its attempts.
func sameTask(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	x, err1 := task.Decode(a)
	y, err2 := task.Decode(b)
	if err1 != nil || err2 != nil || x.Type != y.Type || len(x.Props) != len(y.Props) {
		return false
	}
	for k, v := range x.Props {
		if y.Props[k] != v {
			return false
		}
	}
	return true
}

func purge(t *testing.T, ctx context.Context, c *sqs.Client, url string) {
	t.Helper()
	for {
		o, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 0})
		if err != nil || len(o.Messages) == 0 {
			return
		}
		for _, m := range o.Messages {
			_, _ = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
		}
	}
}

// s3Event is an ObjectCreated notification for bucket.
func s3Event(bucket string) string {
	return `{"Records":[{"eventVersion":"2.1","eventSource":"aws:s3","awsRegion":"us-east-1","eventTime":"2024-01-02T03:04:05.000Z",` +
		`"eventName":"ObjectCreated:Put","userIdentity":{"principalId":"AWS:EXAMPLE"},` +
		`"s3":{"s3SchemaVersion":"1.0","bucket":{"name":"` + bucket + `","arn":"arn:aws:s3:::` + bucket + `"},` +
		`"object":{"key":"space/item.txt","size":3,"eTag":"acbd18db4cc2f85cedef654fccc4a4d8","sequencer":"0A1B2C3D4E5F678901"}}}]}`
}
