package setup

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

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
	// Expire lists lifecycle rules that expire objects under a prefix
	// (the claim check's blobs); rules of other IDs are kept as they are.
	Expire []Expiry
	// Lock, when set, creates the bucket with S3 Object Lock and keeps its
	// default retention (objectlock.go): the evidence bucket.
	Lock *ObjectLock
}

// Expiry is a lifecycle rule under Prefix: when Days > 0, objects expire
// Days after they were written, and their noncurrent versions (the bucket
// is versioned) a day after they became noncurrent; otherwise, when
// NoncurrentDays > 0, current objects stay and their noncurrent versions
// expire NoncurrentDays after they became noncurrent, and delete markers
// left without versions are removed; when AbortDays > 0, multipart uploads
// still incomplete AbortDays after they started are aborted (their parts
// are billed until then).
type Expiry struct {
	ID, Prefix     string
	Days           int32
	NoncurrentDays int32
	AbortDays      int32
}

func (e Expiry) rule() s3types.LifecycleRule {
	r := s3types.LifecycleRule{
		ID:     aws.String(e.ID),
		Status: s3types.ExpirationStatusEnabled,
		Filter: &s3types.LifecycleRuleFilter{Prefix: aws.String(e.Prefix)},
	}
	if e.Days > 0 {
		r.Expiration = &s3types.LifecycleExpiration{Days: aws.Int32(e.Days)}
		r.NoncurrentVersionExpiration = &s3types.NoncurrentVersionExpiration{NoncurrentDays: aws.Int32(1)}
	} else if e.NoncurrentDays > 0 {
		r.Expiration = &s3types.LifecycleExpiration{ExpiredObjectDeleteMarker: aws.Bool(true)}
		r.NoncurrentVersionExpiration = &s3types.NoncurrentVersionExpiration{NoncurrentDays: aws.Int32(e.NoncurrentDays)}
	}
	if e.AbortDays > 0 {
		r.AbortIncompleteMultipartUpload = &s3types.AbortIncompleteMultipartUpload{DaysAfterInitiation: aws.Int32(e.AbortDays)}
	}
	return r
}

// matches reports whether r is e's rule as set.
func (e Expiry) matches(r s3types.LifecycleRule) bool {
	var prefix string
	if r.Filter != nil {
		prefix = aws.ToString(r.Filter.Prefix)
	}
	expires := r.Expiration != nil && aws.ToInt32(r.Expiration.Days) == e.Days &&
		r.NoncurrentVersionExpiration != nil && aws.ToInt32(r.NoncurrentVersionExpiration.NoncurrentDays) == 1
	if e.Days == 0 {
		expires = r.Expiration == nil || aws.ToInt32(r.Expiration.Days) == 0
		if e.NoncurrentDays > 0 {
			expires = expires && r.Expiration != nil && aws.ToBool(r.Expiration.ExpiredObjectDeleteMarker) &&
				r.NoncurrentVersionExpiration != nil && aws.ToInt32(r.NoncurrentVersionExpiration.NoncurrentDays) == e.NoncurrentDays
		}
	}
	aborts := r.AbortIncompleteMultipartUpload != nil && aws.ToInt32(r.AbortIncompleteMultipartUpload.DaysAfterInitiation) == e.AbortDays
	if e.AbortDays == 0 {
		aborts = r.AbortIncompleteMultipartUpload == nil
	}
	return aws.ToString(r.ID) == e.ID && r.Status == s3types.ExpirationStatusEnabled && prefix == e.Prefix && expires && aborts
}

func (e Expiry) String() string {
	var parts []string
	if e.Days > 0 {
		parts = append(parts, fmt.Sprintf("expiry of %s after %d days", e.Prefix, e.Days))
	} else if e.NoncurrentDays > 0 {
		parts = append(parts, fmt.Sprintf("expiry of noncurrent versions under %q after %d days", e.Prefix, e.NoncurrentDays))
	}
	if e.AbortDays > 0 {
		parts = append(parts, fmt.Sprintf("abort of incomplete multipart uploads under %q after %d days", e.Prefix, e.AbortDays))
	}
	return strings.Join(parts, ", ")
}

// lifecycleRules returns the bucket's rules (none when it has no
// configuration).
func (b *Bucket) lifecycleRules(ctx context.Context) ([]s3types.LifecycleRule, error) {
	out, err := b.Client.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(b.BucketName)})
	if errorCode(err) == "NoSuchLifecycleConfiguration" {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return out.Rules, nil
}

func (b *Bucket) expirySetting(e Expiry) bucketSetting {
	return bucketSetting{
		what: e.String(),
		check: func(ctx context.Context) (bool, error) {
			rules, err := b.lifecycleRules(ctx)
			if err != nil {
				return false, err
			}
			return slices.ContainsFunc(rules, e.matches), nil
		},
		put: func(ctx context.Context) error {
			rules, err := b.lifecycleRules(ctx)
			if err != nil {
				return err
			}
			rules = slices.DeleteFunc(rules, func(r s3types.LifecycleRule) bool { return aws.ToString(r.ID) == e.ID })
			_, err = b.Client.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{
				Bucket:                 aws.String(b.BucketName),
				LifecycleConfiguration: &s3types.BucketLifecycleConfiguration{Rules: append(rules, e.rule())},
			})
			return err
		},
	}
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
	// required: an endpoint that does not implement it fails the bucket.
	required bool
}

func (b *Bucket) settings() []bucketSetting {
	name := aws.String(b.BucketName)
	settings := []bucketSetting{
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
	for _, e := range b.Expire {
		settings = append(settings, b.expirySetting(e))
	}
	if b.Lock != nil {
		settings = append(settings, b.objectLockSetting())
	}
	return settings
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
		case notImplemented(err) && !s.required:
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
		var what []string
		for _, s := range b.settings() {
			what = append(what, s.what)
		}
		return Change{Action: ActionCreate, Reasons: []string{strings.Join(what, ", ")}}, nil
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
		if b.Lock != nil {
			in.ObjectLockEnabledForBucket = aws.Bool(true)
		}
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
		case notImplemented(err) && !s.required:
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
