package dup_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/memstat"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/crc64nvme"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/s3store"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors/dup"
)

// benchSize is the object size: 1 GiB, or MILL_BENCH_DUP_BYTES.
func benchSize(b *testing.B) int64 {
	if v := os.Getenv("MILL_BENCH_DUP_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			b.Fatalf("MILL_BENCH_DUP_BYTES=%q", v)
		}
		return n
	}
	return 1 << 30
}

// peak samples the Go heap (HeapInuse + StackInuse) while it runs.
type peak struct {
	max  atomic.Uint64
	stop chan struct{}
	wg   sync.WaitGroup
}

func startPeak() *peak {
	runtime.GC()
	p := &peak{stop: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		var ms runtime.MemStats
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			if v := ms.HeapInuse + ms.StackInuse; v > p.max.Load() {
				p.max.Store(v)
			}
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

func (p *peak) mib() float64 {
	close(p.stop)
	p.wg.Wait()
	return float64(p.max.Load()) / (1 << 20)
}

// BenchmarkStreamingCopy1GiB copies one 1 GiB object between two S3 stores
// (two buckets on one endpoint) through the dup processor with server-side
// copy disabled, so the bytes stream through this process, and compares it
// with a minimal SDK loop doing the same protocol work in the same run
// (GetObject streamed into a multipart upload of the same part size with
// per-part and full-object CRC64NVME, one request at a time). Metrics: MB/s of each, their ratio, and the
// peak Go heap of each (sampled), the process's VmHWM over the whole run,
// and the copy's own peak RSS (peak-rss-MiB, measured from a reset of the
// peak just before it), which must stay under storage.MemoryBound of the
// default Transfer (bound-MiB) and 100 MiB. The S3 is
// testenv.BenchS3Endpoint's: Mill reads by ranged GETs, which moto serves
// in time proportional to the whole object.
//
//	make bench, or: go test -run '^$' -bench StreamingCopy -benchtime 1x ./processors/dup
func BenchmarkStreamingCopy1GiB(b *testing.B) {
	cfg := testenv.AWS(b)
	ctx := context.Background()
	size := benchSize(b)
	endpoint := testenv.BenchS3Endpoint(b)
	client := cfg.S3(func(o *s3.Options) { o.UsePathStyle = true; o.BaseEndpoint = aws.String(endpoint) })
	prefix := testenv.Prefix(b)
	srcBucket, dstBucket := prefix+"src", prefix+"dst"
	for _, bk := range []string{srcBucket, dstBucket} {
		testenv.CleanupBucket(b, client, bk)
		if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bk)}); err != nil {
			b.Fatal(err)
		}
	}
	src, err := s3store.New(client, s3store.Config{Bucket: srcBucket})
	if err != nil {
		b.Fatal(err)
	}
	dst, err := s3store.New(client, s3store.Config{Bucket: dstBucket})
	if err != nil {
		b.Fatal(err)
	}
	const space, id = "bench", "big.bin"
	for _, s := range []storage.Provider{src, dst} {
		if err := s.CreateSpace(ctx, space); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	info, err := src.Put(ctx, space, id, testenv.Pattern(88172645463325252, size), storage.PutOptions{Size: size, MimeType: "application/octet-stream"})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("fixture: %d bytes uploaded in %v, MD5 %s", size, time.Since(start).Round(time.Millisecond), info.Checksum)

	proc, err := dup.New(dup.Config{
		Opener:                opener{"1": src, "2": dst},
		Audit:                 func(p storage.Provider, _, _, _ string) (storage.Provider, error) { return p, nil },
		Live:                  dup.LiveCheckerFunc(func(context.Context, string, string, string, string) (bool, error) { return false, nil }),
		Policies:              allow(b, oneToTwo),
		DisableServerSideCopy: true,
		Logger:                slog.New(slog.DiscardHandler),
	})
	if err != nil {
		b.Fatal(err)
	}
	d := task.Dup{Account: acct, StoreID: "1", DestStoreID: "2", SpaceID: space, ContentID: id}
	srcKey := space + "/" + id

	// The SDK baseline: the same protocol work as Mill's copy, minimally —
	// GetObject's body read one part at a time (Mill's part size) into a
	// multipart upload with a CRC64NVME per part and the full-object
	// CRC64NVME at completion, one request at a time.
	partSize := int64(storage.DefaultPartSize)
	raw := func() {
		out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(srcBucket), Key: aws.String(srcKey)}, func(o *s3.Options) {
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		})
		if err != nil {
			b.Fatal(err)
		}
		defer out.Body.Close()
		noSDKSums := s3.WithAPIOptions(v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
		whenRequired := func(o *s3.Options) { o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired }
		key := aws.String("sdk/" + id)
		up, err := client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(dstBucket), Key: key,
			ChecksumAlgorithm: types.ChecksumAlgorithmCrc64nvme, ChecksumType: types.ChecksumTypeFullObject})
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, partSize)
		var full uint64
		var parts []types.CompletedPart
		for num := int32(1); ; num++ {
			n, rerr := io.ReadFull(out.Body, buf)
			if n > 0 {
				full = crc64nvme.Update(full, buf[:n])
				crc := storage.CRC64NVMEBase64(crc64nvme.Checksum(buf[:n]))
				p, err := client.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(dstBucket), Key: key, UploadId: up.UploadId,
					PartNumber: aws.Int32(num), Body: bytes.NewReader(buf[:n]), ContentLength: aws.Int64(int64(n)), ChecksumCRC64NVME: aws.String(crc)},
					noSDKSums, whenRequired)
				if err != nil {
					b.Fatal(err)
				}
				parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(num), ETag: p.ETag, ChecksumCRC64NVME: aws.String(crc)})
			}
			if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
				break
			}
			if rerr != nil {
				b.Fatal(rerr)
			}
		}
		if _, err := client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(dstBucket), Key: key, UploadId: up.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}, ChecksumCRC64NVME: aws.String(storage.CRC64NVMEBase64(full)),
			ChecksumType: types.ChecksumTypeFullObject}); err != nil {
			b.Fatal(err)
		}
	}

	var millTime, rawTime time.Duration
	var millPeak, rawPeak, copyRSS float64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if err := dst.Delete(ctx, space, id); err != nil {
			b.Fatal(err)
		}
		memstat.ResetPeak() // the copy's own peak, not the fixture's
		b.StartTimer()
		p := startPeak()
		t0 := time.Now()
		a, err := proc.Process(ctx, d)
		millTime += time.Since(t0)
		millPeak = max(millPeak, p.mib())
		copyRSS = max(copyRSS, memstat.PeakRSSMiB())
		if err != nil || a != dup.CopyContent {
			b.Fatalf("Process = %v, %v", a, err)
		}
		b.Logf("dup processor: %d bytes streamed in %v, peak heap %.1f MiB", size, millTime.Round(time.Millisecond), millPeak)
		p = startPeak()
		t0 = time.Now()
		raw()
		rawTime += time.Since(t0)
		rawPeak = max(rawPeak, p.mib())
	}
	b.StopTimer()
	mb := float64(size) * float64(b.N) / 1e6
	millRate, rawRate := mb/millTime.Seconds(), mb/rawTime.Seconds()
	b.ReportMetric(millRate, "mill-MB/s")
	b.ReportMetric(rawRate, "sdk-MB/s")
	b.ReportMetric(millRate/rawRate, "mill/sdk")
	b.ReportMetric(millPeak, "mill-peak-heap-MiB")
	b.ReportMetric(rawPeak, "sdk-peak-heap-MiB")
	b.ReportMetric(memstat.PeakRSSMiB(), "VmHWM-MiB")
	// The copy with the processor's default Transfer must stay within the
	// bound the package doc states (storage.MemoryBound) and 100 MiB.
	bound := storage.MemoryBound(storage.Transfer{})
	b.ReportMetric(copyRSS, "peak-rss-MiB")
	b.ReportMetric(bound, "bound-MiB")
	memstat.CheckBound(b, "dup copy", copyRSS, bound)
}
