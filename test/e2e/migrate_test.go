package e2e

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/task"
)

// s3Tap is an HTTP proxy in front of the emulator for the stores of a
// test: it counts the object writes (PUT, including copies) to one bucket
// and serves one object's bytes with a byte flipped and without S3's
// checksum headers — bytes gone sour behind their ETag.
type s3Tap struct {
	writes        atomic.Int64
	writeBucket   string
	sourPath      string
	srv           *httptest.Server
	sourResponses atomic.Int64
}

func newS3Tap(t *testing.T, target, writeBucket, sourBucket, sourKey string) *s3Tap {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	tap := &s3Tap{writeBucket: writeBucket, sourPath: "/" + sourBucket + "/" + sourKey}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(r *http.Response) error {
		if r.Request.Method != http.MethodGet || r.Request.URL.Path != tap.sourPath || r.StatusCode/100 != 2 {
			return nil
		}
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return err
		}
		if len(b) > 0 {
			b[0] ^= 0x20
		}
		for k := range r.Header {
			if strings.HasPrefix(strings.ToLower(k), "x-amz-checksum") {
				r.Header.Del(k)
			}
		}
		tap.sourResponses.Add(1)
		r.Body = io.NopCloser(bytes.NewReader(b))
		return nil
	}
	tap.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/"+writeBucket+"/") && len(r.URL.Path) > len(writeBucket)+2 {
			tap.writes.Add(1)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(tap.srv.Close)
	return tap
}

// TestMigrateDuraCloud: a DuraCloud deployment of three spaces (buckets
// written with raw S3 calls as DuraCloud's S3StorageProvider writes them),
// one of whose items S3 serves with bytes that no longer match its ETag,
// migrated by the real millctl to a Mill store. The sour item is reported
// corrupt and written nowhere; every other item is at the destination
// with its bytes, MD5, mimetype and properties, each copy audited as a
// replication from the DuraCloud store; the report is in the reports
// store. A second run writes nothing (no PUT reaches the destination
// bucket, no AUDIT task is queued) and says every item was skipped.
func TestMigrateDuraCloud(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bins := testbin.Build(t, "millctl")
	cfg := testenv.AWS(t)
	c, sqsc := cfg.S3(), cfg.SQS()
	prefix := testenv.Prefix(t)
	accessKey := testenv.AccessKeyID()
	account := strings.ToLower(accessKey)

	books := testenv.Bucket(t, c, "books", false)
	millBucket := testenv.Bucket(t, c, "mill", false)
	for _, space := range []string{"photos", "docs", "archive-2020"} {
		b := account + "." + space
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatalf("create bucket %s: %v", b, err)
		}
		testenv.CleanupBucket(t, c, b)
	}
	type item struct{ mime, body string }
	items := map[string]item{
		"photos/2024/sunset.jpg": {"image/jpeg", "jpeg bytes"},
		"photos/2024/notes.txt":  {"text/plain", "notes"},
		"photos/cover.png":       {"image/png", strings.Repeat("png", 1000)},
		"docs/report.pdf":        {"application/pdf", "%PDF-1.7"},
		"docs/sour.txt":          {"text/plain", "bytes that went sour"},
		"archive-2020/README.md": {"text/markdown", "# archive"},
	}
	sums := map[string]string{}
	for k, it := range items {
		space, key, _ := strings.Cut(k, "/")
		sum := md5.Sum([]byte(it.body))
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(account + "." + space), Key: aws.String(key),
			Body: strings.NewReader(it.body), ContentType: aws.String(it.mime),
			ContentMD5: aws.String(base64.StdEncoding.EncodeToString(sum[:])), Metadata: map[string]string{"creator": "alice"}}); err != nil {
			t.Fatal(err)
		}
		sums[k] = hex.EncodeToString(sum[:])
	}
	tap := newS3Tap(t, testenv.Endpoint(), millBucket, account+".docs", "sour.txt")

	auditQ := prefix + "audit"
	testenv.CleanupQueues(t, sqsc, prefix)
	q, err := sqsc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(auditQ)})
	if err != nil {
		t.Fatal(err)
	}
	conf, reports := t.TempDir(), t.TempDir()
	reg := fmt.Sprintf(`{"accounts": [{"id": "acme", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "s3", "layout": "duracloud", "accountPrefix": %q, "bucket": %q, "region": "us-east-1", "endpoint": %q, "ambientCredentials": true},
  {"id": "2", "kind": "s3", "bucket": %q, "region": "us-east-1", "endpoint": %q, "ambientCredentials": true}]}]}`,
		accessKey, books, tap.srv.URL, millBucket, tap.srv.URL)
	if err := os.WriteFile(filepath.Join(conf, "accounts.json"), []byte(reg), 0o644); err != nil {
		t.Fatal(err)
	}
	env := testbin.Env("MILL_CONFIG_DIR="+conf, "MILL_QUEUE_PREFIX="+prefix)
	millctl := func(wantExit int, args ...string) string {
		t.Helper()
		p := testbin.Run(t, time.Minute, testbin.Spec{Path: bins["millctl"], Args: args, Env: env})
		if p.ExitCode() != wantExit {
			t.Fatalf("millctl %s: exit %d, want %d\n%s\n%s", strings.Join(args, " "), p.ExitCode(), wantExit, p.Stdout(), p.Stderr())
		}
		return p.Stdout()
	}
	migrate := []string{"migrate", "duracloud", "--reports-dir", reports, "--claims-bucket=", "--workers", "3", "acme", "1", "2"}

	out := millctl(1, migrate...)
	t.Logf("first run:\n%s", out)
	copied := len(items) - 1
	if !strings.Contains(out, fmt.Sprintf("copied   %6d items", copied)) || !strings.Contains(out, "corrupt       1 items") ||
		!strings.Contains(out, `corrupt docs/"sour.txt"`) {
		t.Errorf("first run's summary does not say %d copied and docs/sour.txt corrupt", copied)
	}
	if tap.sourResponses.Load() == 0 {
		t.Fatal("the sour item was never read")
	}
	firstWrites := tap.writes.Load()
	if firstWrites < int64(copied) {
		t.Errorf("%d writes to the destination bucket, want at least %d", firstWrites, copied)
	}
	// The destination, read directly (not through the tap).
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(millBucket), Key: aws.String("docs/sour.txt")}); err == nil {
		t.Error("the corrupt item was copied")
	}
	for k, it := range items {
		if k == "docs/sour.txt" {
			continue
		}
		space, id, _ := strings.Cut(k, "/")
		var got struct {
			Checksum, MimeType string
			Properties         map[string]string
		}
		if err := json.Unmarshal([]byte(millctl(0, "content", "props", "acme", "2", space, id)), &got); err != nil {
			t.Fatal(err)
		}
		if got.Checksum != sums[k] || got.MimeType != it.mime || got.Properties["creator"] != "alice" {
			t.Errorf("%s at the destination: %+v, want MD5 %s, %s, creator alice", k, got, sums[k], it.mime)
		}
		if b := millctl(0, "content", "get", "acme", "2", space, id); b != it.body {
			t.Errorf("%s at the destination: %q", k, b)
		}
	}
	adds := auditAdds(ctx, t, sqsc, aws.ToString(q.QueueUrl))
	if len(adds) != copied {
		t.Errorf("%d ADD_CONTENT audit tasks, want one per copy (%d): %v", len(adds), copied, adds)
	}
	for _, a := range adds {
		if a.Props[task.KeySourceStoreID] != "1" || a.Props[task.KeyUserID] != "mill-migrate" || a.Props[task.KeyStoreID] != "2" {
			t.Errorf("audit task %v: want store 2, source store 1, user mill-migrate", a.Props)
		}
	}
	checkMigrationReport(t, reports, copied)

	out = millctl(1, migrate...)
	t.Logf("second run:\n%s", out)
	if n := tap.writes.Load() - firstWrites; n != 0 {
		t.Errorf("second run: %d writes to the destination bucket, want none", n)
	}
	if !strings.Contains(out, fmt.Sprintf("skipped  %6d items", copied)) || !strings.Contains(out, "copied        0 items") {
		t.Errorf("second run's summary does not say %d skipped, 0 copied", copied)
	}
	if adds := auditAdds(ctx, t, sqsc, aws.ToString(q.QueueUrl)); len(adds) != 0 {
		t.Errorf("second run: %d ADD_CONTENT audit tasks, want none", len(adds))
	}
}

// auditAdds drains the audit queue and returns its ADD_CONTENT tasks.
func auditAdds(ctx context.Context, t *testing.T, c *sqs.Client, qURL string) []*task.Task {
	t.Helper()
	var adds []*task.Task
	for {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(qURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return adds
		}
		for _, m := range out.Messages {
			tk, err := task.Decode([]byte(aws.ToString(m.Body)))
			if err != nil {
				t.Fatalf("audit message %q: %v", aws.ToString(m.Body), err)
			}
			if tk.Props[task.KeyAction] == string(task.ActionAddContent) {
				adds = append(adds, tk)
			}
			if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(qURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// checkMigrationReport reads the one JSON report in the reports directory.
func checkMigrationReport(t *testing.T, dir string, copied int) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "migrations", "acme", "1-2", "*.json"))
	if err != nil || len(files) != 1 {
		t.Fatalf("JSON reports %v, %v; want one", files, err)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		CSV      string
		Items    map[string]int
		Problems []struct{ Space, ContentID, Outcome string }
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Items["copied"] != copied || rep.Items["corrupt"] != 1 || len(rep.Problems) != 1 || rep.Problems[0].ContentID != "sour.txt" {
		t.Errorf("JSON report: %s", b)
	}
	csv, err := os.ReadFile(rep.CSV)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(csv), "\n"); n != copied+2 {
		t.Errorf("CSV report has %d lines, want a header and %d items:\n%s", n, copied+1, csv)
	}
}
