package s3store

import (
	"bytes"
	"context"
	"errors"
	"hash/crc64"
	"io"
	"maps"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	"github.com/millfleet/mill/pkg/storage/storagetest"
)

// Small thresholds so the suite's large items (5 MiB + 1 KiB: two parts)
// take the multipart put and multipart copy paths.
var testConfig = Config{
	Upload:        storage.Upload{Threshold: 5 << 20, Transfer: storage.Transfer{PartSize: 5 << 20}},
	CopyThreshold: 5 << 20,
	CopyPartSize:  5 << 20,
}

// setupBucket returns a client and a fresh bucket removed after the test.
func setupBucket(t testing.TB) (*s3.Client, string) {
	t.Helper()
	cfg := testenv.AWS(t)
	client := cfg.S3()
	bucket := testenv.Prefix(t) + "store"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("create bucket %s: %v", bucket, err)
	}
	testenv.CleanupBucket(t, client, bucket)
	return client, bucket
}

// TestConformance runs the suite on a bucket without versioning (deletes
// and overwrites keep trash copies) and TestConformanceVersioned on a
// versioned one (S3 keeps the previous versions).
func TestConformance(t *testing.T) { conformance(t, false) }

func TestConformanceVersioned(t *testing.T) { conformance(t, true) }

func enableVersioning(t testing.TB, client *s3.Client, bucket string) {
	t.Helper()
	_, err := client.PutBucketVersioning(t.Context(), &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}})
	if err != nil {
		t.Fatal(err)
	}
}

func conformance(t *testing.T, versioned bool) {
	client, bucket := setupBucket(t)
	if versioned {
		enableVersioning(t, client, bucket)
	}
	unverified := emulatorCRC64NVME(t, client, bucket)
	storagetest.Run(t, storagetest.Harness{
		CopyConditionsIgnored: copyConditionsIgnored(t, client, bucket),
		LargeSize:             11 << 20,
		MaxPropertiesSize:     MaxMetadataSize,
		UnverifiedChecksums:   unverified,
		New: func(t *testing.T) storagetest.Fixture {
			cfg := testConfig
			cfg.Bucket, cfg.Prefix = bucket, "stores/"+testenv.Unique()+"/"
			s, err := New(client, cfg)
			if err != nil {
				t.Fatal(err)
			}
			return storagetest.Fixture{
				Provider:        s,
				MaxContentIDLen: s.MaxContentIDLen,
				Corrupt: func(t *testing.T, space, id string) {
					o, _ := s.contentKey(space, id)
					key := o.key
					ctx := t.Context()
					out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
					if err != nil {
						t.Fatal(err)
					}
					b, _ := io.ReadAll(out.Body)
					out.Body.Close()
					b[0] ^= 1
					// Same metadata (the recorded MD5), different bytes.
					if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(b), Metadata: out.Metadata, ContentType: out.ContentType}); err != nil {
						t.Fatal(err)
					}
				},
				Replace: func(t *testing.T, space, id string, data []byte) {
					o, _ := s.contentKey(space, id)
					key := o.key
					ctx := t.Context()
					h, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
					if err != nil {
						t.Fatal(err)
					}
					if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data), Metadata: h.Metadata, ContentType: h.ContentType}); err != nil {
						t.Fatal(err)
					}
				},
			}
		}})
}

// emulatorCRC64NVME uploads one multipart object and returns
// []string{"crc64nvme"} when the service reports a wrong full-object
// CRC64NVME for it (moto without the awscrt package falls back to CRC32),
// nil when the value is right.
func emulatorCRC64NVME(t *testing.T, client *s3.Client, bucket string) []string {
	t.Helper()
	cfg := testConfig
	cfg.Bucket, cfg.Prefix = bucket, "probe/"
	s, err := New(client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := s.CreateSpace(ctx, "probe"); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte{7}, int(cfg.Threshold)+1)
	sum, _, _ := storage.MD5Hex(bytes.NewReader(data)) // a known MD5: a direct multipart upload, no commit copy
	_, err = s.Put(ctx, "probe", "multipart", bytes.NewReader(data), storage.PutOptions{Size: int64(len(data)), Checksum: sum})
	if err != nil {
		t.Fatalf("probe multipart put: %v", err)
	}
	want := storage.ProviderCRC64NVME(crc64.Checksum(data, storage.CRC64NVMETable))
	head, err := s.Head(ctx, "probe", "multipart")
	if err != nil {
		t.Fatal(err)
	}
	if head.ProviderChecksum == want {
		return nil
	}
	if testenv.Endpoint() == "" {
		t.Fatalf("S3 reports full-object checksum %q, want %q", head.ProviderChecksum, want)
	}
	t.Logf("EMULATOR GAP: %s reports the full-object CRC64NVME of a multipart upload as %q, want %q "+
		"(moto without the awscrt package computes CRC32); the suite checks crc64nvme provider checksums for presence only",
		testenv.Endpoint(), head.ProviderChecksum, want)
	return []string{storage.AlgCRC64NVME}
}

func TestNewValidates(t *testing.T) {
	if _, err := New(s3.New(s3.Options{}), Config{Upload: storage.Upload{Transfer: storage.Transfer{PartSize: 1}}}); err == nil {
		t.Fatal("New with no bucket and a 1-byte part size: nil error")
	}
	s, err := New(s3.New(s3.Options{}), Config{Bucket: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Config(); c.Threshold != DefaultMultipartThreshold || c.PartSize != DefaultPartSize || c.CopyThreshold != DefaultCopyThreshold {
		t.Errorf("defaults not applied: %+v", c)
	}
}

func TestMetadataLimit(t *testing.T) {
	_, err := metadata("5d41402abc4b2a76b9719d911017c592", map[string]string{"k": string(bytes.Repeat([]byte("é"), 1200))})
	if !errors.Is(err, storage.ErrPropertiesTooLarge) {
		t.Fatalf("metadata of ~7 KB escaped JSON: %v", err)
	}
	m, err := metadata("5d41402abc4b2a76b9719d911017c592", map[string]string{"ключ": "🎉"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range m[MetaProps] {
		if c >= 0x80 {
			t.Fatalf("non-ASCII in %q", m[MetaProps])
		}
	}
}

func TestCopySource(t *testing.T) {
	if got := (object{bucket: "b", key: "p/a b+c%d/é"}).copySource(); got != "b/p/a%20b%2Bc%25d/%C3%A9" {
		t.Errorf("copySource = %q", got)
	}
	if got := (object{bucket: "b", key: "k", version: "a+b/c=="}).copySource(); got != "b/k?versionId=a%2Bb%2Fc%3D%3D" {
		t.Errorf("copySource with a version = %q", got)
	}
}

// TestCopyAcrossProviders streams items between an S3 store and a
// filesystem store (no server-side copy possible) in both directions.
func TestCopyAcrossProviders(t *testing.T) {
	client, bucket := setupBucket(t)
	cfg := testConfig
	cfg.Bucket, cfg.Prefix = bucket, "x/"
	s3s, err := New(client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	fss, err := fsstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, p := range []storage.Provider{s3s, fss} {
		for _, sp := range []string{"a", "b"} {
			if err := p.CreateSpace(ctx, sp); err != nil {
				t.Fatal(err)
			}
		}
	}
	props := map[string]string{"creator": "alice"}
	for _, size := range []int{10, 5<<20 + 1024} {
		data := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
		if _, err := s3s.Put(ctx, "a", "item", bytes.NewReader(data), storage.PutOptions{Size: int64(size), Properties: props}); err != nil {
			t.Fatal(err)
		}
		info, err := storage.Copy(ctx, s3s, "a", "item", fss, "b")
		if err != nil {
			t.Fatalf("S3 → fs (%d bytes): %v", size, err)
		}
		if info.Size != int64(size) || !maps.Equal(info.Properties, props) {
			t.Errorf("S3 → fs: %+v", info)
		}
		back, err := storage.Copy(ctx, fss, "b", "item", s3s, "b")
		if err != nil {
			t.Fatalf("fs → S3 (%d bytes): %v", size, err)
		}
		if back.Checksum != info.Checksum || !maps.Equal(back.Properties, props) {
			t.Errorf("fs → S3: %+v, want checksum %s", back, info.Checksum)
		}
	}
}

// copyConditionsIgnored probes whether the endpoint's CopyObject
// preconditions cannot be relied on: ignored (moto copies over an existing
// key under If-None-Match: *), or refused but leaving the object
// unreadable (LocalStack 4.14 keeps the refused source's checksum on it).
// Against real S3 (no emulator endpoint) either fails the test.
func copyConditionsIgnored(t *testing.T, client *s3.Client, bucket string) bool {
	t.Helper()
	ctx := t.Context()
	key := "probe/" + testenv.Unique()
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader([]byte("x"))}); err != nil {
		t.Fatal(err)
	}
	other := key + "-source"
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(other), Body: bytes.NewReader([]byte("y"))}); err != nil {
		t.Fatal(err)
	}
	_, err := client.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
		CopySource: aws.String(object{bucket: bucket, key: other}.copySource()), IfNoneMatch: aws.String("*"),
		MetadataDirective: types.MetadataDirectiveReplace})
	if err != nil {
		// Refused, as S3 does; the object must still read whole (one
		// emulator leaves it unreadable after a refused copy).
		gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		out, gerr := client.GetObject(gctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		var b []byte
		if gerr == nil {
			b, gerr = io.ReadAll(out.Body)
			out.Body.Close()
		}
		if gerr == nil && string(b) == "x" {
			return false
		}
		if testenv.Endpoint() == "" {
			t.Fatalf("S3 refused a conditional copy and left the object unreadable: %q, %v", b, gerr)
		}
		t.Logf("EMULATOR GAP: %s leaves an object unreadable after refusing a conditional CopyObject (%v); the suite checks Put's preconditions only", testenv.Endpoint(), gerr)
		return true
	}
	if testenv.Endpoint() == "" {
		t.Fatal("S3 copied over an existing key under If-None-Match: *")
	}
	t.Logf("EMULATOR GAP: %s ignores CopyObject's preconditions; the suite checks Put's only", testenv.Endpoint())
	return true
}
