package setup

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Evidence bucket defaults.
const (
	// DefaultEvidenceRetentionDays is the evidence bucket's default
	// retention: seven years, longer than the interval between two
	// audits (ISO 16363, CoreTrustSeal: three to five years).
	DefaultEvidenceRetentionDays = 2555
	// MaxEvidenceRetentionDays bounds the setting (S3 allows 100 years).
	MaxEvidenceRetentionDays = 36500
)

// ObjectLock is S3 Object Lock in compliance mode with a default
// retention: every object version written to the bucket can be neither
// deleted nor overwritten in place, by anyone (the account's root user
// included), until it is Days old; a write of the same key adds a
// version and leaves the locked one as it was. Object Lock is enabled
// when the bucket is created (an existing bucket gets it through
// PutObjectLockConfiguration, which needs versioning, set before it). It
// is not optional: an endpoint that does not implement it fails the
// bucket, it is not a note.
type ObjectLock struct {
	Days int32
}

func (l ObjectLock) String() string {
	return fmt.Sprintf("object lock: compliance mode, default retention %d days", l.Days)
}

// objectLockSetting is the bucket's Object Lock configuration.
func (b *Bucket) objectLockSetting() bucketSetting {
	name := aws.String(b.BucketName)
	return bucketSetting{
		what:     b.Lock.String(),
		required: true,
		check: func(ctx context.Context) (bool, error) {
			out, err := b.Client.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: name})
			if errorCode(err) == "ObjectLockConfigurationNotFoundError" {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			c := out.ObjectLockConfiguration
			if c == nil || c.ObjectLockEnabled != s3types.ObjectLockEnabledEnabled || c.Rule == nil || c.Rule.DefaultRetention == nil {
				return false, nil
			}
			r := c.Rule.DefaultRetention
			return r.Mode == s3types.ObjectLockRetentionModeCompliance && aws.ToInt32(r.Days) == b.Lock.Days && aws.ToInt32(r.Years) == 0, nil
		},
		put: func(ctx context.Context) error {
			_, err := b.Client.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{Bucket: name,
				ObjectLockConfiguration: &s3types.ObjectLockConfiguration{
					ObjectLockEnabled: s3types.ObjectLockEnabledEnabled,
					Rule: &s3types.ObjectLockRule{DefaultRetention: &s3types.DefaultRetention{
						Mode: s3types.ObjectLockRetentionModeCompliance, Days: aws.Int32(b.Lock.Days),
					}},
				}})
			return err
		},
	}
}
