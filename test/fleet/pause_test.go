package fleet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/auditlog/dynamoauditlog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	"github.com/millfleet/mill/pkg/task"
)

// TestPauseDupFleetWide: two Workman processes run DUP (copying store 1 to
// store 2) and BIT tasks (checking store 1) while a feeder keeps sending
// both. millctl pause DUP is acknowledged by both workers within one
// interval; from each worker's acknowledgement on no DUP completes there
// (its log and its counts say so) while BIT tasks go on; millctl resume
// restarts DUP, and in the end every item was copied and checked, nothing
// dead-lettered.
func TestPauseDupFleetWide(t *testing.T) {
	cfg := testenv.AWS(t)
	dbURL := testenv.Schema(t)
	workman, mctl := bins(t)
	ctx := context.Background()
	began := time.Now()
	logf := func(format string, args ...any) {
		t.Logf("%6.1fs "+format, append([]any{time.Since(began).Seconds()}, args...)...)
	}
	const (
		items   = 80
		account = "acme"
		space   = "photos"
		runID   = "20260301T000000Z"
	)
	prefix := testenv.Prefix(t)
	sq, s3c, ddb := cfg.SQS(), cfg.S3(), cfg.DynamoDB()
	names := map[string]string{"MILL_CONFIG_BUCKET": prefix + "config", "MILL_STATE_BUCKET": prefix + "state", "MILL_CLAIMS_BUCKET": prefix + "state",
		"MILL_REPORTS_BUCKET": prefix + "reports", "MILL_AUDIT_TABLE": prefix + "audit-log", "MILL_LEASE_TABLE": prefix + "leases",
		"MILL_FLEET_TABLE": prefix + "fleet"}
	testenv.CleanupQueues(t, sq, prefix)
	for _, b := range []string{names["MILL_CONFIG_BUCKET"], names["MILL_STATE_BUCKET"], names["MILL_REPORTS_BUCKET"]} {
		testenv.CleanupBucket(t, s3c, b)
	}
	for _, k := range []string{"MILL_AUDIT_TABLE", "MILL_LEASE_TABLE", "MILL_FLEET_TABLE"} {
		testenv.CleanupTable(t, ddb, names[k])
	}
	dir := t.TempDir()
	root1, root2 := filepath.Join(dir, "store1"), filepath.Join(dir, "store2")
	must(t, os.WriteFile(filepath.Join(dir, "accounts.json"), fmt.Appendf(nil, `{"accounts": [{"id": %q, "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "fs", "root": %q},
  {"id": "2", "kind": "fs", "root": %q}]}]}`, account, root1, root2), 0o644))
	// The DUP tasks copy store 1 to store 2, which the account's policy
	// must authorise (docs/ARCHITECTURE.md, Safety).
	must(t, os.WriteFile(filepath.Join(dir, "duplication-accounts.json"), fmt.Appendf(nil, `[%q]`, account), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, account+"-duplication-policy.json"),
		[]byte(`{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`), 0o644))
	env := testbin.Env("MILL_QUEUE_PREFIX="+prefix, "MILL_CONFIG_DIR="+dir, "MILL_DATABASE_URL="+dbURL)
	for k, v := range names {
		env = append(env, k+"="+v)
	}
	millctl(t, mctl, env, "setup")
	logf("millctl setup done")

	// The items: in store 1, its content index and the audit log, all
	// agreeing (a bit check of each is case 1, success).
	s1, err := fsstore.New(root1)
	must(t, err)
	must(t, s1.CreateSpace(ctx, space))
	db, err := milldb.Open(ctx, dbURL, milldb.Config{MaxConns: 8})
	must(t, err)
	defer db.Close()
	index := pgcontentindex.New(db.Pool)
	alog := dynamoauditlog.New(ddb, names["MILL_AUDIT_TABLE"])
	at := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	id := func(i int) string { return fmt.Sprintf("item-%04d", i) }
	// Seeded by 8 goroutines: a shared emulator answers each write slowly.
	var seedWG sync.WaitGroup
	seedErr := make(chan error, items)
	next := make(chan int)
	for range 8 {
		seedWG.Go(func() {
			for i := range next {
				body := fmt.Sprintf("content of item %d", i)
				sum, _, _ := storage.MD5Hex(strings.NewReader(body))
				size := int64(len(body))
				if _, err := s1.Put(ctx, space, id(i), strings.NewReader(body), storage.PutOptions{Size: size, Checksum: sum, MimeType: "text/plain"}); err != nil {
					seedErr <- err
				}
				if _, err := index.Upsert(ctx, contentindex.Entry{Item: contentindex.Item{Account: account, StoreID: "1", SpaceID: space, ContentID: id(i)},
					Checksum: sum, Size: &size, MimeType: "text/plain", Modified: at}); err != nil {
					seedErr <- err
				}
				if _, err := alog.Put(ctx, auditlog.Entry{Account: account, StoreID: "1", SpaceID: space, ContentID: id(i),
					Action: task.ActionAddContent, Time: at, Checksum: sum, Size: &size, MimeType: "text/plain"}); err != nil {
					seedErr <- err
				}
			}
		})
	}
	for i := range items {
		next <- i
	}
	close(next)
	seedWG.Wait()
	close(seedErr)
	for err := range seedErr {
		t.Fatal(err)
	}
	logf("%d items seeded", items)
	open := func(key string) *sqsqueue.Queue {
		q, err := sqsqueue.Open(ctx, sq, queue.Name(prefix, key), sqsqueue.Config{})
		must(t, err)
		return q
	}
	dupQ, bitQ, dead := open(queue.KeyDupHigh), open(queue.KeyBit), open(queue.KeyDeadLetter)

	// Two workers; the feeder sends 10 DUP and 10 BIT tasks every 300 ms.
	var ps []*proc
	for _, w := range []string{"p1", "p2"} {
		ps = append(ps, start(t, w, workman, env, workmanArgs(w, prefix, names["MILL_FLEET_TABLE"],
			"--queues", "dup-high,bit", "--task-types", "DUP,BIT", "--workers", "2", "--instance-metadata=false")...))
	}
	// The second half is sent while DUP is paused, so DUP tasks wait and
	// BIT tasks keep coming.
	var feedErr error
	var feedWG sync.WaitGroup
	pauseSeen := make(chan struct{})
	feedWG.Go(func() {
		for lo := 0; lo < items; lo += 10 {
			if lo == items/2 {
				<-pauseSeen
			}
			var dups, bits []queue.SendEntry
			for i := lo; i < min(lo+10, items); i++ {
				d, err := task.Encode(task.Dup{Account: account, StoreID: "1", DestStoreID: "2", SpaceID: space, ContentID: id(i)}.Task(), task.FormatJSON)
				if err != nil {
					feedErr = err
					return
				}
				b, err := task.Encode(task.Bit{Account: account, StoreID: "1", SpaceID: space, ContentID: id(i), RunID: runID}.Task(), task.FormatJSON)
				if err != nil {
					feedErr = err
					return
				}
				dups, bits = append(dups, queue.SendEntry{Body: d}), append(bits, queue.SendEntry{Body: b})
			}
			if err := dupQ.Send(ctx, dups...); err != nil {
				feedErr = err
				return
			}
			if err := bitQ.Send(ctx, bits...); err != nil {
				feedErr = err
				return
			}
			time.Sleep(300 * time.Millisecond)
		}
	})

	// Pause DUP once both workers are running DUP and BIT tasks.
	logf("set up; workers started")
	testbin.WaitFor(t, 60*time.Second, "both workers processing", func() bool {
		s := snapshot(t, mctl, env)
		return s.Totals[fleet.StateRunning] == 2 && total(s, "DUP").Processed >= 3 && total(s, "BIT").Processed >= 3
	})
	logf("both workers processing")
	pausedAt := time.Now()
	millctl(t, mctl, env, "pause", "--reason", "test", "DUP")
	var ack fleet.Snapshot
	testbin.WaitFor(t, 10*time.Second, "both workers acknowledge the pause", func() bool {
		ack = snapshot(t, mctl, env)
		n := 0
		for _, w := range ack.Workers {
			if slices.Contains(w.Pauses, "type:DUP") {
				n++
			}
		}
		return n == 2
	})
	took := time.Since(pausedAt)
	close(pauseSeen)
	logf("pause acknowledged by both workers %v after millctl pause returned", took.Round(time.Millisecond))
	// Seen through millctl fleet: one interval plus the time the records
	// and the snapshots take on a shared emulator.
	if took > interval+5*time.Second {
		t.Errorf("pause took %v to show in every worker's record, want about one interval (%v)", took, interval)
	}
	if len(ack.Pauses) != 1 || ack.Pauses[0].Key() != "type:DUP" || ack.Pauses[0].Reason != "test" {
		t.Fatalf("pauses %+v", ack.Pauses)
	}
	pauseAt := ack.Pauses[0].At
	dupAck, bitAck := total(ack, "DUP").Processed, total(ack, "BIT").Processed
	time.Sleep(5 * interval)
	during := snapshot(t, mctl, env)
	if got := total(during, "DUP").Processed; got != dupAck {
		t.Errorf("DUP tasks completed after the pause was acknowledged: %d → %d", dupAck, got)
	}
	if got := total(during, "BIT").Processed; got <= bitAck {
		t.Errorf("BIT stopped while only DUP was paused: %d → %d", bitAck, got)
	}
	if d, err := dupQ.Depth(ctx); err != nil || d.Visible == 0 {
		t.Errorf("dup-high while DUP is paused: %+v, %v; want DUP tasks waiting", d, err)
	}
	// Each worker's own log: no DUP completed after its acknowledgement.
	for _, p := range ps {
		var pausedLog time.Time
		for _, l := range p.lines(t) {
			if l.Msg == "fleet pause in force" && strings.HasPrefix(l.Pause, "type DUP") {
				pausedLog = l.Time
			}
		}
		if pausedLog.IsZero() {
			t.Fatalf("%s logged no pause", p.Name)
		}
		// Within one interval of the pause's write, plus one beat's calls.
		if d := pausedLog.Sub(pauseAt); d > interval+time.Second {
			t.Errorf("%s put the pause in force %v after it was written, want within one interval (%v)", p.Name, d, interval)
		} else {
			logf("%s: pause in force %v after it was written", p.Name, d.Round(time.Millisecond))
		}
		for _, l := range p.lines(t) {
			if l.Msg == "task done" && l.TaskType == "DUP" && l.Time.After(pausedLog) {
				t.Errorf("%s: a DUP task completed at %v, after the pause was in force (%v)", p.Name, l.Time, pausedLog)
			}
		}
	}
	text := millctl(t, mctl, env, "queues", "--no-age")
	if !strings.Contains(text, "type DUP") {
		t.Errorf("millctl queues does not show the pause:\n%s", text)
	}

	millctl(t, mctl, env, "resume", "DUP")
	logf("resumed")
	feedWG.Wait()
	must(t, feedErr)
	s2, err := fsstore.New(root2)
	must(t, err)
	testbin.WaitFor(t, 90*time.Second, "every item copied and checked", func() bool {
		s := snapshot(t, mctl, env)
		if total(s, "BIT").Processed < items || total(s, "DUP").Processed < items {
			return false
		}
		for i := range items {
			if _, err := s2.Head(ctx, space, id(i)); err != nil {
				return false
			}
		}
		return true
	})
	logf("every item copied and checked")
	for _, q := range []*sqsqueue.Queue{dupQ, bitQ} {
		testbin.WaitFor(t, 30*time.Second, q.Name()+" drained", func() bool {
			d, err := q.Depth(ctx)
			return err == nil && d.Total() == 0
		})
	}
	if d, err := dead.Depth(ctx); err != nil || d.Total() != 0 {
		t.Fatalf("dead-letter queue: %+v, %v", d, err)
	}
	s := snapshot(t, mctl, env)
	if c := total(s, ""); c.DeadLettered != 0 || c.Failed != 0 {
		t.Errorf("counts %+v: want no failures", c)
	}
	for _, p := range ps {
		p.Signal(t, syscall.SIGTERM)
	}
	for _, p := range ps {
		if err := p.Wait(t, 30*time.Second); err != nil {
			t.Errorf("%s after SIGTERM: %v", p.Name, err)
		}
	}
}
