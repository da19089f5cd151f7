//go:build faults

package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/millfleet/mill/internal/testkit/faultproxy"
	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/auditlog/dynamoauditlog"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
)

// TestKillWorkmanTransfer is TestKillTransfer with Workman itself: the
// workman binary receives a DUP task of the big item from SQS, then a BIT
// task of it, all its AWS traffic through the S3-shaped proxy, checkpoints
// in the state bucket (--checkpoint-bucket, one per part); each time it is
// killed with SIGKILL at about 60 % of the transfer, and a second workman
// receives the same message when its visibility timeout runs out. The copy
// must complete equal to the source and the check must record a success,
// each having moved again at most two parts' worth of bytes (counted at
// the proxy), leaving no checkpoint and no incomplete upload.
func TestKillWorkmanTransfer(t *testing.T) {
	cfg := testenv.AWS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin := binary(t, "workman")
	const vt = 8 * time.Second // the killed task's message comes back soon
	prefix, work, dead := noopQueues(t, ctx, cfg, vt)
	f := newKillFixture(t, ctx, cfg, prefix, "mill/")
	proxy, direct, info := f.proxy, f.direct, f.info
	src, dst, state := prefix+"src", prefix+"dst", prefix+"state"
	dbURL := testenv.Schema(t)
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := milldb.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	// What the bit check compares the content with: the index row and
	// the audit log's ADD_CONTENT.
	table := prefix + "audit"
	ddb := cfg.DynamoDB()
	testenv.CleanupTable(t, ddb, table)
	if _, err := ddb.CreateTable(ctx, dynamoauditlog.CreateTableInput(table)); err != nil {
		t.Fatal(err)
	}
	size := info.Size
	item := contentindex.Item{Account: "acme", StoreID: "1", SpaceID: "s", ContentID: "big"}
	if _, err := pgcontentindex.New(pool).Upsert(ctx, contentindex.Entry{Item: item, Checksum: info.Checksum, Size: &size, Modified: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := dynamoauditlog.New(ddb, table).Put(ctx, auditlog.Entry{Account: "acme", StoreID: "1", SpaceID: "s", ContentID: "big",
		Action: task.ActionAddContent, Time: time.Now(), Checksum: info.Checksum, Size: &size}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "config")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		t.Fatal(err)
	}
	// Store 2 in another region: another S3 client, so the copy streams
	// through workman (no server-side copy).
	writeFile(t, filepath.Join(conf, "accounts.json"), fmt.Sprintf(`{"accounts": [{"id": "acme", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "s3", "bucket": %q, "prefix": "mill/", "region": "us-east-1"},
  {"id": "2", "kind": "s3", "bucket": %q, "prefix": "mill/", "region": "us-east-2"}]}]}`, src, dst))
	writeFile(t, filepath.Join(conf, "duplication-accounts.json"), `["acme"]`)
	writeFile(t, filepath.Join(conf, "acme-duplication-policy.json"), `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`)
	proxy.SetShape(faultproxy.Shape{Rate: killRate, Latency: 20 * time.Millisecond})
	env := []string{"AWS_ENDPOINT_URL=" + proxy.URL()}
	args := workmanArgs(prefix, work.Name(), dead.Name(), filepath.Join(dir, "record"), 1,
		"--task-types", "DUP,BIT", "--config-dir", conf, "--database-url", dbURL, "--audit-table", table,
		"--checkpoint-bucket", state, "--transfer-streams", fmt.Sprint(killStreams), "--transfer-part-size", fmt.Sprint(killPartSize),
		"--resume-min-size", "1", "--bit-checkpoint-every", fmt.Sprint(killPartSize), "--receive-wait", "1s")
	logPath := filepath.Join(dir, "workman.log")
	run := func(tk *task.Task, moved func(faultproxy.Stats) int64, done func() bool) (up, down int64) {
		t.Helper()
		body, err := task.Encode(tk, task.FormatJSON)
		if err != nil {
			t.Fatal(err)
		}
		if err := work.Send(ctx, queue.SendEntry{Body: body}); err != nil {
			t.Fatal(err)
		}
		before := proxy.Stats()
		p := start(t, bin, logPath, env, args...)
		at := before
		if !testbin.Poll(3*time.Minute, 20*time.Millisecond, func() bool {
			at = proxy.Stats()
			return moved(at)-moved(before) >= killAt || p.Exited()
		}) || p.Exited() {
			t.Fatalf("%s: the first workman did not reach 60 %% (exited %v); log:\n%s", tk.Type, p.Exited(), tail(logPath, 4000))
		}
		if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.Done()
		killed := proxy.Stats()
		p = start(t, bin, logPath, env, args...)
		if !testbin.Poll(4*time.Minute, 200*time.Millisecond, func() bool { return done() || p.Exited() }) || !done() {
			t.Fatalf("%s: the second workman did not finish the task (exited %v); log:\n%s", tk.Type, p.Exited(), tail(logPath, 4000))
		}
		after := proxy.Stats()
		_ = p.Cmd.Process.Signal(syscall.SIGTERM)
		if err := p.Wait(t, time.Minute); err != nil {
			t.Errorf("%s: the second workman: %v; log:\n%s", tk.Type, err, tail(logPath, 4000))
		}
		up, down = after.BytesUp-before.BytesUp, after.BytesDown-before.BytesDown
		t.Logf("RESULT kill-workman-%s: killed at %.0f %% (%d MB up, %d MB down); whole run %d MB up, %d MB down for a %d MB object (part %d MiB, %d streams; SQS, checkpoints and listings included)",
			tk.Type, 100*float64(moved(at)-moved(before))/killSize, (killed.BytesUp-before.BytesUp)/1e6, (killed.BytesDown-before.BytesDown)/1e6,
			up/1e6, down/1e6, int64(killSize)/1e6, killPartSize>>20, killStreams)
		return up, down
	}
	// The slack is the requests' own bytes counted at the proxy (headers,
	// checkpoints, listings; about 0.01 part measured: 2.01 parts down for
	// the copy). A part is fetched again whole however late the kill is
	// noticed, and the slack is small enough that a stray ranged GET (the
	// resume's first-part read, 0.11 part, once) fails the test.
	const slack = 512 << 10
	resent := func(what string, n int64) {
		t.Helper()
		t.Logf("RESULT kill-workman: %s re-sent %.2f parts", what, float64(n)/killPartSize)
		if n > 2*killPartSize+slack {
			t.Errorf("%s: re-sent %d bytes, more than two parts (%d)", what, n, 2*killPartSize)
		}
	}

	// The copy.
	up, down := run(task.Dup{Account: "acme", StoreID: "1", DestStoreID: "2", SpaceID: "s", ContentID: "big"}.Task(),
		func(s faultproxy.Stats) int64 { return s.BytesUp }, func() bool {
			_, err := f.dst.Head(ctx, "s", "big")
			return err == nil
		})
	resent("copy up", up-killSize)
	resent("copy down", down-killSize)
	f.verifyCopy(t, ctx, dst)

	// The bit check of the source item.
	blog := pgbitlog.New(pool)
	var rows []bitlog.Row
	_, down = run(task.Bit{Account: "acme", StoreID: "1", SpaceID: "s", ContentID: "big", RunID: "kill"}.Task(),
		func(s faultproxy.Stats) int64 { return s.BytesDown }, func() bool {
			rows, _, err = blog.Results(ctx, bitlog.Filter{RunID: "kill"})
			return err == nil && len(rows) > 0
		})
	resent("check down", down-killSize)
	if len(rows) != 1 || rows[0].Result != bitlog.ResultSuccess || rows[0].ContentChecksum != info.Checksum {
		t.Errorf("bit log after the check: %+v", rows)
	}

	// The checkpoints go when a transfer completes; allow the second
	// workman's last requests to land.
	if !testbin.Poll(30*time.Second, 200*time.Millisecond, func() bool {
		out, err := direct.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(state)})
		return err == nil && len(out.Contents) == 0
	}) {
		t.Error("a checkpoint is left in the state bucket")
	}
}
