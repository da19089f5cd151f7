package e2e

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"io"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/azstore"
	"github.com/millfleet/mill/pkg/storage/gcsstore"
	"github.com/millfleet/mill/pkg/storage/s3store"
)

// BenchmarkCopyToClouds streams MILL_BENCH_RATE_BYTES (testenv.BenchRateBytes:
// else MILL_BENCH_BIG_BYTES, else 1 GiB) from
// S3 (MILL_BENCH_S3_ENDPOINT, else the emulator) to GCS (fake-gcs-server in
// this process) and to Azure (Azurite) with storage.Copy — Mill's copy:
// parallel ranged reads, the destination's checked upload — and with each
// SDK's own minimal loop (one GetObject body into a GCS Writer; into
// azblob's UploadStream), in the same run. It reports both rates and
// their ratio (mill/sdk). It runs under `make bench`.
func BenchmarkCopyToClouds(b *testing.B) {
	size := testenv.BenchRateBytes(b)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	cfg := testenv.AWS(b)
	s3c := cfg.S3(func(o *s3.Options) { o.BaseEndpoint = aws.String(testenv.BenchS3Endpoint(b)) })
	bucket := testenv.Prefix(b) + "bench"
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		b.Fatal(err)
	}
	testenv.CleanupBucket(b, s3c, bucket)
	src, err := s3store.New(s3c, s3store.Config{Bucket: bucket, Prefix: "bench/"})
	if err != nil {
		b.Fatal(err)
	}
	if err := src.CreateSpace(ctx, "big"); err != nil {
		b.Fatal(err)
	}
	h := md5.New()
	if _, err := io.Copy(h, testenv.Pattern(7, size)); err != nil {
		b.Fatal(err)
	}
	want := hex.EncodeToString(h.Sum(nil))
	if _, err := src.Put(ctx, "big", "object", testenv.Pattern(7, size), storage.PutOptions{Size: size, Checksum: want}); err != nil {
		b.Fatal(err)
	}
	srcKey := "bench/big/object"

	gcsEP := testenv.FakeGCS(b)
	gc, err := gcsstore.NewClient(ctx, gcsstore.ClientConfig{Endpoint: gcsEP, Anonymous: true})
	if err != nil {
		b.Fatal(err)
	}
	gsdk := testenv.GCSClient(b, gcsEP)
	gbucket := testenv.GCSBucket(b, gsdk)
	azEP, cont := testenv.AzureContainer(b)
	azc, err := azstore.NewClient(ctx, azstore.ClientConfig{StorageAccount: testenv.AzuriteAccount, Container: cont, ConnectionString: testenv.AzuriteConnectionString(azEP)})
	if err != nil {
		b.Fatal(err)
	}
	gdst, err := gcsstore.New(gc, gcsstore.Config{Bucket: gbucket, Prefix: "mill/"})
	if err != nil {
		b.Fatal(err)
	}
	adst, err := azstore.New(azc, azstore.Config{Prefix: "mill/"})
	if err != nil {
		b.Fatal(err)
	}
	sdkGet := func() io.ReadCloser {
		out, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(srcKey)})
		if err != nil {
			b.Fatal(err)
		}
		return out.Body
	}
	for _, tc := range []struct {
		name string
		dst  storage.Provider
		sdk  func() // the SDK's minimal copy loop
	}{
		{"gcs", gdst, func() {
			body := sdkGet()
			defer body.Close()
			w := gsdk.Bucket(gbucket).Object("sdk/object").NewWriter(ctx)
			if _, err := io.Copy(w, body); err != nil {
				b.Fatal(err)
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		}},
		{"azure", adst, func() {
			body := sdkGet()
			defer body.Close()
			if _, err := azc.NewBlockBlobClient("sdk/object").UploadStream(ctx, body, &blockblob.UploadStreamOptions{}); err != nil {
				b.Fatal(err)
			}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			if err := tc.dst.CreateSpace(ctx, "big"); err != nil {
				b.Fatal(err)
			}
			var mill, sdk time.Duration
			for b.Loop() {
				start := time.Now()
				info, err := storage.Copy(ctx, src, "big", "object", tc.dst, "big")
				if err != nil {
					b.Fatal(err)
				}
				mill += time.Since(start)
				if info.Checksum != want || info.Size != size {
					b.Fatalf("copy: %+v, want MD5 %s and %d bytes", info, want, size)
				}
				start = time.Now()
				tc.sdk()
				sdk += time.Since(start)
			}
			const mib = 1 << 20
			n := float64(b.N)
			b.ReportMetric(float64(size)/mib*n/mill.Seconds(), "mill-MiB/s")
			b.ReportMetric(float64(size)/mib*n/sdk.Seconds(), "sdk-MiB/s")
			b.ReportMetric(sdk.Seconds()/mill.Seconds(), "mill/sdk")
		})
	}
}
