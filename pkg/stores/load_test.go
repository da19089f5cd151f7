package stores_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/stores/jsonpos"
)

// accounts.json is read with a size limit: an oversized file is refused
// with a clear error before it is parsed.
func TestLoadFileSizeLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), stores.FileName)
	if err := os.WriteFile(p, make([]byte, stores.MaxFileSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := stores.LoadFile(p)
	if !errors.Is(err, jsonpos.ErrTooLarge) || !strings.Contains(err.Error(), "accounts.json: larger than the 16777216-byte limit") {
		t.Fatalf("LoadFile of an oversized registry = %v", err)
	}
}

func TestLoadS3SizeLimit(t *testing.T) {
	c := testenv.AWS(t).S3()
	ctx := context.Background()
	bucket := testenv.Prefix(t) + "registry"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, c, bucket)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(stores.FileName),
		Body: bytes.NewReader(make([]byte, stores.MaxFileSize+1))}); err != nil {
		t.Fatal(err)
	}
	_, err := stores.LoadS3(ctx, c, bucket, stores.FileName)
	if !errors.Is(err, jsonpos.ErrTooLarge) || !strings.Contains(err.Error(), "/accounts.json: larger than the 16777216-byte limit") {
		t.Fatalf("LoadS3 of an oversized registry = %v", err)
	}
}
