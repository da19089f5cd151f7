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

	"github.com/millfleet/mill/internal/faultproxy"
	"github.com/millfleet/mill/internal/testenv"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/task"
)

// TestKillWorkmanTransfer is TestKillTransfer's copy with Workman itself:
// the workman binary receives a DUP task of the big item from SQS, all its
// AWS traffic through the S3-shaped proxy, checkpoints in the state bucket
// (--checkpoint-bucket); it is killed with SIGKILL at about 60 % of the
// upload, and a second workman receives the same message when its
// visibility timeout runs out. The copy must complete equal to the source,
// having sent again at most two parts' worth of bytes up (counted at the
// proxy), leaving no checkpoint and no incomplete upload.
func TestKillWorkmanTransfer(t *testing.T) {
	cfg := testenv.AWS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin := binary(t, "workman")
	const vt = 8 * time.Second // the killed task's message comes back soon
	prefix, work, dead := noopQueues(t, ctx, cfg, vt)
	f := newKillFixture(t, ctx, cfg, prefix, "mill/")
	proxy, direct, dstStore, info := f.proxy, f.direct, f.dst, f.info
	src, dst, state := prefix+"src", prefix+"dst", prefix+"state"
	dbURL := testenv.Schema(t)
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = milldb.Up(ctx, pool)
	pool.Close()
	if err != nil {
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
	body, err := task.Encode(task.Dup{Account: "acme", StoreID: "1", DestStoreID: "2", SpaceID: "s", ContentID: "big"}.Task(), task.FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	if err := work.Send(ctx, queue.SendEntry{Body: body}); err != nil {
		t.Fatal(err)
	}
	proxy.SetShape(faultproxy.Shape{Rate: killRate, Latency: 20 * time.Millisecond})
	env := []string{"AWS_ENDPOINT_URL=" + proxy.URL()}
	args := workmanArgs(prefix, work.Name(), dead.Name(), filepath.Join(dir, "record"), 1,
		"--task-types", "DUP", "--config-dir", conf, "--database-url", dbURL,
		"--checkpoint-bucket", state, "--transfer-streams", fmt.Sprint(killStreams), "--transfer-part-size", fmt.Sprint(killPartSize),
		"--resume-min-size", "1", "--receive-wait", "1s")
	logPath := filepath.Join(dir, "workman.log")

	before := proxy.Stats()
	p := start(t, bin, logPath, env, args...)
	at := before
	if !waitFor(3*time.Minute, 20*time.Millisecond, func() bool {
		at = proxy.Stats()
		return at.BytesUp-before.BytesUp >= killSize*6/10 || p.exited()
	}) || p.exited() {
		t.Fatalf("the first workman did not reach 60 %% of the upload (exited %v); log:\n%s", p.exited(), tail(logPath, 4000))
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
	killed := proxy.Stats()
	p = start(t, bin, logPath, env, args...)
	var got *storage.Info
	if !waitFor(4*time.Minute, 200*time.Millisecond, func() bool {
		got, err = dstStore.Head(ctx, "s", "big")
		return err == nil || p.exited()
	}) || err != nil {
		t.Fatalf("the second workman did not copy the item (exited %v): %v; log:\n%s", p.exited(), err, tail(logPath, 4000))
	}
	after := proxy.Stats()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.wait(t, time.Minute); err != nil {
		t.Errorf("the second workman: %v; log:\n%s", err, tail(logPath, 4000))
	}
	up, down := after.BytesUp-before.BytesUp, after.BytesDown-before.BytesDown
	t.Logf("RESULT kill-workman-copy: killed at %.0f %% (%d MB up, %d MB down); whole run %d MB up, %d MB down for a %d MB object: re-sent %.2f parts up, %.2f parts down (part %d MiB, %d streams; SQS, checkpoints and listings included)",
		100*float64(at.BytesUp-before.BytesUp)/killSize, (killed.BytesUp-before.BytesUp)/1e6, (killed.BytesDown-before.BytesDown)/1e6,
		up/1e6, down/1e6, int64(killSize)/1e6, float64(up-killSize)/killPartSize, float64(down-killSize)/killPartSize, killPartSize>>20, killStreams)
	const slack = 1 << 20
	if up-killSize > 2*killPartSize+slack {
		t.Errorf("re-sent %d bytes up, more than two parts (%d)", up-killSize, 2*killPartSize)
	}
	rc, _, err := dstStore.Get(ctx, "s", "big")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if n, diff := firstDiff(rc, content()); n != killSize || diff >= 0 || got.Checksum != info.Checksum {
		t.Errorf("destination: %d bytes, first difference at %d, MD5 %s (source %s)", n, diff, got.Checksum, info.Checksum)
	}
	// The checkpoint goes when the copy completes; allow the second
	// workman's last requests to land.
	if !waitFor(30*time.Second, 200*time.Millisecond, func() bool {
		out, err := direct.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(state)})
		return err == nil && len(out.Contents) == 0
	}) {
		t.Error("a checkpoint is left in the state bucket")
	}
	if out, err := direct.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(dst)}); err != nil || len(out.Uploads) != 0 {
		t.Errorf("incomplete uploads left: %v %v", out, err)
	}
}
