package stores

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/stores/jsonpos"
)

// ErrNoRegistry reports that accounts.json does not exist where it was
// looked for.
var ErrNoRegistry = errors.New("stores: no registry")

// MaxFileSize is the largest accounts.json read (16 MiB: tens of
// thousands of accounts). A larger file is refused with an error wrapping
// jsonpos.ErrTooLarge before it is read whole.
const MaxFileSize = 16 << 20

// LoadFile reads and parses a registry file.
func LoadFile(path string) (*Registry, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s does not exist", ErrNoRegistry, path)
	}
	if err != nil {
		return nil, fmt.Errorf("stores: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > MaxFileSize {
		return nil, jsonpos.TooLarge(path, MaxFileSize)
	}
	data, err := jsonpos.ReadAll(path, f, MaxFileSize)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// LoadS3 reads and parses the registry object key of bucket (usually
// prefix + FileName).
func LoadS3(ctx context.Context, client *s3.Client, bucket, key string) (*Registry, error) {
	where := "s3://" + bucket + "/" + key
	out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}, awsconfig.ReadWhole)
	if err != nil {
		var nk *s3types.NoSuchKey
		var ae smithy.APIError
		if errors.As(err, &nk) || (errors.As(err, &ae) && (ae.ErrorCode() == "NoSuchKey" || ae.ErrorCode() == "NotFound")) {
			return nil, fmt.Errorf("%w: %s does not exist", ErrNoRegistry, where)
		}
		return nil, fmt.Errorf("stores: get %s: %w", where, err)
	}
	defer out.Body.Close()
	if aws.ToInt64(out.ContentLength) > MaxFileSize {
		return nil, jsonpos.TooLarge(where, MaxFileSize)
	}
	data, err := jsonpos.ReadAll(where, out.Body, MaxFileSize)
	if err != nil {
		return nil, fmt.Errorf("stores: get %w", err)
	}
	return Parse(where, data)
}
