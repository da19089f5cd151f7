package s3store

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/storagetest"
)

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
	cfg.Layout, cfg.AccountPrefix = LayoutDuraCloud, testenv.AccessKeyID()
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
		CopyConditionsIgnored: copyConditionsIgnored(t, client, bucket),
		LargeSize:             11 << 20,
		MaxPropertiesSize:     MaxMetadataSize,
		HeaderPropertyKeys:    true,
		PlainPropertyNames:    !keepsMetadataName(t, client, bucket, "a%20b*"),
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

// duraFixture builds buckets as DuraCloud's S3StorageProvider writes them,
// with raw S3 calls, and returns the account prefix (lower case).
type duraFixture struct {
	t       *testing.T
	client  *s3.Client
	account string
}

func (f *duraFixture) bucket(name string, tags map[string]string) {
	f.t.Helper()
	ctx := f.t.Context()
	if _, err := f.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		f.t.Fatalf("create bucket %s: %v", name, err)
	}
	testenv.CleanupBucket(f.t, f.client, name)
	if len(tags) > 0 {
		var set []types.Tag
		for k, v := range tags {
			set = append(set, types.Tag{Key: aws.String(k), Value: aws.String(v)})
		}
		if _, err := f.client.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: aws.String(name), Tagging: &types.Tagging{TagSet: set}}); err != nil {
			f.t.Fatal(err)
		}
	}
}

// object writes an item as addContent does: Content-Type, Content-MD5
// and the properties as user metadata.
func (f *duraFixture) object(bucket, key, mime, body string, meta map[string]string) string {
	f.t.Helper()
	sum := md5.Sum([]byte(body))
	_, err := f.client.PutObject(f.t.Context(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
		Body: strings.NewReader(body), ContentType: aws.String(mime), ContentMD5: aws.String(base64.StdEncoding.EncodeToString(sum[:])),
		Metadata: meta})
	if err != nil {
		f.t.Fatal(err)
	}
	return hex.EncodeToString(sum[:])
}

// TestDuraCloudWritten: buckets written the way DuraCloud writes them are
// read as DuraCloud reads them — its spaces only (not hidden spaces, other
// account prefixes or buckets whose name is no space ID), each item's MD5
// from the ETag, its mimetype from Content-Type, its properties from both
// metadata forms DuraCloud writes (addContent: "name*" = the RFC 5987 prefix + URL
// encoding; setContentProperties: the name, the raw value), ACLs from the
// packed bucket tags — and what Mill writes reads back the same way.
func TestDuraCloudWritten(t *testing.T) {
	client, bucket := setupBucket(t)
	s, account := newDuraStore(t, client, bucket)
	f := &duraFixture{t: t, client: client, account: account}
	starKept := keepsMetadataName(t, client, bucket, "creator*")

	f.bucket(account+".photos", map[string]string{"space-created": "2019-03-04T05:06:07",
		"acl-user-read": "alice+example.org:bob:", "acl-group-write": "curators:", "acl-user-write": "bob:"})
	f.bucket(account+".docs-2020", map[string]string{"space-created": "2020-01-01T00:00:00"})
	f.bucket("hidden-"+account+".snapshots", nil) // a hidden space: never listed
	f.bucket(account+".9lives", nil)              // no DuraCloud space ID
	other := strings.ToLower(testenv.AccessKeyID())
	f.bucket(other+".photos", nil) // another account's space
	cleanupSpaceBuckets(t, client, other)

	sunset := f.object(account+".photos", "2024/sunset.jpg", "image/jpeg", "jpeg bytes", map[string]string{
		"creator*":        "UTF-8''alice%40example.org",
		"title%20text*":   "UTF-8''Sunset+over+the+bay+%26+caf%C3%A9",
		"content-size*":   "UTF-8''999", // computed by DuraCloud: never a property
		"source-location": "scanner 4",
	})
	readme := f.object(account+".docs-2020", "README", "text/plain", "read me", nil)
	// DuraCloud keeps a Content-Encoding property as the object's header.
	_, err := client.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(account + ".docs-2020"), Key: aws.String("data.gz"),
		Body: strings.NewReader("gz"), ContentType: aws.String("application/json"), ContentEncoding: aws.String("gzip")})
	if err != nil {
		t.Fatal(err)
	}

	ctx := t.Context()
	spaces, err := s.ListSpaces(ctx)
	if err != nil || strings.Join(spaces, ",") != "docs-2020,photos" {
		t.Fatalf("ListSpaces: %q, %v; want docs-2020 and photos", spaces, err)
	}
	ids, more, err := s.ListContent(ctx, "photos", "", 10)
	if err != nil || more || len(ids) != 1 || ids[0] != "2024/sunset.jpg" {
		t.Fatalf("ListContent(photos): %q %v %v", ids, more, err)
	}
	info, err := s.Head(ctx, "photos", "2024/sunset.jpg")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"source-location": "scanner 4"}
	if starKept {
		want["creator"], want["title text"] = "alice@example.org", "Sunset over the bay & café"
	}
	if info.Checksum != sunset || info.ProviderChecksum != "md5:"+sunset || info.MimeType != "image/jpeg" || info.Size != 10 || !maps.Equal(info.Properties, want) {
		t.Errorf("Head(photos/2024/sunset.jpg) = %+v\nwant MD5 %s, image/jpeg, 10 bytes, properties %v", info, sunset, want)
	}
	if info, err := s.Head(ctx, "docs-2020", "README"); err != nil || info.Checksum != readme || info.MimeType != "text/plain" || len(info.Properties) != 0 {
		t.Errorf("Head(docs-2020/README) = %+v, %v; want MD5 %s", info, err, readme)
	}
	if info, err := s.Head(ctx, "docs-2020", "data.gz"); err != nil || !maps.Equal(info.Properties, map[string]string{"Content-Encoding": "gzip"}) {
		t.Errorf("Head(docs-2020/data.gz) = %+v, %v; want the property Content-Encoding gzip", info, err)
	}
	acls, err := s.SpaceACLs(ctx, "photos")
	wantACLs := map[string]string{"acl-alice@example.org": "READ", "acl-bob": "WRITE", "acl-group-curators": "WRITE"}
	if err != nil || !maps.Equal(acls, wantACLs) {
		t.Errorf("SpaceACLs(photos) = %v, %v; want %v", acls, err, wantACLs)
	}
	for _, sp := range []string{"snapshots", "9lives"} {
		if _, _, err := s.ListContent(ctx, sp, "", 1); err == nil {
			t.Errorf("ListContent(%s) answered: not a space of the account", sp)
		}
	}

	// What Mill writes, DuraCloud reads: the metadata and tags as it
	// writes them (the other tags kept).
	props := map[string]string{"title text": "Été & co", "creator": "mill", "Content-Encoding": "identity"}
	if _, err := s.Put(ctx, "photos", "new.txt", strings.NewReader("new"), storage.PutOptions{Size: 3, MimeType: "text/plain", Properties: props}); err != nil {
		t.Fatal(err)
	}
	h, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(account + ".photos"), Key: aws.String("new.txt")})
	if err != nil {
		t.Fatal(err)
	}
	sum := md5.Sum([]byte("new"))
	wantMeta := map[string]string{"creator": "UTF-8''mill"}
	if keepsMetadataName(t, client, bucket, "a%20b") {
		wantMeta["title%20text"] = "UTF-8''%C3%89t%C3%A9+%26+co"
	}
	if aws.ToString(h.ETag) != `"`+hex.EncodeToString(sum[:])+`"` || aws.ToString(h.ContentType) != "text/plain" || !metaIncludes(h.Metadata, wantMeta) ||
		aws.ToString(h.ContentEncoding) != "identity" || len(h.Metadata) != len(wantMeta) {
		t.Errorf("Mill's object: ETag %s Content-Type %s Content-Encoding %s metadata %v; want the MD5, text/plain, identity and %v",
			aws.ToString(h.ETag), aws.ToString(h.ContentType), aws.ToString(h.ContentEncoding), h.Metadata, wantMeta)
	}
	if err := s.SetSpaceACLs(ctx, "photos", map[string]string{"acl-carol@example.org": "WRITE", "acl-group-public": "READ"}); err != nil {
		t.Fatal(err)
	}
	tags, err := s.tags(ctx, "photos")
	wantTags := map[string]string{"space-created": "2019-03-04T05:06:07", "acl-user-write": "carol+example.org:", "acl-group-read": "public:"}
	if err != nil || !maps.Equal(tags, wantTags) {
		t.Errorf("bucket tags after SetSpaceACLs: %v, %v; want %v", tags, err, wantTags)
	}
}

// metaIncludes reports whether got holds every entry of want.
func metaIncludes(got, want map[string]string) bool {
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// TestDuraCloudCrossLayoutCopy: server-side copies between a DuraCloud-
// layout store and a Mill-layout store on one client keep each item's
// MD5, mimetype and properties in the destination's own form — both ways,
// for a single-part item and a multipart one (whose copy into DuraCloud's
// layout is one object, so its ETag is its MD5).
func TestDuraCloudCrossLayoutCopy(t *testing.T) {
	client, bucket := setupBucket(t)
	dura, account := newDuraStore(t, client, bucket)
	cfg := testConfig
	cfg.Bucket, cfg.Prefix = bucket, "mill-layout/"
	mill, err := New(client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, p := range []storage.Provider{dura, mill} {
		for _, sp := range []string{"src", "dst"} {
			if err := p.CreateSpace(ctx, sp); err != nil {
				t.Fatal(err)
			}
		}
	}
	small := []byte("small item")
	big := bytes.Repeat([]byte("0123456789abcdef"), (11<<20)/16) // multipart in both layouts
	props := map[string]string{"creator": "ålice", "note": "a & b"}
	for _, tc := range []struct {
		name     string
		from, to storage.Provider
	}{{"mill to duracloud", mill, dura}, {"duracloud to mill", dura, mill}} {
		for id, data := range map[string][]byte{"small": small, "big": big} {
			if _, err := tc.from.Put(ctx, "src", id, bytes.NewReader(data), storage.PutOptions{Size: int64(len(data)), MimeType: "text/x-test", Properties: props}); err != nil {
				t.Fatal(err)
			}
			info, done, err := tc.to.(storage.ServerSideCopier).ServerSideCopy(ctx, tc.from, "src", id, "dst", id)
			sum := md5.Sum(data)
			if err != nil || !done || info.Checksum != hex.EncodeToString(sum[:]) || info.MimeType != "text/x-test" || !maps.Equal(info.Properties, props) {
				t.Errorf("%s %s: %+v, copied %v, %v", tc.name, id, info, done, err)
			}
		}
	}
	h, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(account + ".dst"), Key: aws.String("big")})
	if sum := md5.Sum(big); err != nil || aws.ToString(h.ETag) != `"`+hex.EncodeToString(sum[:])+`"` || h.Metadata["creator"] != "UTF-8''%C3%A5lice" {
		t.Errorf("the big item in DuraCloud's layout: ETag %s metadata %v, %v; want its MD5 and DuraCloud's metadata", aws.ToString(h.ETag), h.Metadata, err)
	}
}
