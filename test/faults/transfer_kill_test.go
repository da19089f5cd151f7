//go:build faults

package faults

import (
	"context"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/faultproxy"
	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/auditlog/memauditlog"
	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/bitlog/membitlog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/memcontentindex"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/s3store"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors/bit"
	"github.com/millfleet/mill/processors/dup"
)

// The kill test's transfer: 20 parts of 8 MiB, two in flight, through a
// proxy capping each connection at 8 MiB/s each way with 20 ms per
// request, so a copy takes about 20 s and a check about 10 s.
const (
	killParts    = 20
	killPartSize = 8 << 20
	killStreams  = 2
	killRate     = 8 << 20
	killSize     = killParts * killPartSize
	// killAt is where the first process is killed: at about 60 %, half a
	// part past 12 parts, so that parts are in flight (60 % itself is
	// where the sixth pair of parts ends and a checkpoint is written).
	killAt   = killSize*6/10 + killPartSize/2
	childEnv = "MILL_TRANSFER_CHILD"
)

func content() io.Reader { return testenv.Pattern(0x9e3779b97f4a7c15, killSize) }

// TestKillTransfer kills a worker process with SIGKILL at about 60 % of a
// streamed multipart copy (the dup processor) and then of a bit check
// (the bit processor), both through the S3-shaped proxy with their
// checkpoints in a state bucket, and starts a new process on the same
// task: it must finish, having sent again at most two parts' worth of
// bytes each way (counted at the proxy; one part per stream in flight is
// the bound), and the copy must equal the source byte for byte.
func TestKillTransfer(t *testing.T) {
	cfg := testenv.AWS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	prefix := testenv.Prefix(t)
	f := newKillFixture(t, ctx, cfg, prefix, "")
	proxy, direct, info := f.proxy, f.direct, f.info
	proxy.SetShape(faultproxy.Shape{Rate: killRate, Latency: 20 * time.Millisecond})
	env := []string{"MILL_KILL_ENDPOINT=" + proxy.URL(), "MILL_KILL_PREFIX=" + prefix, "MILL_KILL_MD5=" + info.Checksum}
	dir := t.TempDir()

	for _, job := range []struct {
		name string
		// moved is the bytes of the object moved so far in the
		// direction that shows progress.
		moved func(faultproxy.Stats) int64
	}{
		{"copy", func(s faultproxy.Stats) int64 { return s.BytesUp }},
		{"check", func(s faultproxy.Stats) int64 { return s.BytesDown }},
	} {
		before := proxy.Stats()
		logPath := filepath.Join(dir, job.name+".log")
		args := []string{"-test.run=^TestTransferChild$", "-test.v", "-test.timeout=5m"}
		p := start(t, os.Args[0], logPath, append(env, childEnv+"="+job.name), args...)
		at := before
		if !testbin.Poll(3*time.Minute, 20*time.Millisecond, func() bool {
			at = proxy.Stats()
			return job.moved(at)-job.moved(before) >= killAt || p.Exited()
		}) || p.Exited() {
			t.Fatalf("%s: the first process did not reach 60 %% (exited %v); log:\n%s", job.name, p.Exited(), tail(logPath, 4000))
		}
		if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.Done()
		killed := proxy.Stats()
		p = start(t, os.Args[0], logPath, append(env, childEnv+"="+job.name), args...)
		if err := p.Wait(t, 4*time.Minute); err != nil {
			t.Fatalf("%s: the second process: %v; log:\n%s%s", job.name, err, tail(logPath, 4000), tail(logPath+".out", 4000))
		}
		after := proxy.Stats()
		up, down := after.BytesUp-before.BytesUp, after.BytesDown-before.BytesDown
		// Each way, what crossed beyond the object once (requests,
		// checkpoints and listings are a few hundred KB at most).
		wantUp, wantDown := int64(killSize), int64(killSize)
		if job.name == "check" {
			wantUp = 0
		}
		// The slack is the requests' own bytes counted at the proxy (headers,
		// checkpoints, listings; about 0.01 part measured: 2.01 parts down for
		// the copy). A part is fetched again whole however late the kill is
		// noticed, and the slack is small enough that a stray ranged GET (the
		// resume's first-part read, 0.11 part, once) fails the test.
		const slack = 512 << 10
		t.Logf("RESULT kill-%s: killed at %.0f %% (%d MB up, %d MB down); whole run %d MB up, %d MB down for a %d MB object: re-sent %.2f parts up, %.2f parts down (part %d MiB, %d streams)",
			job.name, 100*float64(job.moved(at)-job.moved(before))/killSize, (killed.BytesUp-before.BytesUp)/1e6, (killed.BytesDown-before.BytesDown)/1e6,
			up/1e6, down/1e6, int64(killSize)/1e6, float64(up-wantUp)/killPartSize, float64(down-wantDown)/killPartSize, killPartSize>>20, killStreams)
		if up-wantUp > 2*killPartSize+slack || down-wantDown > 2*killPartSize+slack {
			t.Errorf("%s: re-sent %d bytes up and %d down, more than two parts (%d) each way", job.name, up-wantUp, down-wantDown, 2*killPartSize)
		}
	}
	f.verifyCopy(t, ctx, prefix+"dst")
	// No checkpoint left behind.
	if out, err := direct.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(prefix + "state")}); err != nil || len(out.Contents) != 0 {
		t.Errorf("state bucket after the transfers: %v %v", out, err)
	}
}

// verifyCopy checks the copy of the big item byte for byte against the
// source, and that no incomplete upload is left in its bucket.
func (f *killFixture) verifyCopy(t *testing.T, ctx context.Context, bucket string) {
	t.Helper()
	rc, got, err := f.dst.Get(ctx, "s", "big")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if n, diff := firstDiff(rc, content()); n != killSize || diff >= 0 || got.Checksum != f.info.Checksum {
		t.Errorf("destination: %d bytes, first difference at %d, MD5 %s (source %s)", n, diff, got.Checksum, f.info.Checksum)
	}
	if out, err := f.direct.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)}); err != nil || len(out.Uploads) != 0 {
		t.Errorf("incomplete uploads left: %v %v", out, err)
	}
}

// killFixture is the kill tests' setup: a proxy in front of the emulator
// (not shaped yet), buckets <prefix>src, dst and state, stores on src and
// dst (under storePrefix) with space "s", and the big item in src.
type killFixture struct {
	proxy    *faultproxy.Proxy
	direct   *s3.Client
	src, dst *s3store.Store
	info     *storage.Info
}

func newKillFixture(t *testing.T, ctx context.Context, cfg *awsconfig.Config, prefix, storePrefix string) *killFixture {
	t.Helper()
	u, err := url.Parse(testenv.Endpoint())
	if err != nil || u.Host == "" {
		t.Fatalf("the kill tests run on the emulator: AWS_ENDPOINT_URL %q is not a URL", testenv.Endpoint())
	}
	f := &killFixture{direct: cfg.S3(func(o *s3.Options) { o.UsePathStyle = true })}
	if f.proxy, err = faultproxy.New(u.Host); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.proxy.Close() })
	for _, b := range []string{prefix + "src", prefix + "dst", prefix + "state"} {
		if _, err := f.direct.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
		testenv.CleanupBucket(t, f.direct, b)
	}
	f.src, _ = s3store.New(f.direct, s3store.Config{Bucket: prefix + "src", Prefix: storePrefix})
	f.dst, _ = s3store.New(f.direct, s3store.Config{Bucket: prefix + "dst", Prefix: storePrefix})
	for _, s := range []*s3store.Store{f.src, f.dst} {
		if err := s.CreateSpace(ctx, "s"); err != nil {
			t.Fatal(err)
		}
	}
	if f.info, err = f.src.Put(ctx, "s", "big", content(), storage.PutOptions{Size: killSize}); err != nil {
		t.Fatal(err)
	}
	return f
}

// firstDiff reads a and b to their ends and returns how many bytes a had
// and the offset of the first difference (-1: none).
func firstDiff(a, b io.Reader) (int64, int64) {
	ba, bb := make([]byte, 1<<20), make([]byte, 1<<20)
	var n int64
	for {
		na, ea := io.ReadFull(a, ba)
		nb, _ := io.ReadFull(b, bb)
		for i := 0; i < na; i++ {
			if i >= nb || ba[i] != bb[i] {
				return n + int64(i), n + int64(i)
			}
		}
		n += int64(na)
		if ea != nil {
			if nb > na {
				return n, n
			}
			return n, -1
		}
	}
}

type onePolicy struct{ pol *policy.Policy }

func (p onePolicy) Accounts(context.Context) ([]string, error)             { return []string{"acme"}, nil }
func (p onePolicy) Policy(context.Context, string) (*policy.Policy, error) { return p.pol, nil }

type storeMap map[string]storage.Provider

func (m storeMap) Open(_ context.Context, _, id string) (storage.Provider, error) { return m[id], nil }

// TestTransferChild is the worker process of TestKillTransfer (it runs
// only when the parent sets MILL_TRANSFER_CHILD): one DUP or BIT task of
// the big item, through the proxy, with checkpoints in the state bucket.
func TestTransferChild(t *testing.T) {
	which := os.Getenv(childEnv)
	if which == "" {
		t.Skip("the kill test's worker process")
	}
	cfg := testenv.AWS(t)
	ctx := context.Background()
	prefix, sum := os.Getenv("MILL_KILL_PREFIX"), os.Getenv("MILL_KILL_MD5")
	client := cfg.S3(func(o *s3.Options) {
		o.UsePathStyle = true
		o.BaseEndpoint = aws.String(os.Getenv("MILL_KILL_ENDPOINT"))
	})
	src, _ := s3store.New(client, s3store.Config{Bucket: prefix + "src"})
	dst, _ := s3store.New(client, s3store.Config{Bucket: prefix + "dst"})
	cps := s3store.NewCheckpoints(client, prefix+"state", "transfers/")
	tr := storage.Transfer{Streams: killStreams, PartSize: killPartSize}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	switch which {
	case "copy":
		pol, err := policy.Parse("acme-duplication-policy.json", []byte(`{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		p, err := dup.New(dup.Config{
			Opener: storeMap{"1": src, "2": dst}, Policies: onePolicy{pol},
			Audit:                 func(p storage.Provider, _, _, _ string) (storage.Provider, error) { return p, nil },
			Live:                  dup.LiveCheckerFunc(func(context.Context, string, string, string, string) (bool, error) { return false, nil }),
			DisableServerSideCopy: true, Transfer: tr, Checkpoints: cps, ResumeMinSize: 1, Logger: log,
		})
		if err != nil {
			t.Fatal(err)
		}
		if a, err := p.Process(ctx, task.Dup{Account: "acme", StoreID: "1", DestStoreID: "2", SpaceID: "s", ContentID: "big"}); err != nil || a != dup.CopyContent {
			t.Fatalf("dup: %v %v", a, err)
		}
	case "check":
		reg := &stores.Registry{Accounts: []stores.Account{{ID: "acme", Status: stores.StatusActive,
			Stores: []stores.Store{{ID: "2", Primary: true, Kind: storage.KindS3, Bucket: prefix + "dst"}}}}}
		opener := stores.NewOpener(reg, stores.OpenerConfig{AWS: cfg.AWS, S3: func(context.Context, *s3.Client, stores.Store) (storage.Provider, error) { return dst, nil }})
		index, alog := memcontentindex.New(), memauditlog.New()
		size := int64(killSize)
		item := contentindex.Item{Account: "acme", StoreID: "2", SpaceID: "s", ContentID: "big"}
		if _, err := index.Upsert(ctx, contentindex.Entry{Item: item, Checksum: sum, Size: &size, Modified: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if _, err := alog.Put(ctx, auditlog.Entry{Account: "acme", StoreID: "2", SpaceID: "s", ContentID: "big",
			Action: task.ActionAddContent, Time: time.Now(), Checksum: sum, Size: &size}); err != nil {
			t.Fatal(err)
		}
		blog := membitlog.New(nil)
		p, err := bit.New(bit.Config{Stores: opener, Index: index, AuditLog: alog, BitLog: blog,
			AuditQueue: memqueue.New("audit", memqueue.Config{}), BitErrorQueue: memqueue.New("bit-error", memqueue.Config{}),
			ReadSettings: bit.ReadSettings{Transfer: tr, Checkpoints: cps, ResumeMinSize: 1, CheckpointEvery: killPartSize}, Common: bit.Common{Logger: log}})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Handle(ctx, task.Bit{Account: "acme", StoreID: "2", SpaceID: "s", ContentID: "big", RunID: "kill"}.Task()); err != nil {
			t.Fatal(err)
		}
		rows, _, err := blog.Results(ctx, bitlog.Filter{RunID: "kill"})
		if err != nil || len(rows) != 1 || rows[0].Result != bitlog.ResultSuccess || rows[0].ContentChecksum != sum {
			t.Fatalf("bit log: %+v %v", rows, err)
		}
	default:
		t.Fatalf("%s=%q", childEnv, which)
	}
}
