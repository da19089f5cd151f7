package s3store

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/storage/storagetest"
)

// newAccountPrefix returns a fresh 20-character account prefix, as
// DuraCloud names buckets with an access key ID (upper case, as AWS
// issues them: the store lower-cases it).
func newAccountPrefix(t testing.TB) string {
	t.Helper()
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, AccountPrefixLen)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return "MILLTEST" + string(b[8:])
}

// cleanupSpaceBuckets empties and deletes every bucket named with the
// account prefix when the test ends.
func cleanupSpaceBuckets(t testing.TB, client *s3.Client, accountPrefix string) {
	t.Helper()
	pre := strings.ToLower(accountPrefix) + "."
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		out, err := client.ListBuckets(ctx, &s3.ListBucketsInput{})
		if err != nil {
			t.Logf("cleanup: list buckets: %v", err)
			return
		}
		for _, b := range out.Buckets {
			if name := aws.ToString(b.Name); strings.HasPrefix(name, pre) {
				if err := testenv.EmptyBucket(ctx, client, name); err != nil {
					t.Logf("cleanup: empty bucket %s: %v", name, err)
				}
				_, _ = client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)})
			}
		}
	})
}

// newDuraStore returns a DuraCloud-layout store with a fresh account
// prefix, its bookkeeping under a fresh prefix of bucket.
func newDuraStore(t *testing.T, client *s3.Client, bucket string) (*Store, string) {
	t.Helper()
	cfg := testConfig
	cfg.Bucket, cfg.Prefix = bucket, "mill/"+testenv.Unique()+"/"
	cfg.Layout, cfg.AccountPrefix = LayoutDuraCloud, newAccountPrefix(t)
	cleanupSpaceBuckets(t, client, cfg.AccountPrefix)
	s, err := New(client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, strings.ToLower(cfg.AccountPrefix)
}

// TestConformanceDuraCloud runs the suite on DuraCloud's layout: a bucket
// per space, properties as DuraCloud's metadata, ACLs as bucket tags.
// Corrupt and Replace are not offered: the layout's only record of an
// item's MD5 is its ETag, which S3 recomputes for whatever is written, so
// nothing behind the store's back can keep a recorded MD5 for the bytes
// to contradict.
func TestConformanceDuraCloud(t *testing.T) {
	client, bucket := setupBucket(t)
	storagetest.Run(t, storagetest.Harness{
		LargeSize:          11 << 20,
		MaxPropertiesSize:  MaxMetadataSize,
		HeaderPropertyKeys: true,
		PlainPropertyNames: !keepsMetadataName(t, client, bucket, "a%20b*"),
		ACLs: map[string]string{
			"acl-alice": "WRITE", "acl-group-curators": "READ", "acl-Ünïcode user": "READ", "acl-bob@example.org": "READ",
		},
		InvalidACLs: []map[string]string{
			{"user-alice": "WRITE"},               // not a DuraCloud ACL name
			{"acl-alice": "ADMIN"},                // not a DuraCloud right
			{"acl-a:b": "READ"},                   // the packing delimiter
			{"acl-a+b": "READ"},                   // read back as '@'
			{"acl-group-": "READ"},                // no group
			{"acl-x": "READ", "acl-<y>": "WRITE"}, // not in a bucket tag
		},
		New: func(t *testing.T) storagetest.Fixture {
			s, _ := newDuraStore(t, client, bucket)
			return storagetest.Fixture{Provider: s, MaxContentIDLen: s.MaxContentIDLen}
		},
	})
}

// keepsMetadataName reports whether the service keeps a user-metadata
// entry named name as S3 does (moto 5 drops names with characters other
// than letters, digits, '-', '_' and '.').
func keepsMetadataName(t *testing.T, client *s3.Client, bucket, name string) bool {
	t.Helper()
	ctx, key := t.Context(), "probe/"+testenv.Unique()
	_, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
		Body: strings.NewReader("x"), Metadata: map[string]string{name: "v"}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	_, kept := h.Metadata[name]
	t.Logf("the service keeps metadata name %q: %v", name, kept)
	return kept
}
