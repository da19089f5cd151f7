//go:build faults

package faults

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/faultproxy"
	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/auditlog/dynamoauditlog"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/s3store"
	"github.com/millfleet/mill/pkg/task"
)

// throttleRate is the rate the proxy lets through to the throttled
// bucket: MILL_FAULTS_THROTTLE_RATE requests a second (default 20).
func throttleRate(t *testing.T) float64 {
	r := 20.0
	if v := os.Getenv("MILL_FAULTS_THROTTLE_RATE"); v != "" {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || x <= 0 {
			t.Fatalf("MILL_FAULTS_THROTTLE_RATE=%q: want a positive number", v)
		}
		r = x
	}
	return r
}

// ThrottleResult is what one throttled duplication measured.
type ThrottleResult struct {
	HotItems, ColdItems int
	Allowed             float64 // requests/s the proxy let through to the hot bucket
	HotRate             float64 // requests/s forwarded to the hot bucket over the hot run
	Ratio               float64 // HotRate / Allowed
	ColdRate            float64 // requests/s to the cold destination over the cold run
	HotTook, ColdTook   time.Duration
	Refused             int // 503 SlowDown answered
	Dead                int64
}

// runThrottledDup duplicates hot items (account hot, store 1 → 2) and
// cold items (account cold, its own buckets) with the real workman binary
// (16 workers) through a proxy in front of the emulator that answers
// 503 SlowDown to any request to the hot destination bucket above rate a
// second. The DUP tasks of both accounts are interleaved on one queue.
func runThrottledDup(t *testing.T, hot, cold int, rate float64) ThrottleResult {
	cfg := testenv.AWS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	workmanBin := binary(t, "workman")
	proxy := emulatorProxy(t)
	prefix := testenv.Prefix(t)
	sqsc, ddb, s3c := cfg.SQS(), cfg.DynamoDB(), cfg.S3()
	testenv.CleanupQueues(t, sqsc, prefix)
	ensureAllQueues(t, ctx, sqsc, prefix)
	dead := ensureQueue(t, ctx, sqsc, queue.Name(prefix, queue.KeyDeadLetter), 30*time.Second)
	dupQ := ensureQueue(t, ctx, sqsc, queue.Name(prefix, queue.KeyDupLow), 60*time.Second)
	auditTable := prefix + "audit"
	testenv.CreateTable(t, ddb, dynamoauditlog.CreateTableInput(auditTable), nil)
	bucket := func(name string) string { return newBucket(t, ctx, s3c, prefix, name) }
	hotSrc, hotDst, coldSrc, coldDst, conf := bucket("hot-src"), bucket("hot-dst"), bucket("cold-src"), bucket("cold-dst"), bucket("config")
	dbURL := testenv.Schema(t)
	migratedPool(t, ctx, dbURL)
	const space = "photos"

	// The items, written straight to the emulator (not through the proxy).
	fill := func(b string, n int) {
		st, err := s3store.New(s3c, s3store.Config{Bucket: b, Prefix: "mill/"})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.CreateSpace(ctx, space); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, n)
		sem := make(chan struct{}, 16)
		for i := range n {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				body := bytes.Repeat([]byte(fmt.Sprintf("%s item %d ", b, i)), 20)
				sum, _, _ := storage.MD5Hex(bytes.NewReader(body))
				if _, err := st.Put(ctx, space, itemID(i), bytes.NewReader(body), storage.PutOptions{Size: int64(len(body)), Checksum: sum}); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	fill(hotSrc, hot)
	fill(coldSrc, cold)
	store := func(id, b string) string {
		return fmt.Sprintf(`{"id": %q, "primary": %v, "kind": "s3", "bucket": %q, "prefix": "mill/", "region": "us-east-1"}`, id, id == "1", b)
	}
	for key, body := range map[string]string{
		"accounts.json": fmt.Sprintf(`{"accounts": [{"id": "hot", "status": "active", "stores": [%s, %s]},
  {"id": "cold", "status": "active", "stores": [%s, %s]}]}`, store("1", hotSrc), store("2", hotDst), store("1", coldSrc), store("2", coldDst)),
		"duplication-accounts.json":    `["hot", "cold"]`,
		"hot-duplication-policy.json":  `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`,
		"cold-duplication-policy.json": `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`,
	} {
		if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(conf), Key: aws.String(key), Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	// The destination spaces exist (a space-level DUP would make them).
	for _, b := range []string{hotDst, coldDst} {
		st, err := s3store.New(s3c, s3store.Config{Bucket: b, Prefix: "mill/"})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.CreateSpace(ctx, space); err != nil {
			t.Fatal(err)
		}
	}

	// The tasks: the cold ones interleaved one for one with the first hot
	// ones, then the rest of the hot ones; fed while they are consumed.
	var entries []queue.SendEntry
	for i := range hot {
		if i < cold {
			entries = append(entries, dupEntry(t, "cold", i))
		}
		entries = append(entries, dupEntry(t, "hot", i))
	}
	for i := hot; i < cold; i++ {
		entries = append(entries, dupEntry(t, "cold", i))
	}
	feedDone := make(chan error, 1)
	go func() {
		for len(entries) > 0 {
			if d, err := dupQ.Depth(ctx); err == nil && d.Visible > 300 {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			n := min(len(entries), 100)
			for lo := 0; lo < n; lo += queue.MaxBatch {
				if err := dupQ.Send(ctx, entries[lo:min(lo+queue.MaxBatch, n)]...); err != nil {
					feedDone <- err
					return
				}
			}
			entries = entries[n:]
		}
		feedDone <- nil
	}()

	proxy.Limit(faultproxy.Bucket(hotDst), rate, max(1, int(rate/10)))
	dir := t.TempDir()
	env := []string{"AWS_ENDPOINT_URL=" + proxy.URL(), "MILL_CONFIG_BUCKET=" + conf, "MILL_QUEUE_PREFIX=" + prefix, "MILL_DATABASE_URL=" + dbURL}
	logPath := filepath.Join(dir, "workman.log")
	begin := time.Now()
	wm := start(t, workmanBin, logPath, env, "--queues", "dup-low", "--task-types", "DUP", "--workers", "16",
		"--audit-table", auditTable, "--fleet-table", "", "--http-addr", "", "--cloudwatch=false", "--instance-metadata=false", "--grace-period", "10s")
	defer func() {
		_ = wm.Cmd.Process.Signal(syscall.SIGTERM)
		_ = wm.Wait(t, time.Minute)
	}()
	// Done: every item in its destination. Forwarded requests to each
	// destination are counted from the proxy's log.
	count := func(b string) int {
		n := 0
		p := s3.NewListObjectsV2Paginator(s3c, &s3.ListObjectsV2Input{Bucket: aws.String(b), Prefix: aws.String("mill/" + space + "/")})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				return -1
			}
			n += len(out.Contents)
		}
		return n
	}
	forwarded := func(b string) int {
		n := 0
		for _, r := range proxy.Requests() {
			if _, path, _ := strings.Cut(r, " "); path == "/"+b || strings.HasPrefix(path, "/"+b+"/") {
				n++
			}
		}
		return n
	}
	var coldTook time.Duration
	var coldReqs int
	if !testbin.Poll(15*time.Minute, time.Second, func() bool {
		if coldTook == 0 && count(coldDst) >= cold {
			coldTook, coldReqs = time.Since(begin), forwarded(coldDst)
		}
		return (coldTook > 0 && count(hotDst) >= hot) || wm.Exited()
	}) || wm.Exited() {
		t.Fatalf("duplication incomplete: hot %d/%d, cold %d/%d; log:\n%s", count(hotDst), hot, count(coldDst), cold, tail(logPath, 6000))
	}
	hotTook := time.Since(begin)
	hotReqs := forwarded(hotDst)
	if err := <-feedDone; err != nil {
		t.Fatal(err)
	}
	refused, _ := proxy.Answered()
	res := ThrottleResult{HotItems: hot, ColdItems: cold, Allowed: rate, HotTook: hotTook, ColdTook: coldTook, Refused: refused,
		HotRate: float64(hotReqs) / hotTook.Seconds(), ColdRate: float64(coldReqs) / coldTook.Seconds()}
	res.Ratio = res.HotRate / rate
	d, err := dead.Depth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res.Dead = d.Total()
	lines := readLog(t, logPath)
	for _, l := range lines {
		cold := strings.Contains(fmt.Sprint(l.Raw["store"]), "cold")
		if cold && (l.Msg == "store request limit changed" || l.Msg == "store throttled the task; released without counting an attempt") {
			t.Errorf("a cold store was limited: %v", l.Raw)
		}
	}
	t.Logf("log by message:%s", countMsgs(lines))
	if refused == 0 {
		t.Errorf("the proxy throttled nothing: the test did not test throttling")
	}
	return res
}

func dupEntry(t *testing.T, account string, i int) queue.SendEntry {
	body, err := task.Encode(task.Dup{Account: account, StoreID: "1", DestStoreID: "2", SpaceID: "photos", ContentID: itemID(i)}.Task(), task.FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	return queue.SendEntry{Body: body}
}

// TestThrottledBucket: a duplication of 2,000 items (scaled; 300 under
// -short) whose destination bucket answers 503 SlowDown above 20
// requests a second (MILL_FAULTS_THROTTLE_RATE) ends with every item
// copied and nothing dead-lettered, while a second account's items in the
// same run, on buckets of their own and queued among the first hot ones,
// are never limited nor released and finish in under a third of the
// throttled store's time.
func TestThrottledBucket(t *testing.T) {
	hot := scaled(2000, 200)
	if testing.Short() {
		hot = 300
	}
	cold := max(hot/4, 50)
	res := runThrottledDup(t, hot, cold, throttleRate(t))
	if res.Dead != 0 {
		t.Errorf("%d tasks dead-lettered", res.Dead)
	}
	// The cold items are queued among the first hot ones: held back by
	// the hot store (workers waiting on its turns), they would finish
	// with it; at full speed they finish long before.
	if res.ColdTook > res.HotTook/3 {
		t.Errorf("the unthrottled store's %d items took %v, the throttled store's %d took %v: want under a third",
			res.ColdItems, res.ColdTook, res.HotItems, res.HotTook)
	}
	if math.IsNaN(res.Ratio) || res.Ratio < 0.5 {
		t.Errorf("the throttled bucket got %.2f of its allowed rate", res.Ratio)
	}
	t.Logf("RESULT throttle: %d hot items at %.0f requests/s allowed: %.1f/s achieved (%.3f×) in %v, %d answered SlowDown; "+
		"%d cold items at %.1f requests/s in %v; %d dead letters",
		res.HotItems, res.Allowed, res.HotRate, res.Ratio, res.HotTook.Round(time.Millisecond), res.Refused,
		res.ColdItems, res.ColdRate, res.ColdTook.Round(time.Millisecond), res.Dead)
}
