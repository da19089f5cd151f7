package adversarial

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/workman"
)

// javaBody is a task as the Java Mill writes it: .properties text with
// only DuraCloud's properties.
func javaBody(t *testing.T, typ task.Type, props map[string]string) string {
	t.Helper()
	p := map[string]string{task.KeyAccount: "acme", task.KeyStoreID: "1", task.KeySpaceID: space}
	for k, v := range props {
		p[k] = v
	}
	b, err := task.Encode(&task.Task{Type: typ, Props: p}, task.FormatProperties)
	must(t, err)
	if !strings.HasPrefix(string(b), "#") {
		t.Fatalf("not .properties text: %.80q", b)
	}
	return string(b)
}

// TestJavaShapedMessages: the real workman, fed what the Java Mill's bit
// producer and bit workers write, gives those messages their Java meaning
// and never more than Mill observed. A BIT_REPORT with no run reports the
// space's checks made for the Java producer's BIT tasks (no run): ERROR
// while an item has none, SUCCESS only once Mill checked every item. A
// BIT_ERROR with no case is looked at again: a corrupted copy is repaired
// from a good one, a healthy item's is dead-lettered. With
// MILL_WIRE_FORMAT=properties workman writes what it sends as .properties
// text, which Java workers read.
func TestJavaShapedMessages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	testbin.Build(t, "workman")
	m := newMill(t, ctx)
	m.writeConfig(nil, nil)
	items := map[string]string{"a": "alpha content", "b": "bravo content", "c": "charlie content"}
	sums := map[string]string{}
	for id, body := range items {
		for _, s := range []string{"1", "2", "3"} {
			sums[id] = m.put(s, space, id, body).Checksum
		}
	}
	bl := m.bitLog()
	w := m.startWorkman()
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second))) // after the writes' whole second
	for id := range items {
		m.send(queue.KeyAudit, audit(t, task.Audit{ContentID: id, Action: task.ActionAddContent, ContentChecksum: sums[id]}), nil)
	}
	if !m.drained(60*time.Second, w) {
		t.Fatal("the AUDIT tasks did not drain")
	}
	javaReport := func() bitlog.Report {
		t.Helper()
		m.send(queue.KeyBitReport, javaBody(t, task.TypeBitReport, nil), nil)
		if !m.drained(60*time.Second, w) {
			t.Fatal("the BIT_REPORT did not drain")
		}
		reps, err := bl.Reports(ctx, bitlog.ReportFilter{Account: "acme", StoreID: "1", SpaceID: space})
		must(t, err)
		if len(reps) != 1 || reps[0].RunID != "" {
			t.Fatalf("reports %+v, want the one of no run", reps)
		}
		return reps[0]
	}

	// The Java producer's BIT tasks for a and b; none for c.
	for _, id := range []string{"a", "b"} {
		m.send(queue.KeyBit, javaBody(t, task.TypeBit, map[string]string{task.KeyContentID: id}), nil)
	}
	if !m.drained(60*time.Second, w) {
		t.Fatal("the BIT tasks did not drain")
	}
	if rep := javaReport(); rep.Result != bitlog.ResultError || rep.Counts != (bitlog.Counts{Total: 3, Success: 2, Error: 1}) {
		t.Fatalf("with c unchecked: %+v, want ERROR (2 SUCCESS, c not checked)", rep)
	}
	m.send(queue.KeyBit, javaBody(t, task.TypeBit, map[string]string{task.KeyContentID: "c"}), nil)
	if !m.drained(60*time.Second, w) {
		t.Fatal("the BIT task did not drain")
	}
	if rep := javaReport(); rep.Result != bitlog.ResultSuccess || rep.Counts != (bitlog.Counts{Total: 3, Success: 3}) {
		t.Fatalf("every item checked: %+v, want SUCCESS of 3", rep)
	}

	// Workman again, writing .properties and not serving the bit queue,
	// so the re-check its repair queues can be read as sent.
	must(t, w.Stop())
	m.extraEnv = append(m.extraEnv, "MILL_WIRE_FORMAT=properties")
	w = m.startWorkman("--queues", "audit,dup-high,dup-low,bit-report,bit-error")

	// a's copy in store 1 goes sour: other bytes, its recorded MD5 kept.
	key := "mill/" + space + "/a"
	head, err := m.s3c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(m.bucket1), Key: aws.String(key)})
	must(t, err)
	_, err = m.s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(m.bucket1), Key: aws.String(key),
		Body: bytes.NewReader([]byte("alpha c0ntent")), Metadata: head.Metadata, ContentType: head.ContentType})
	must(t, err)

	javaErr := func(id string) string {
		return m.send(queue.KeyBitError, javaBody(t, task.TypeBitError, map[string]string{task.KeyContentID: id,
			"description": "Checksums do not match", "storeType": "AMAZON_S3",
			"contentChecksum": "ffffffffffffffffffffffffffffffff", "storeChecksum": "00000000000000000000000000000000"}), nil)
	}
	javaErr("a")
	healthy := javaErr("b")
	letters := m.deadLetters(1, 90*time.Second, w)
	if len(letters) != 1 || letters[0].MessageID != healthy || letters[0].Reason != workman.ReasonPermanent ||
		!strings.Contains(letters[0].Error, "observation rule") {
		t.Fatalf("dead letters %+v, want b's, refused by the observation rule", letters)
	}
	testbin.WaitFor(t, 60*time.Second, "a repaired in store 1", func() bool {
		b, err := m.read("1", space, "a")
		return err == nil && string(b) == items["a"]
	})
	// The bit-error processor repairs first and records the row after.
	var rows []bitlog.Row
	testbin.WaitFor(t, 30*time.Second, "a's bit-log row", func() bool {
		var err error
		rows, _, err = bl.Results(ctx, bitlog.Filter{Account: "acme", StoreID: "1", SpaceID: space, ContentID: "a"})
		must(t, err)
		return len(rows) > 0
	})
	if len(rows) != 1 || rows[0].RunID != "" || rows[0].Result != bitlog.ResultFailure ||
		rows[0].StorageChecksum == "00000000000000000000000000000000" || !strings.Contains(rows[0].Details, "Java-shaped") {
		t.Fatalf("a's rows %+v, want the observed FAILURE outside any run", rows)
	}

	// The re-check the repair queued, as workman wrote it.
	bq, err := sqsqueue.Open(ctx, m.sqsc, queue.Name(m.prefix, queue.KeyBit), sqsqueue.Config{})
	must(t, err)
	var body string
	testbin.WaitFor(t, 30*time.Second, "the re-check on the bit queue", func() bool {
		ms, err := bq.Receive(ctx, 1, time.Second)
		must(t, err)
		if len(ms) == 1 {
			body = string(ms[0].Body)
			must(t, bq.Delete(ctx, ms...))
		}
		return body != ""
	})
	tk, err := task.Decode([]byte(body))
	if !strings.HasPrefix(body, "#") || err != nil || tk.Type != task.TypeBit || tk.Get(task.KeyContentID) != "a" || tk.Get(task.KeyRunID) != "" {
		t.Fatalf("re-check %q (%v), want a BIT of a in .properties text with no run", body, err)
	}
}
