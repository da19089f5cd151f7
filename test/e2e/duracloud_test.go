package e2e

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
)

// TestDuraCloudDeploymentInPlace: a DuraCloud deployment's buckets, written
// with raw S3 calls the way DuraCloud's S3StorageProvider writes them (a
// bucket per space named <access key ID>.<space>, Content-Type, an
// ETag that is the MD5, properties as user metadata, space properties as
// bucket tags), registered as an s3 store with "layout": "duracloud", are
// what the real millctl shows: its spaces (not a hidden space, another
// account's bucket or a bucket whose name is no space ID), its items, and
// each item's MD5, mimetype and properties.
func TestDuraCloudDeploymentInPlace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bins := testbin.Build(t, "millctl")
	cfg := testenv.AWS(t)
	c := cfg.S3()
	prefix := testenv.Prefix(t)

	accessKey := testenv.AccessKeyID()
	account := strings.ToLower(accessKey)
	bucket := func(name string, tags map[string]string) { duraBucket(ctx, t, c, name, tags) }
	object := func(b, key, mime, body string, meta map[string]string) string {
		return duraObject(ctx, t, c, b, key, mime, body, meta)
	}
	books := prefix + "books" // Mill's bookkeeping (trash, temporary uploads)
	bucket(books, nil)
	bucket(account+".photos", map[string]string{"space-created": "2019-03-04T05:06:07", "acl-user-read": "alice+example.org:"})
	bucket(account+".archive-2020", map[string]string{"space-created": "2020-01-01T00:00:00"})
	bucket("hidden-"+account+".snapshots", nil)
	bucket(account+".9lives", nil)
	other := strings.ToLower(testenv.AccessKeyID())
	bucket(other+".photos", nil)

	sums := map[string]string{
		"photos/2024/sunset.jpg": object(account+".photos", "2024/sunset.jpg", "image/jpeg", "jpeg bytes", map[string]string{
			"source-location": "scanner 4", // setContentProperties' form
			"creator":         "UTF-8''alice%40example.org+%26+bob",
		}),
		"photos/2024/notes.txt":  object(account+".photos", "2024/notes.txt", "text/plain", "notes", nil),
		"archive-2020/README.md": object(account+".archive-2020", "README.md", "text/markdown", "# archive", nil),
	}
	object(other+".photos", "theirs.jpg", "image/jpeg", "not ours", nil)

	conf := t.TempDir()
	reg := fmt.Sprintf(`{"accounts": [{"id": "acme", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "s3", "layout": "duracloud", "accountPrefix": %q, "bucket": %q, "region": "us-east-1"}]}]}`, accessKey, books)
	if err := os.WriteFile(filepath.Join(conf, "accounts.json"), []byte(reg), 0o644); err != nil {
		t.Fatal(err)
	}
	env := testbin.Env("MILL_CONFIG_DIR=" + conf)
	millctl := func(args ...string) string {
		t.Helper()
		p := testbin.Run(t, time.Minute, testbin.Spec{Path: bins["millctl"], Args: args, Env: env})
		if p.ExitCode() != 0 {
			t.Fatalf("millctl %s: exit %d\n%s", strings.Join(args, " "), p.ExitCode(), p.Stderr())
		}
		return p.Stdout()
	}

	if out := millctl("content", "ls", "acme", "1"); out != "archive-2020\nphotos\n" {
		t.Errorf("content ls acme 1:\n%s\nwant the spaces archive-2020 and photos", out)
	}
	if out := millctl("content", "ls", "acme", "1", "photos"); out != "2024/notes.txt\n2024/sunset.jpg\n" {
		t.Errorf("content ls acme 1 photos:\n%s", out)
	}
	want := map[string]struct {
		mime  string
		size  int64
		props map[string]string
	}{
		"photos/2024/sunset.jpg": {"image/jpeg", 10, map[string]string{"source-location": "scanner 4", "creator": "alice@example.org & bob"}},
		"photos/2024/notes.txt":  {"text/plain", 5, map[string]string{}},
		"archive-2020/README.md": {"text/markdown", 9, map[string]string{}},
	}
	for item, w := range want {
		space, id, _ := strings.Cut(item, "/")
		var got struct {
			Checksum, ProviderChecksum, MimeType string
			Size                                 int64
			Properties                           map[string]string
		}
		out := millctl("content", "props", "acme", "1", space, id)
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("content props %s: %v\n%s", item, err, out)
		}
		if got.Checksum != sums[item] || got.ProviderChecksum != "md5:"+sums[item] || got.MimeType != w.mime || got.Size != w.size || !maps.Equal(got.Properties, w.props) {
			t.Errorf("content props %s:\n%s\nwant checksum %s, mimetype %s, %d bytes, properties %v", item, out, sums[item], w.mime, w.size, w.props)
		}
	}
	if out := millctl("content", "get", "acme", "1", "photos", "2024/sunset.jpg"); out != "jpeg bytes" {
		t.Errorf("content get: %q", out)
	}
}

// duraBucket creates a bucket as DuraCloud's S3StorageProvider creates a
// space's (its properties as bucket tags), removed when the test ends.
func duraBucket(ctx context.Context, t *testing.T, c *s3.Client, name string, tags map[string]string) {
	t.Helper()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	testenv.CleanupBucket(t, c, name)
	var set []s3types.Tag
	for k, v := range tags {
		set = append(set, s3types.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	if len(set) > 0 {
		if _, err := c.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: aws.String(name), Tagging: &s3types.Tagging{TagSet: set}}); err != nil {
			t.Fatal(err)
		}
	}
}

// duraObject writes an item as DuraCloud does (Content-Type, Content-MD5,
// properties as user metadata) and returns its MD5 (hex).
func duraObject(ctx context.Context, t *testing.T, c *s3.Client, b, key, mime, body string, meta map[string]string) string {
	t.Helper()
	sum := md5.Sum([]byte(body))
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(key), Body: strings.NewReader(body),
		ContentType: aws.String(mime), ContentMD5: aws.String(base64.StdEncoding.EncodeToString(sum[:])), Metadata: meta}); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(sum[:])
}
