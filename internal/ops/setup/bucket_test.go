package setup

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/millfleet/mill/internal/testkit/testenv"
)

// faultyS3 answers chosen operations with an error instead of calling S3.
type faultyS3 struct {
	S3API
	getVersioning, putVersioning, putEncryption error
}

func (f *faultyS3) GetBucketVersioning(ctx context.Context, in *s3.GetBucketVersioningInput, o ...func(*s3.Options)) (*s3.GetBucketVersioningOutput, error) {
	if f.getVersioning != nil {
		return nil, f.getVersioning
	}
	return f.S3API.GetBucketVersioning(ctx, in, o...)
}

func (f *faultyS3) PutBucketVersioning(ctx context.Context, in *s3.PutBucketVersioningInput, o ...func(*s3.Options)) (*s3.PutBucketVersioningOutput, error) {
	if f.putVersioning != nil {
		return nil, f.putVersioning
	}
	return f.S3API.PutBucketVersioning(ctx, in, o...)
}

func (f *faultyS3) PutBucketEncryption(ctx context.Context, in *s3.PutBucketEncryptionInput, o ...func(*s3.Options)) (*s3.PutBucketEncryptionOutput, error) {
	if f.putEncryption != nil {
		return nil, f.putEncryption
	}
	return f.S3API.PutBucketEncryption(ctx, in, o...)
}

func TestBucketOptionalSettings(t *testing.T) {
	cfg := testenv.AWS(t)
	c := cfg.S3()
	ctx := context.Background()
	notImpl := &smithy.GenericAPIError{Code: "NotImplemented", Message: "not implemented by this emulator"}

	t.Run("NotImplemented is a note", func(t *testing.T) {
		name := testenv.Prefix(t) + "optional"
		testenv.CleanupBucket(t, c, name)
		b := &Bucket{Client: &faultyS3{S3API: c, getVersioning: notImpl, putVersioning: notImpl}, BucketName: name}
		sum, err := Apply(ctx, []Resource{b}, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := sum.Results[0]
		if r.Status != StatusCreated || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "versioning: the endpoint does not implement it") {
			t.Fatalf("result %q", r)
		}
		// Again: exists, with the note that versioning could not be checked.
		sum, err = Apply(ctx, []Resource{b}, nil)
		if err != nil || sum.Results[0].Status != StatusExists || !strings.Contains(sum.Results[0].String(), "not checked") {
			t.Fatalf("second apply %q %v", sum.Results[0], err)
		}
	})
	t.Run("a real error fails", func(t *testing.T) {
		name := testenv.Prefix(t) + "denied"
		testenv.CleanupBucket(t, c, name)
		denied := &smithy.GenericAPIError{Code: "AccessDenied", Message: "no"}
		b := &Bucket{Client: &faultyS3{S3API: c, putEncryption: denied}, BucketName: name}
		sum, err := Apply(ctx, []Resource{b}, nil)
		if err == nil || !strings.Contains(err.Error(), "AccessDenied") || sum.Failed != 1 {
			t.Fatalf("Apply with AccessDenied: %v, %+v", err, sum)
		}
	})
}
