package stores

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// ErrNoRegistry reports that accounts.json does not exist where it was
// looked for.
var ErrNoRegistry = errors.New("stores: no registry")

// LoadFile reads and parses a registry file.
func LoadFile(path string) (*Registry, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s does not exist", ErrNoRegistry, path)
	}
	if err != nil {
		return nil, fmt.Errorf("stores: %w", err)
	}
	return Parse(path, data)
}

// LoadS3 reads and parses the registry object key of bucket (usually
// prefix + FileName).
func LoadS3(ctx context.Context, client *s3.Client, bucket, key string) (*Registry, error) {
	where := "s3://" + bucket + "/" + key
	out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		var nk *s3types.NoSuchKey
		var ae smithy.APIError
		if errors.As(err, &nk) || (errors.As(err, &ae) && (ae.ErrorCode() == "NoSuchKey" || ae.ErrorCode() == "NotFound")) {
			return nil, fmt.Errorf("%w: %s does not exist", ErrNoRegistry, where)
		}
		return nil, fmt.Errorf("stores: get %s: %w", where, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("stores: get %s: %w", where, err)
	}
	return Parse(where, data)
}
