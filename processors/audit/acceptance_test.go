package audit_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	millsetup "github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/auditlog/dynamoauditlog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/notify/notifytest"
	"github.com/millfleet/mill/pkg/notify/snsnotify"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/s3event"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/s3store"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/audit"
)

// TestAcceptance runs the audit processor on DynamoDB and SQS (the
// emulator) and PostgreSQL.
func TestAcceptance(t *testing.T) {
	cfg := testenv.AWS(t)
	pool := testenv.Pool(t)
	ctx := context.Background()
	prefix := testenv.Prefix(t)

	if _, err := milldb.Up(ctx, pool); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	ddb := cfg.DynamoDB()
	table := prefix + "audit-log"
	if _, err := ddb.CreateTable(ctx, dynamoauditlog.CreateTableInput(table)); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupTable(t, ddb, table)
	if err := dynamodb.NewTableExistsWaiter(ddb).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	sqsc := cfg.SQS()
	testenv.CleanupQueues(t, sqsc, prefix)
	openQueue := func(key string) *sqsqueue.Queue {
		name := queue.Name(prefix, key)
		if _, err := (millsetup.Queue{Client: sqsc, QueueName: name, VisibilityTimeout: 30 * time.Second}).Ensure(ctx); err != nil {
			t.Fatal(err)
		}
		q, err := sqsqueue.Open(ctx, sqsc, name, sqsqueue.Config{})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	dupHigh, auditQ := openQueue(queue.KeyDupHigh), openQueue(queue.KeyAudit)

	bucket := prefix + "acme-1"
	s3c := cfg.S3()
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, s3c, bucket)
	reg, err := stores.Parse("accounts.json", []byte(`{"accounts":[{"id":"acme","status":"active","stores":[
	 {"id":"1","primary":true,"kind":"s3","bucket":"`+bucket+`","prefix":"mill/","region":"us-east-1"},
	 {"id":"2","kind":"fs","root":"/nonexistent/2"},{"id":"3","kind":"fs","root":"/nonexistent/3"}]},
	 {"id":"solo","status":"active","stores":[{"id":"1","primary":true,"kind":"s3","bucket":"`+bucket+`","prefix":"solo/","region":"us-east-1"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	opener := stores.NewOpener(reg, stores.OpenerConfig{AWS: cfg.AWS, PathStyle: true,
		S3: func(ctx context.Context, c *s3.Client, s stores.Store) (storage.Provider, error) {
			return s3store.New(c, s3store.Config{Bucket: s.Bucket, Prefix: s.Prefix})
		}})

	log := dynamoauditlog.New(ddb, table)
	index := &countingIndex{Index: pgcontentindex.New(pool)}
	topic := notifytest.New(t, cfg)
	notifier, err := snsnotify.New(topic.SNS, topic.ARN)
	if err != nil {
		t.Fatal(err)
	}
	p, err := audit.New(audit.Config{
		Log: log, Index: index, DupHigh: dupHigh,
		Policies: policies{"acme": mustPolicy(t, oneToTwoAndThree)},
		Logger:   testLogger(t), Notifier: notifier,
		Resolver: s3event.RegistryResolver{Registry: reg}, Stores: opener,
	})
	if err != nil {
		t.Fatal(err)
	}
	handle := func(t *testing.T, tk *task.Task) {
		t.Helper()
		// Through the wire, as Workman would receive it.
		body, err := task.Encode(tk, task.FormatJSON)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := task.Decode(body)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Handle(ctx, dec); err != nil {
			t.Fatalf("Handle(%v): %v", tk, err)
		}
	}
	at := func(account, space, content string) contentindex.Item {
		return contentindex.Item{Account: account, StoreID: "1", SpaceID: space, ContentID: content}
	}
	row := func(t *testing.T, i contentindex.Item) *contentindex.Entry {
		t.Helper()
		e, err := index.Get(ctx, i)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	historyLen := func(t *testing.T, account, space string) int {
		t.Helper()
		n, tok := 0, ""
		for {
			ents, next, err := log.SpaceHistory(ctx, account, "1", space, tok, auditlog.MaxPageSize)
			if err != nil {
				t.Fatal(err)
			}
			n += len(ents)
			if next == "" {
				return n
			}
			tok = next
		}
	}
	// write puts an item into store 1 of account in space, as a write's
	// AUDIT task finds it (a write of an item not in its store is history
	// only), and returns its MD5.
	write := func(t *testing.T, account, space, content, body string) string {
		t.Helper()
		prov, err := opener.Open(ctx, account, "1")
		if err != nil {
			t.Fatal(err)
		}
		if err := prov.CreateSpace(ctx, space); err != nil {
			t.Fatal(err)
		}
		info, err := prov.Put(ctx, space, content, strings.NewReader(body), storage.PutOptions{Size: int64(len(body)), MimeType: "text/plain"})
		if err != nil {
			t.Fatal(err)
		}
		return storage.ChecksumOf(info, nil).MD5
	}
	// remove deletes an item of solo's store 1.
	remove := func(t *testing.T, space, content string) {
		t.Helper()
		prov, err := opener.Open(ctx, "solo", "1")
		if err != nil {
			t.Fatal(err)
		}
		if err := prov.Delete(ctx, space, content); err != nil {
			t.Fatal(err)
		}
	}
	solo := func(content string, at time.Time, checksum string) *task.Task {
		tk := add(content, at, checksum)
		tk.Set(task.KeyAccount, "solo") // no policy: no DUP tasks
		tk.Set(task.KeySpaceID, "s")
		return tk
	}

	// A new space is announced on the topic: subject and body for people,
	// attributes for filters.
	t.Run("0/SpaceCreatedNotified", func(t *testing.T) {
		created := t0.Add(-time.Hour)
		solo, err := opener.Open(ctx, "solo", "1")
		if err != nil {
			t.Fatal(err)
		}
		if err := solo.CreateSpace(ctx, "new-space"); err != nil {
			t.Fatal(err)
		}
		handle(t, task.Audit{Account: "solo", StoreID: "1", SpaceID: "new-space", Action: task.ActionCreateSpace,
			UserID: "ana", DateTime: created}.Task())
		got := topic.Receive(t, 1, 20*time.Second)
		if len(got) != 1 {
			t.Fatalf("%d notifications delivered, want 1", len(got))
		}
		d := got[0]
		if d.Subject != "Mill: space new-space created in solo/1" || !strings.Contains(d.Message, "User:    ana") ||
			!strings.Contains(d.Message, created.Format(time.RFC3339)) {
			t.Errorf("delivered %q: %q", d.Subject, d.Message)
		}
		for k, v := range map[string]string{"event": "space-created", "account": "solo", "store_id": "1", "space_id": "new-space"} {
			if d.Attributes[k] != v {
				t.Errorf("attribute %s = %q, want %q (all: %v)", k, d.Attributes[k], v, d.Attributes)
			}
		}
	})

	t.Run("a/100AddsTo200Dups", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 100)
		sem := make(chan struct{}, 10)
		sums := make([]string, 100)
		for i := range sums {
			id := fmt.Sprintf("item-%03d", i)
			sums[i] = write(t, "acme", "bulk", id, id)
		}
		for i := range 100 {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				tk := add(fmt.Sprintf("item-%03d", i), t0.Add(time.Duration(i)*time.Millisecond), sums[i])
				tk.Set(task.KeySpaceID, "bulk")
				if err := p.Handle(ctx, tk); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if n := historyLen(t, "acme", "bulk"); n != 100 {
			t.Fatalf("%d audit entries for store 1, want 100", n)
		}
		rows, more, err := index.List(ctx, "acme", "1", "bulk", "", 1000)
		if err != nil || more || len(rows) != 100 {
			t.Fatalf("index: %d live rows (more %v, %v), want 100", len(rows), more, err)
		}
		d, err := dupHigh.Depth(ctx)
		if err != nil || d.Total() != 200 {
			t.Fatalf("dup-high depth = %+v, %v; want 200", d, err)
		}
		// Spot-check the tasks.
		msgs, err := dupHigh.Receive(ctx, 10, time.Second)
		if err != nil || len(msgs) == 0 {
			t.Fatalf("receive DUP: %d, %v", len(msgs), err)
		}
		for _, m := range msgs {
			tk, err := task.Decode(m.Body)
			if err != nil {
				t.Fatal(err)
			}
			d, err := task.DupFrom(tk)
			if err != nil || d.Account != "acme" || d.StoreID != "1" || d.SpaceID != "bulk" || !strings.HasPrefix(d.ContentID, "item-") || (d.DestStoreID != "2" && d.DestStoreID != "3") {
				t.Fatalf("DUP = %+v, %v", d, err)
			}
		}
		purge(t, sqsc, dupHigh.URL())
	})

	t.Run("b/RedeliveredOnce", func(t *testing.T) {
		before := index.Applied()
		tk := solo("twice", t0, write(t, "solo", "s", "twice", "c1"))
		handle(t, tk)
		handle(t, tk)
		if n := historyLen(t, "solo", "s"); n != 1 {
			t.Fatalf("%d audit entries, want 1", n)
		}
		if n := index.Applied() - before; n != 1 {
			t.Fatalf("%d index updates, want 1", n)
		}
	})

	t.Run("c/OlderAfterNewer", func(t *testing.T) {
		newer := write(t, "solo", "s", "order", "newer")
		handle(t, solo("order", t0.Add(time.Hour), newer))
		handle(t, solo("order", t0, "older"))
		if r := row(t, at("solo", "s", "order")); r.Checksum != newer || !r.Modified.Equal(t0.Add(time.Hour)) {
			t.Fatalf("row = %+v", r)
		}
	})

	t.Run("d/Deletes", func(t *testing.T) {
		remove(t, "s", "twice")
		del := task.Audit{Account: "solo", StoreID: "1", SpaceID: "s", ContentID: "twice", Action: task.ActionDeleteContent, DateTime: t0.Add(time.Minute)}.Task()
		handle(t, del)
		if !row(t, at("solo", "s", "twice")).Deleted || row(t, at("solo", "s", "order")).Deleted {
			t.Fatal("DELETE_CONTENT did not mark exactly its item")
		}
		remove(t, "s", "order")
		solo, err := opener.Open(ctx, "solo", "1")
		if err != nil {
			t.Fatal(err)
		}
		if err := solo.DeleteSpace(ctx, "s"); err != nil {
			t.Fatal(err)
		}
		sp := task.Audit{Account: "solo", StoreID: "1", SpaceID: "s", Action: task.ActionDeleteSpace, DateTime: t0.Add(2 * time.Hour)}.Task()
		handle(t, sp)
		rows, _, err := index.List(ctx, "solo", "1", "s", "", 100)
		if err != nil || len(rows) != 0 {
			t.Fatalf("live rows after DELETE_SPACE: %d, %v", len(rows), err)
		}
		if !row(t, at("solo", "s", "order")).Deleted {
			t.Fatal("DELETE_SPACE left a row live")
		}
	})

	t.Run("e/DirectUploadNotification", func(t *testing.T) {
		out, err := sqsc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(auditQ.URL()),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		if err != nil {
			t.Fatal(err)
		}
		arn := out.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
		if err := s3event.ConfigureBucketNotifications(ctx, s3c, bucket, arn); err != nil {
			t.Fatal(err)
		}
		// Idempotent.
		if err := s3event.ConfigureBucketNotifications(ctx, s3c, bucket, arn); err != nil {
			t.Fatal(err)
		}
		key := "mill/photos/direct upload+1.txt"
		if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
			Body: strings.NewReader("a"), ContentType: aws.String("text/plain")}); err != nil {
			t.Fatal(err)
		}
		handle(t, s3Events(t, auditQ, 1)[0])
		e, err := log.Latest(ctx, "acme", "1", "photos", "direct upload+1.txt")
		if err != nil || e.Action != task.ActionAddContent || e.Checksum != "0cc175b9c0f1b6a831c399e269772661" || e.Size == nil || *e.Size != 1 {
			t.Fatalf("audit entry = %+v, %v", e, err)
		}
		r := row(t, at("acme", "photos", "direct upload+1.txt"))
		if r.Deleted || r.Checksum != e.Checksum || r.MimeType != "text/plain" {
			t.Fatalf("index row = %+v", r)
		}
		d, err := dupHigh.Depth(ctx)
		if err != nil || d.Total() != 2 {
			t.Fatalf("dup-high depth = %+v, %v; want 2", d, err)
		}
	})

	// Events are acted on only once a HEAD of the object confirms them.
	t.Run("f/ForgedAndReorderedRemovals", func(t *testing.T) {
		const content = "direct upload+1.txt"
		key := "mill/photos/" + content
		item := at("acme", "photos", content)
		if row(t, item).Deleted {
			t.Fatal("the item of e/ is not live")
		}
		// A forged ObjectRemoved for the live object: refused, as a
		// permanent error naming the rule; the row stays live.
		// (Its time is a little ahead: the object was written less than a
		// second ago, and a removal in the second of the object's
		// LastModified may be followed by a re-creation — skipped, not
		// dead-lettered.)
		forged := s3Body(bucket, url.QueryEscape(key), "ObjectRemoved:Delete", time.Now().Add(2*time.Second))
		err := p.Handle(ctx, decode(t, forged))
		if !processors.IsPermanent(err) || !strings.Contains(err.Error(), "s3event: not confirmed by HEAD: ObjectRemoved:Delete") {
			t.Errorf("forged removal of a live object: %v; want a permanent error naming the rule", err)
		}
		if row(t, item).Deleted {
			t.Fatal("a forged ObjectRemoved tombstoned a live item")
		}

		// Removed, then written again, and the removal's event handled
		// last: the item stays live.
		if _, err := s3c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond) // LastModified has whole seconds
		if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
			Body: strings.NewReader("ab"), ContentType: aws.String("text/plain")}); err != nil {
			t.Fatal(err)
		}
		recs := s3Events(t, auditQ, 2)
		if !strings.Contains(recs[0].Get(task.KeyS3Event), "ObjectRemoved") {
			t.Fatalf("first notification: %s", recs[0].Get(task.KeyS3Event))
		}
		handle(t, recs[1]) // the re-creation
		handle(t, recs[0]) // the removal, late
		if r := row(t, item); r.Deleted || r.Checksum != "187ef4436122d1cc2f40dc2b92f0eba0" || *r.Size != 2 {
			t.Fatalf("after a removal handled after the re-creation: row %+v; want live with the new content", r)
		}

		// A real removal, confirmed by HEAD: the row is tombstoned.
		if _, err := s3c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
			t.Fatal(err)
		}
		handle(t, s3Events(t, auditQ, 1)[0])
		if !row(t, item).Deleted {
			t.Fatal("a confirmed removal did not tombstone the row")
		}
	})
}

// s3Events receives n S3 event notifications (AUDIT tasks) from q, in the
// order they arrived, skipping s3:TestEvent; any other task fails the
// test.
func s3Events(t *testing.T, q queue.Queue, n int) []*task.Task {
	t.Helper()
	var out []*task.Task
	deadline := time.Now().Add(30 * time.Second)
	for len(out) < n && time.Now().Before(deadline) {
		msgs, err := q.Receive(context.Background(), 1, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			tk, err := task.Decode(m.Body)
			if err != nil {
				t.Fatalf("decode %s: %v", m.Body, err)
			}
			switch {
			case tk.Type == task.TypeNoop: // s3:TestEvent
			case tk.Type == task.TypeAudit && tk.Get(task.KeyS3Event) != "":
				out = append(out, tk)
			default:
				t.Fatalf("unexpected task %v", tk)
			}
		}
		if err := q.Delete(context.Background(), msgs...); err != nil {
			t.Fatal(err)
		}
	}
	if len(out) != n {
		t.Fatalf("%d S3 event notifications arrived, want %d", len(out), n)
	}
	return out
}

func purge(t *testing.T, c *sqs.Client, url string) {
	t.Helper()
	if _, err := c.PurgeQueue(context.Background(), &sqs.PurgeQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatal(err)
	}
}
