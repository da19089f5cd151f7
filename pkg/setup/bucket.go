package setup

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Bucket is an S3 bucket with public access blocked, default encryption
// (SSE-S3 unless the bucket already has another default, such as SSE-KMS)
// and versioning. Those three settings are optional in the sense that an
// endpoint answering NotImplemented for one is noted, not failed.
type Bucket struct {
	Client     S3API
	BucketName string
	// Region is the bucket's location constraint; us-east-1 or empty
	// sends none.
	Region string
}

// Kind implements Resource.
func (b *Bucket) Kind() string { return "bucket" }

// Name implements Resource.
func (b *Bucket) Name() string { return b.BucketName }

// bucketSetting is one optional setting: check reports whether it is in
// place (err NotImplemented = cannot tell); put sets it.
type bucketSetting struct {
	what  string
	check func(ctx context.Context) (bool, error)
	put   func(ctx context.Context) error
}

func (b *Bucket) settings() []bucketSetting {
	name := aws.String(b.BucketName)
	return []bucketSetting{
		{
			what: "public access blocked",
			check: func(ctx context.Context) (bool, error) {
				out, err := b.Client.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: name})
				if errorCode(err) == "NoSuchPublicAccessBlockConfiguration" {
					return false, nil
				}
				if err != nil {
					return false, err
				}
				c := out.PublicAccessBlockConfiguration
				return c != nil && aws.ToBool(c.BlockPublicAcls) && aws.ToBool(c.IgnorePublicAcls) &&
					aws.ToBool(c.BlockPublicPolicy) && aws.ToBool(c.RestrictPublicBuckets), nil
			},
			put: func(ctx context.Context) error {
				_, err := b.Client.PutPublicAccessBlock(ctx, &s3.PutPublicAccessBlockInput{Bucket: name,
					PublicAccessBlockConfiguration: &s3types.PublicAccessBlockConfiguration{
						BlockPublicAcls: aws.Bool(true), IgnorePublicAcls: aws.Bool(true),
						BlockPublicPolicy: aws.Bool(true), RestrictPublicBuckets: aws.Bool(true),
					}})
				return err
			},
		},
		{
			what: "default encryption",
			check: func(ctx context.Context) (bool, error) {
				out, err := b.Client.GetBucketEncryption(ctx, &s3.GetBucketEncryptionInput{Bucket: name})
				if errorCode(err) == "ServerSideEncryptionConfigurationNotFoundError" {
					return false, nil
				}
				if err != nil {
					return false, err
				}
				return out.ServerSideEncryptionConfiguration != nil && len(out.ServerSideEncryptionConfiguration.Rules) > 0, nil
			},
			put: func(ctx context.Context) error {
				_, err := b.Client.PutBucketEncryption(ctx, &s3.PutBucketEncryptionInput{Bucket: name,
					ServerSideEncryptionConfiguration: &s3types.ServerSideEncryptionConfiguration{
						Rules: []s3types.ServerSideEncryptionRule{{
							ApplyServerSideEncryptionByDefault: &s3types.ServerSideEncryptionByDefault{SSEAlgorithm: s3types.ServerSideEncryptionAes256},
						}},
					}})
				return err
			},
		},
		{
			what: "versioning",
			check: func(ctx context.Context) (bool, error) {
				out, err := b.Client.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: name})
				if err != nil {
					return false, err
				}
				return out.Status == s3types.BucketVersioningStatusEnabled, nil
			},
			put: func(ctx context.Context) error {
				_, err := b.Client.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: name,
					VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}})
				return err
			},
		},
	}
}

// exists reports whether the bucket exists and is ours to use.
func (b *Bucket) exists(ctx context.Context) (bool, error) {
	_, err := b.Client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(b.BucketName)})
	if err == nil {
		return true, nil
	}
	var nf *s3types.NotFound
	var nsb *s3types.NoSuchBucket
	if errors.As(err, &nf) || errors.As(err, &nsb) || httpStatus(err) == http.StatusNotFound {
		return false, nil
	}
	if httpStatus(err) == http.StatusForbidden {
		return false, fmt.Errorf("bucket %s exists but this account may not use it (owned by another account?): %w", b.BucketName, err)
	}
	return false, fmt.Errorf("head bucket %s: %w", b.BucketName, err)
}

// inspect checks every setting; missing lists those not in place.
func (b *Bucket) inspect(ctx context.Context) (missing []bucketSetting, notes []string, err error) {
	for _, s := range b.settings() {
		ok, err := s.check(ctx)
		switch {
		case notImplemented(err):
			notes = append(notes, fmt.Sprintf("%s: the endpoint does not implement it; not checked", s.what))
		case err != nil:
			return nil, nil, fmt.Errorf("bucket %s: check %s: %w", b.BucketName, s.what, err)
		case !ok:
			missing = append(missing, s)
		}
	}
	return missing, notes, nil
}

// Plan implements Resource.
func (b *Bucket) Plan(ctx context.Context) (Change, error) {
	ok, err := b.exists(ctx)
	if err != nil {
		return Change{}, err
	}
	if !ok {
		return Change{Action: ActionCreate, Reasons: []string{"public access blocked, default encryption, versioning"}}, nil
	}
	missing, notes, err := b.inspect(ctx)
	if err != nil {
		return Change{}, err
	}
	if len(missing) == 0 {
		return Change{Action: ActionNone, Notes: notes}, nil
	}
	c := Change{Action: ActionUpdate, Notes: notes}
	for _, s := range missing {
		c.Reasons = append(c.Reasons, s.what+": off → on")
	}
	return c, nil
}

// Apply implements Resource.
func (b *Bucket) Apply(ctx context.Context, c Change) (Result, error) {
	res := Result{Status: StatusUpdated}
	ok, err := b.exists(ctx)
	if err != nil {
		return Result{}, err
	}
	settings := b.settings()
	if !ok {
		in := &s3.CreateBucketInput{Bucket: aws.String(b.BucketName)}
		if b.Region != "" && b.Region != "us-east-1" {
			in.CreateBucketConfiguration = &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(b.Region)}
		}
		_, err := b.Client.CreateBucket(ctx, in)
		var owned *s3types.BucketAlreadyOwnedByYou
		if err != nil && !errors.As(err, &owned) {
			var taken *s3types.BucketAlreadyExists
			if errors.As(err, &taken) {
				return Result{}, fmt.Errorf("bucket name %s is taken by another account: choose another name: %w", b.BucketName, err)
			}
			return Result{}, fmt.Errorf("create bucket %s: %w", b.BucketName, err)
		}
		res.Status = StatusCreated
	} else {
		// Set only what is missing now (Plan's view may be stale).
		missing, _, err := b.inspect(ctx)
		if err != nil {
			return Result{}, err
		}
		settings = missing
	}
	for _, s := range settings {
		err := s.put(ctx)
		switch {
		case notImplemented(err):
			res.Notes = append(res.Notes, fmt.Sprintf("%s: the endpoint does not implement it; not set", s.what))
		case err != nil:
			return Result{}, fmt.Errorf("bucket %s: set %s: %w", b.BucketName, s.what, err)
		default:
			res.Details = append(res.Details, s.what)
		}
	}
	if res.Status == StatusUpdated && len(res.Details) == 0 {
		res.Status = StatusExists
	}
	return res, nil
}
