package transfer

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/millfleet/mill/internal/testkit/faultproxy"
	"github.com/millfleet/mill/internal/testkit/memstat"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/auditlog/memauditlog"
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

const acct = "acme"

func envInt(b *testing.B, name string, def int64) int64 {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			b.Fatalf("%s=%q: want a positive number", name, v)
		}
		return n
	}
	return def
}

type policies struct{ pol *policy.Policy }

func (p policies) Accounts(context.Context) ([]string, error) { return []string{acct}, nil }
func (p policies) Policy(context.Context, string) (*policy.Policy, error) {
	return p.pol, nil
}

type opener map[string]storage.Provider

func (o opener) Open(_ context.Context, _, storeID string) (storage.Provider, error) {
	if p, ok := o[storeID]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("unknown store %s", storeID)
}

// phase times one operation and takes the process's peak RSS during it.
type phase struct {
	secs    float64
	peakMiB float64
}

// measure runs fn as one phase (memstat.ResetPeak first: the peak is this
// phase's own).
func measure(b *testing.B, what string, fn func() error) phase {
	b.Helper()
	memstat.ResetPeak()
	t0 := time.Now()
	if err := fn(); err != nil {
		b.Fatalf("%s: %v", what, err)
	}
	p := phase{secs: time.Since(t0).Seconds(), peakMiB: memstat.PeakRSSMiB()}
	b.Logf("%s: %.1f s, peak RSS %.1f MiB", what, p.secs, p.peakMiB)
	return p
}

// BenchmarkShapedTransfers copies and checks one MILL_BENCH_SHAPED_BYTES
// object (default 256 MiB: at the shaped rates every transfer of it takes
// 10 to 60 s, and ten of them run; the ratios and the peak memory, bounded
// by the buffers, are those of 1 GiB) through a proxy capping each connection at
// MILL_BENCH_SHAPE_RATE bytes/s each way (default 4 MiB/s: the four
// streams of a copy then move 34 MB/s through the emulator, a third of
// what it serves here unshaped; at 16 MiB/s the emulator, not the
// shaping, set the pace) with MILL_BENCH_SHAPE_LATENCY_MS per request
// (default 20), in front of the S3 at MILL_BENCH_S3_ENDPOINT (default
// AWS_ENDPOINT_URL), and reports each transfer's throughput against the
// aggregate limit of its streams: a bit check reads every byte once, so
// its limit is streams × rate; a streamed copy moves every byte twice
// (down, then up, on the same buffers), so its limit is streams × rate / 2.
// In the same run, through the same proxy: minimal SDK loops with the same
// streams, parts and memory — ranged GETs discarding the bytes (the read
// a bit check does) and a copy (ranged GET into a buffer, UploadPart from
// it) — which show what this proxy and emulator deliver at best; and rclone (Debian's, if installed) copying
// the same object between the same buckets through the same proxy
// (server-side copy disabled), and downloading it for its MD5 (rclone
// md5sum --download, a bit check's work). The emulator must serve a ranged
// GET in time proportional to the range: moto reads the whole object for
// each one (about 0.5 s per GET of a 1 GiB object here, one at a time),
// which caps every parallel read below the shaping, Mill's and the SDK's
// alike; LocalStack's S3 serves a 16 MiB range of it in 25 ms
// (scripts/bench.sh points this benchmark at LocalStack when it answers).
// Mill with one stream runs on an eighth of
// the object (same rate, less waiting). The peak RSS of Mill's copy and
// check must stay under storage.MemoryBound of the default Transfer and
// 100 MiB.
func BenchmarkShapedTransfers(b *testing.B) {
	cfg := testenv.AWS(b)
	size := envInt(b, "MILL_BENCH_SHAPED_BYTES", 256<<20)
	rate := envInt(b, "MILL_BENCH_SHAPE_RATE", 4<<20)
	latency := time.Duration(envInt(b, "MILL_BENCH_SHAPE_LATENCY_MS", 20)) * time.Millisecond
	t := storage.Transfer{}.WithDefaults()
	ctx := context.Background()
	endpoint := testenv.BenchS3Endpoint(b)
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		b.Skipf("no emulator endpoint to put the proxy in front of (%q)", endpoint)
	}
	b.Logf("S3 endpoint behind the proxy: %s", endpoint)
	proxy, err := faultproxy.New(u.Host)
	if err != nil {
		b.Fatal(err)
	}
	defer proxy.Close()
	direct := cfg.S3(func(o *s3.Options) { o.UsePathStyle = true; o.BaseEndpoint = aws.String(endpoint) })
	shaped := cfg.S3(func(o *s3.Options) { o.UsePathStyle = true; o.BaseEndpoint = aws.String(proxy.URL()) })
	prefix := testenv.Prefix(b)
	srcBucket, dstBucket := prefix+"src", prefix+"dst"
	for _, bk := range []string{srcBucket, dstBucket} {
		if _, err := direct.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bk)}); err != nil {
			b.Fatal(err)
		}
		testenv.CleanupBucket(b, direct, bk)
	}
	store := func(c *s3.Client, bucket, prefix string) *s3store.Store {
		s, err := s3store.New(c, s3store.Config{Bucket: bucket, Prefix: prefix})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	const space, id, small = "bench", "big.bin", "eighth.bin"
	src, dst := store(shaped, srcBucket, ""), store(shaped, dstBucket, "")
	for _, s := range []storage.Provider{store(direct, srcBucket, ""), store(direct, dstBucket, "")} {
		if err := s.CreateSpace(ctx, space); err != nil {
			b.Fatal(err)
		}
	}
	// Fixtures, unshaped.
	fix := store(direct, srcBucket, "")
	info, err := fix.Put(ctx, space, id, testenv.Pattern(88172645463325252, size), storage.PutOptions{Size: size})
	if err != nil {
		b.Fatal(err)
	}
	qinfo, err := fix.Put(ctx, space, small, testenv.Pattern(7, size/8), storage.PutOptions{Size: size / 8})
	if err != nil {
		b.Fatal(err)
	}
	proxy.SetShape(faultproxy.Shape{Rate: rate, Latency: latency})

	pol, err := policy.Parse("acme-duplication-policy.json", []byte(`{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`))
	if err != nil {
		b.Fatal(err)
	}
	newDup := func(tr storage.Transfer) *dup.Processor {
		p, err := dup.New(dup.Config{
			Opener:   opener{"1": src, "2": dst},
			Audit:    func(p storage.Provider, _, _, _ string) (storage.Provider, error) { return p, nil },
			Live:     dup.LiveCheckerFunc(func(context.Context, string, string, string, string) (bool, error) { return false, nil }),
			Policies: policies{pol}, DisableServerSideCopy: true, Transfer: tr, Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	copyWith := func(p *dup.Processor, item string) func() error {
		return func() error {
			a, err := p.Process(ctx, task.Dup{Account: acct, StoreID: "1", DestStoreID: "2", SpaceID: space, ContentID: item})
			if err == nil && a != dup.CopyContent {
				err = fmt.Errorf("action %s, want a copy", a)
			}
			return err
		}
	}
	reg := &stores.Registry{Accounts: []stores.Account{{ID: acct, Status: stores.StatusActive,
		Stores: []stores.Store{{ID: "1", Primary: true, Kind: storage.KindS3, Bucket: srcBucket}}}}}
	bitOpener := stores.NewOpener(reg, stores.OpenerConfig{AWS: cfg.AWS, S3: func(context.Context, *s3.Client, stores.Store) (storage.Provider, error) { return src, nil }})
	index, alog := memcontentindex.New(), memauditlog.New()
	for _, in := range []*storage.Info{info, qinfo} {
		sz := in.Size
		item := contentindex.Item{Account: acct, StoreID: "1", SpaceID: space, ContentID: in.ContentID}
		if _, err := index.Upsert(ctx, contentindex.Entry{Item: item, Checksum: in.Checksum, Size: &sz, Modified: time.Now()}); err != nil {
			b.Fatal(err)
		}
		if _, err := alog.Put(ctx, auditlog.Entry{Account: acct, StoreID: "1", SpaceID: space, ContentID: in.ContentID,
			Action: task.ActionAddContent, Time: time.Now(), Checksum: in.Checksum, Size: &sz}); err != nil {
			b.Fatal(err)
		}
	}
	blog := membitlog.New(nil)
	newBit := func(tr storage.Transfer) *bit.Processor {
		p, err := bit.New(bit.Config{Stores: bitOpener, Index: index, AuditLog: alog, BitLog: blog,
			AuditQueue: memqueue.New("audit", memqueue.Config{}), BitErrorQueue: memqueue.New("bit-error", memqueue.Config{}),
			ReadSettings: bit.ReadSettings{Transfer: tr}, Common: bit.Common{Logger: slog.New(slog.DiscardHandler)}})
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	check := func(p *bit.Processor, item string) func() error {
		return func() error {
			return p.Handle(ctx, task.Bit{Account: acct, StoreID: "1", SpaceID: space, ContentID: item, RunID: "bench"}.Task())
		}
	}

	b.ResetTimer()
	var copyP, copy1, checkP, check1, putP, getP, sdkGet, sdkCp, rcl, rclSum phase
	haveRclone := false
	for range b.N {
		srcKey := space + "/" + id
		sdkGet = measure(b, "sdk ranged GETs", func() error { return rangedGets(ctx, shaped, srcBucket, srcKey, size, t) })
		sdkCp = measure(b, "sdk copy", func() error {
			return sdkCopy(ctx, shaped, srcBucket, srcKey, dstBucket, "sdk/"+id, size, t)
		})
		copyP = measure(b, "mill copy", copyWith(newDup(t), id))
		copy1 = measure(b, "mill copy, 1 stream (eighth size)", copyWith(newDup(storage.Transfer{Streams: 1}), small))
		checkP = measure(b, "mill bit check", check(newBit(t), id))
		check1 = measure(b, "mill bit check, 1 stream (eighth size)", check(newBit(storage.Transfer{Streams: 1}), small))
		putP = measure(b, "mill put", func() error {
			_, err := dst.Put(ctx, space, "put.bin", testenv.Pattern(88172645463325252, size), storage.PutOptions{Size: size, Checksum: info.Checksum})
			return err
		})
		getP = measure(b, "mill get + MD5", func() error {
			rc, gi, err := storage.Open(ctx, dst, space, "put.bin", t)
			if err != nil {
				return err
			}
			defer rc.Close()
			sums := storage.NewSums()
			if _, err := storage.ReadAll(ctx, rc, gi.Size, t, sums); err != nil {
				return err
			}
			if sums.MD5() != info.Checksum {
				return fmt.Errorf("read back MD5 %s, want %s", sums.MD5(), info.Checksum)
			}
			return nil
		})
		if bin, err := exec.LookPath("rclone"); err == nil {
			haveRclone = true
			rcl = measure(b, "rclone copy", func() error {
				return rclone(ctx, bin, proxy.URL(), "copyto", "mill:"+srcBucket+"/"+space+"/"+id, "mill:"+dstBucket+"/rclone/"+id,
					"--disable", "copy", "--s3-chunk-size", "16M", "--s3-upload-concurrency", "4", "--transfers", "1")
			})
			rclSum = measure(b, "rclone md5sum --download", func() error {
				return rclone(ctx, bin, proxy.URL(), "md5sum", "--download", "mill:"+srcBucket+"/"+space+"/"+id)
			})
		} else {
			b.Log("rclone not installed: no rclone figures (apt-get install rclone)")
		}
	}
	b.StopTimer()
	rows, _, err := blog.Results(ctx, bitlog.Filter{RunID: "bench"})
	if err != nil || len(rows) != 2 {
		b.Fatalf("bit log: %d rows, %v", len(rows), err)
	}
	for _, r := range rows {
		if r.Result != bitlog.ResultSuccess {
			b.Fatalf("bit check of %s: %s", r.ContentID, r.Result)
		}
	}
	for _, item := range []*storage.Info{info, qinfo} {
		if got, err := dst.Head(ctx, space, item.ContentID); err != nil || got.Checksum != item.Checksum {
			b.Fatalf("copied %s: %+v %v", item.ContentID, got, err)
		}
	}
	mb := func(n int64, p phase) float64 { return float64(n) / 1e6 / p.secs }
	streams, rmb := float64(t.Streams), float64(rate)/1e6
	b.ReportMetric(mb(size, copyP), "copy-MB/s")
	b.ReportMetric(streams*rmb/2, "copy-limit-MB/s")
	b.ReportMetric(mb(size, copyP)/(streams*rmb/2), "copy/limit")
	b.ReportMetric(mb(size/8, copy1), "copy-1stream-MB/s")
	b.ReportMetric(mb(size, checkP), "check-MB/s")
	b.ReportMetric(streams*rmb, "check-limit-MB/s")
	b.ReportMetric(mb(size, checkP)/(streams*rmb), "check/limit")
	b.ReportMetric(mb(size/8, check1), "check-1stream-MB/s")
	b.ReportMetric(mb(size, sdkCp), "sdk-copy-MB/s")
	b.ReportMetric(mb(size, copyP)/mb(size, sdkCp), "copy/sdk-copy")
	b.ReportMetric(mb(size, sdkGet), "sdk-get-MB/s")
	b.ReportMetric(mb(size, checkP)/mb(size, sdkGet), "check/sdk-get")
	b.ReportMetric(mb(size, putP), "put-MB/s")
	b.ReportMetric(mb(size, getP), "get-MB/s")
	if haveRclone {
		b.ReportMetric(mb(size, rcl), "rclone-MB/s")
		b.ReportMetric(mb(size, copyP)/mb(size, rcl), "copy/rclone")
		b.ReportMetric(mb(size, rclSum), "rclone-md5sum-MB/s")
		b.ReportMetric(mb(size, checkP)/mb(size, rclSum), "check/rclone-md5sum")
	}
	b.ReportMetric(copyP.peakMiB, "copy-peak-rss-MiB")
	b.ReportMetric(checkP.peakMiB, "check-peak-rss-MiB")
	// Mill's copy and check at the default Transfer stay within the bound
	// the storage package states, and under 100 MiB.
	bound := storage.MemoryBound(t)
	b.ReportMetric(bound, "bound-MiB")
	memstat.CheckBound(b, "shaped copy", copyP.peakMiB, bound)
	memstat.CheckBound(b, "shaped bit check", checkP.peakMiB, bound)
	st := proxy.Stats()
	b.Logf("proxy: %d requests, %d MB up, %d MB down; rate %d B/s per connection each way, latency %v", st.Requests, st.BytesUp/1e6, st.BytesDown/1e6, rate, latency)
}

// inParts runs part(off, n, buf) for every part of t.PartSize of size
// bytes on t.Streams workers, each with its own buffer of t.PartSize (the
// memory of Mill's transfers); the first error stops it.
func inParts(size int64, t storage.Transfer, part func(off, n int64, buf []byte) error) error {
	offs := make(chan int64)
	go func() {
		defer close(offs)
		for off := int64(0); off < size; off += t.PartSize {
			offs <- off
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, t.Streams)
	for range t.Streams {
		wg.Go(func() {
			buf := make([]byte, t.PartSize)
			for off := range offs {
				if err := part(off, min(t.PartSize, size-off), buf); err != nil {
					errs <- err
					for range offs {
					}
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// getRange reads n bytes of the object from off into buf.
func getRange(ctx context.Context, c *s3.Client, bucket, key string, off, n int64, buf []byte) error {
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1))})
	if err != nil {
		return err
	}
	defer out.Body.Close()
	_, err = io.ReadFull(out.Body, buf[:n])
	return err
}

// rangedGets reads the object by t.Streams ranged GETs of t.PartSize in
// flight, discarding the bytes: the SDK's best read through the proxy.
func rangedGets(ctx context.Context, c *s3.Client, bucket, key string, size int64, t storage.Transfer) error {
	return inParts(size, t, func(off, n int64, buf []byte) error { return getRange(ctx, c, bucket, key, off, n, buf) })
}

// sdkCopy copies the object to dstBucket/dstKey with no more than the SDK:
// a multipart upload whose parts t.Streams workers fetch by ranged GETs
// into their buffer and upload from it (no MD5, no CRC of Mill's) — the
// same protocol work and memory as Mill's streamed copy.
func sdkCopy(ctx context.Context, c *s3.Client, bucket, key, dstBucket, dstKey string, size int64, t storage.Transfer) error {
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(dstBucket), Key: aws.String(dstKey)})
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var parts []types.CompletedPart
	err = inParts(size, t, func(off, n int64, buf []byte) error {
		if err := getRange(ctx, c, bucket, key, off, n, buf); err != nil {
			return err
		}
		num := aws.Int32(int32(off/t.PartSize) + 1)
		out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(dstBucket), Key: aws.String(dstKey), UploadId: up.UploadId,
			PartNumber: num, Body: bytes.NewReader(buf[:n]), ContentLength: aws.Int64(n)})
		if err != nil {
			return err
		}
		mu.Lock()
		parts = append(parts, types.CompletedPart{PartNumber: num, ETag: out.ETag})
		mu.Unlock()
		return nil
	})
	if err == nil {
		slices.SortFunc(parts, func(a, b types.CompletedPart) int { return int(*a.PartNumber - *b.PartNumber) })
		_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(dstBucket), Key: aws.String(dstKey),
			UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	}
	if err != nil {
		_, _ = c.AbortMultipartUpload(context.WithoutCancel(ctx), &s3.AbortMultipartUploadInput{Bucket: aws.String(dstBucket), Key: aws.String(dstKey), UploadId: up.UploadId})
	}
	return err
}

// rclone runs an rclone command on the remote "mill:" (S3 through the
// proxy at endpoint) with its defaults but args: a copy with Mill's part
// size and streams, server-side copy disabled so the bytes pass through
// it, or a download and MD5 of an object (what a bit check does).
func rclone(ctx context.Context, bin, endpoint string, args ...string) error {
	cmd := exec.CommandContext(ctx, bin, append(args, "--retries", "3", "--config", os.DevNull)...)
	// The endpoint is plain HTTP on loopback: no CA bundle (rclone's SDK
	// fails on one it cannot load into its transport).
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_CA_BUNDLE=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env,
		"RCLONE_CONFIG_MILL_TYPE=s3", "RCLONE_CONFIG_MILL_PROVIDER=Other", "RCLONE_CONFIG_MILL_ENDPOINT="+endpoint,
		"RCLONE_CONFIG_MILL_ACCESS_KEY_ID="+os.Getenv("AWS_ACCESS_KEY_ID"), "RCLONE_CONFIG_MILL_SECRET_ACCESS_KEY="+os.Getenv("AWS_SECRET_ACCESS_KEY"),
		"RCLONE_CONFIG_MILL_REGION=us-east-1", "RCLONE_CONFIG_MILL_FORCE_PATH_STYLE=true")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}
