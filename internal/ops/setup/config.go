package setup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/base/defaults"
	"github.com/millfleet/mill/pkg/auditlog/dynamoauditlog"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/fleet/dynamofleet"
	"github.com/millfleet/mill/pkg/lease"
	"github.com/millfleet/mill/pkg/lease/dynamolease"
	"github.com/millfleet/mill/pkg/queue"
)

// Defaults for Config: the names of what setup creates are also the
// defaults of every binary's flags naming them (internal/wiring, the
// producers), defined only here.
const (
	DefaultVisibilityTimeout   = 5 * time.Minute
	DefaultWorkRetention       = 4 * 24 * time.Hour
	DefaultDeadLetterRetention = 14 * 24 * time.Hour
	DefaultMaxReceiveCount     = 10
	DefaultConfigBucket        = "mill-config"
	DefaultStateBucket         = "mill-state"
	// CheckpointPrefix is where Workman keeps the checkpoints of long
	// transfers in the state bucket (workman --checkpoint-prefix).
	CheckpointPrefix = "transfers/"
	// StateNoncurrentDays is how long the state bucket keeps a replaced
	// or deleted object version (the producers' state journal replaces
	// and deletes objects as it goes; infra/core.yaml's
	// StateNoncurrentVersionExpirationDays).
	StateNoncurrentDays  = 7
	DefaultReportsBucket = "mill-reports"
	DefaultClaimsBucket  = DefaultStateBucket
	DefaultClaimsPrefix  = "claims/"
	DefaultAuditTable    = auditlog.DefaultTable
	DefaultLeaseTable    = lease.DefaultTable
	DefaultFleetTable    = fleet.DefaultTable
	DefaultTableTimeout  = 5 * time.Minute
)

// Config says what to set up. Zero fields take the defaults above
// (WithDefaults); QueuePrefix defaults to queue.DefaultPrefix.
type Config struct {
	QueuePrefix string
	// VisibilityTimeout of every queue (whole seconds, at most 12 hours).
	VisibilityTimeout time.Duration
	// WorkRetention is the message retention of the six work queues;
	// DeadLetterRetention that of the dead-letter queue, which must be
	// longer so a dead-lettered message outlives its original enqueue time
	// long enough to be inspected (SQS keeps the original timestamp).
	WorkRetention, DeadLetterRetention time.Duration
	// MaxReceiveCount of the redrive policy: the SQS safety net behind
	// Workman's own attempt counting.
	MaxReceiveCount int

	ConfigBucket, StateBucket, ReportsBucket string
	// ClaimsBucket and ClaimsPrefix are where the claim check keeps task
	// bodies too big for SQS (pkg/queue/claimcheck): objects there expire
	// a day after the dead-letter retention, when no message can still
	// refer to them. The bucket is created if it is none of the above.
	ClaimsBucket, ClaimsPrefix string
	AuditTable, LeaseTable     string
	// FleetTable holds the fleet registry: Workman heartbeats and pauses
	// (pkg/fleet).
	FleetTable string
	// TableTimeout bounds waiting for a new table to become ACTIVE.
	TableTimeout time.Duration

	// EvidenceBucket, when set, is the evidence log's bucket, created with
	// S3 Object Lock in compliance mode and a default retention of
	// EvidenceRetentionDays (default DefaultEvidenceRetentionDays):
	// objectlock.go. infra/evidence.yaml is its stack.
	EvidenceBucket        string
	EvidenceRetentionDays int32

	// DatabaseURL is migrated unless SkipDB.
	DatabaseURL string
	SkipDB      bool
}

// defaultConfig holds the values WithDefaults gives a Config's zero fields.
var defaultConfig = Config{
	QueuePrefix:         queue.DefaultPrefix,
	VisibilityTimeout:   DefaultVisibilityTimeout,
	WorkRetention:       DefaultWorkRetention,
	DeadLetterRetention: DefaultDeadLetterRetention,
	MaxReceiveCount:     DefaultMaxReceiveCount,
	ConfigBucket:        DefaultConfigBucket,
	StateBucket:         DefaultStateBucket,
	ReportsBucket:       DefaultReportsBucket,
	ClaimsBucket:        DefaultClaimsBucket,
	ClaimsPrefix:        DefaultClaimsPrefix,
	AuditTable:          DefaultAuditTable,
	LeaseTable:          DefaultLeaseTable,
	FleetTable:          DefaultFleetTable,
	TableTimeout:        DefaultTableTimeout,
}

// WithDefaults returns c with every zero field set to its default
// (EvidenceRetentionDays only with an EvidenceBucket).
func (c Config) WithDefaults() Config {
	defaults.Fill(&c, defaultConfig)
	if c.EvidenceBucket != "" && c.EvidenceRetentionDays == 0 {
		c.EvidenceRetentionDays = DefaultEvidenceRetentionDays
	}
	return c
}

// Validate reports every problem with c (after WithDefaults) at once.
func (c Config) Validate() error {
	var errs []error
	wholeSeconds := func(name string, d, lo, hi time.Duration) {
		if d%time.Second != 0 || d < lo || d > hi {
			errs = append(errs, fmt.Errorf("%s %v: want whole seconds from %v to %v", name, d, lo, hi))
		}
	}
	wholeSeconds("visibility timeout", c.VisibilityTimeout, 0, 12*time.Hour)
	wholeSeconds("work queue retention", c.WorkRetention, time.Minute, 14*24*time.Hour)
	wholeSeconds("dead-letter retention", c.DeadLetterRetention, time.Minute, 14*24*time.Hour)
	if c.DeadLetterRetention < c.WorkRetention {
		errs = append(errs, fmt.Errorf("dead-letter retention %v is shorter than work queue retention %v", c.DeadLetterRetention, c.WorkRetention))
	}
	if c.MaxReceiveCount < 1 || c.MaxReceiveCount > 1000 {
		errs = append(errs, fmt.Errorf("max receive count %d: want 1 to 1000", c.MaxReceiveCount))
	}
	if len(c.QueuePrefix)+len("bit-report") > 80 {
		errs = append(errs, fmt.Errorf("queue prefix %q is too long for SQS's 80-character names", c.QueuePrefix))
	}
	buckets := map[string]string{}
	named := []struct{ what, name string }{{"config", c.ConfigBucket}, {"state", c.StateBucket}, {"reports", c.ReportsBucket}}
	if c.EvidenceBucket != "" {
		// Its own bucket: Object Lock would hold everything else in it
		// for the retention.
		named = append(named, struct{ what, name string }{"evidence", c.EvidenceBucket})
		if c.EvidenceBucket == c.ClaimsBucket {
			errs = append(errs, fmt.Errorf("evidence and claims bucket are both %q", c.EvidenceBucket))
		}
		if c.EvidenceRetentionDays < 1 || c.EvidenceRetentionDays > MaxEvidenceRetentionDays {
			errs = append(errs, fmt.Errorf("evidence retention %d days: want 1 to %d", c.EvidenceRetentionDays, MaxEvidenceRetentionDays))
		}
	}
	for _, b := range named {
		if l := len(b.name); l < 3 || l > 63 {
			errs = append(errs, fmt.Errorf("%s bucket %q: bucket names have 3 to 63 characters", b.what, b.name))
		}
		if other, dup := buckets[b.name]; dup {
			errs = append(errs, fmt.Errorf("%s and %s bucket are both %q", other, b.what, b.name))
		}
		buckets[b.name] = b.what
	}
	tables := map[string]string{}
	for _, tb := range []struct{ what, name string }{{"audit", c.AuditTable}, {"lease", c.LeaseTable}, {"fleet", c.FleetTable}} {
		if other, dup := tables[tb.name]; dup {
			errs = append(errs, fmt.Errorf("%s and %s table are both %q", other, tb.what, tb.name))
		}
		tables[tb.name] = tb.what
	}
	if c.TableTimeout <= 0 {
		errs = append(errs, errors.New("table timeout must be positive"))
	}
	if !c.SkipDB && c.DatabaseURL == "" {
		errs = append(errs, errors.New("no database URL (or skip the database)"))
	}
	return errors.Join(errs...)
}

// Clients are the AWS clients setup uses (see pkg/awsconfig).
type Clients struct {
	SQS      SQSAPI
	S3       S3API
	DynamoDB DynamoDBAPI
	// Region for new buckets' location constraint; empty means the S3
	// client's own region.
	Region string
}

// Resources returns everything Mill needs, in the order to apply it: the
// dead-letter queue, the six work queues (highest priority first), the
// config, state and reports buckets (and the evidence bucket, when
// cfg.EvidenceBucket is set), the audit-log, lease and fleet tables, and
// the database (unless cfg.SkipDB). cfg is defaulted and validated.
func Resources(cfg Config, cl Clients) ([]Resource, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	if cl.SQS == nil || cl.S3 == nil || cl.DynamoDB == nil {
		return nil, errors.New("setup: SQS, S3 and DynamoDB clients are required")
	}
	region := cl.Region
	if region == "" {
		if c, ok := cl.S3.(*s3.Client); ok {
			region = c.Options().Region
		}
	}
	dlq := &Queue{
		Client: cl.SQS, QueueName: queue.Name(cfg.QueuePrefix, queue.KeyDeadLetter),
		VisibilityTimeout: cfg.VisibilityTimeout, Retention: cfg.DeadLetterRetention,
	}
	rs := []Resource{dlq}
	for _, key := range queue.DefaultPriority {
		rs = append(rs, &Queue{
			Client: cl.SQS, QueueName: queue.Name(cfg.QueuePrefix, key),
			VisibilityTimeout: cfg.VisibilityTimeout, Retention: cfg.WorkRetention,
			DeadLetter: dlq.QueueName, MaxReceiveCount: cfg.MaxReceiveCount,
		})
	}
	var buckets []string
	for _, b := range []string{cfg.ConfigBucket, cfg.StateBucket, cfg.ReportsBucket, cfg.ClaimsBucket} {
		if !slices.Contains(buckets, b) {
			buckets = append(buckets, b)
		}
	}
	for _, b := range buckets {
		r := &Bucket{Client: cl.S3, BucketName: b, Region: region}
		if b == cfg.ClaimsBucket {
			days := int32((cfg.DeadLetterRetention+24*time.Hour-1)/(24*time.Hour)) + 1
			r.Expire = append(r.Expire, Expiry{ID: "mill-claim-check", Prefix: cfg.ClaimsPrefix, Days: days})
		}
		if b == cfg.StateBucket {
			// Checkpoints of transfers no task came back for: useless once
			// S3 has aborted their uploads.
			r.Expire = append(r.Expire, Expiry{ID: "mill-transfer-checkpoints", Prefix: CheckpointPrefix, Days: DefaultAbortUploadsDays + 1})
			// Old versions of the producers' state (and of everything
			// else in the bucket) expire; the live objects stay.
			r.Expire = append(r.Expire, Expiry{ID: "mill-state-versions", NoncurrentDays: StateNoncurrentDays})
		}
		rs = append(rs, r)
	}
	if cfg.EvidenceBucket != "" {
		rs = append(rs, &Bucket{Client: cl.S3, BucketName: cfg.EvidenceBucket, Region: region, Lock: &ObjectLock{Days: cfg.EvidenceRetentionDays}})
	}
	rs = append(rs,
		&Table{Client: cl.DynamoDB, Create: dynamoauditlog.CreateTableInput(cfg.AuditTable), Timeout: cfg.TableTimeout},
		&Table{Client: cl.DynamoDB, Create: dynamolease.CreateTableInput(cfg.LeaseTable), TTL: dynamolease.TimeToLiveInput(cfg.LeaseTable), Timeout: cfg.TableTimeout},
		&Table{Client: cl.DynamoDB, Create: dynamofleet.CreateTableInput(cfg.FleetTable), TTL: dynamofleet.TimeToLiveInput(cfg.FleetTable), Timeout: cfg.TableTimeout},
	)
	if !cfg.SkipDB {
		rs = append(rs, &Database{URL: cfg.DatabaseURL})
	}
	return rs, nil
}

// The parts of the AWS clients setup uses; *sqs.Client, *s3.Client and
// *dynamodb.Client satisfy them.
type (
	SQSAPI interface {
		GetQueueUrl(context.Context, *sqs.GetQueueUrlInput, ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
		CreateQueue(context.Context, *sqs.CreateQueueInput, ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
		GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
		SetQueueAttributes(context.Context, *sqs.SetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.SetQueueAttributesOutput, error)
	}
	S3API interface {
		HeadBucket(context.Context, *s3.HeadBucketInput, ...func(*s3.Options)) (*s3.HeadBucketOutput, error)
		CreateBucket(context.Context, *s3.CreateBucketInput, ...func(*s3.Options)) (*s3.CreateBucketOutput, error)
		GetBucketVersioning(context.Context, *s3.GetBucketVersioningInput, ...func(*s3.Options)) (*s3.GetBucketVersioningOutput, error)
		PutBucketVersioning(context.Context, *s3.PutBucketVersioningInput, ...func(*s3.Options)) (*s3.PutBucketVersioningOutput, error)
		GetBucketEncryption(context.Context, *s3.GetBucketEncryptionInput, ...func(*s3.Options)) (*s3.GetBucketEncryptionOutput, error)
		PutBucketEncryption(context.Context, *s3.PutBucketEncryptionInput, ...func(*s3.Options)) (*s3.PutBucketEncryptionOutput, error)
		GetPublicAccessBlock(context.Context, *s3.GetPublicAccessBlockInput, ...func(*s3.Options)) (*s3.GetPublicAccessBlockOutput, error)
		PutPublicAccessBlock(context.Context, *s3.PutPublicAccessBlockInput, ...func(*s3.Options)) (*s3.PutPublicAccessBlockOutput, error)
		GetBucketLifecycleConfiguration(context.Context, *s3.GetBucketLifecycleConfigurationInput, ...func(*s3.Options)) (*s3.GetBucketLifecycleConfigurationOutput, error)
		PutBucketLifecycleConfiguration(context.Context, *s3.PutBucketLifecycleConfigurationInput, ...func(*s3.Options)) (*s3.PutBucketLifecycleConfigurationOutput, error)
		GetObjectLockConfiguration(context.Context, *s3.GetObjectLockConfigurationInput, ...func(*s3.Options)) (*s3.GetObjectLockConfigurationOutput, error)
		PutObjectLockConfiguration(context.Context, *s3.PutObjectLockConfigurationInput, ...func(*s3.Options)) (*s3.PutObjectLockConfigurationOutput, error)
	}
	DynamoDBAPI interface {
		dynamodb.DescribeTableAPIClient
		CreateTable(context.Context, *dynamodb.CreateTableInput, ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
		UpdateTable(context.Context, *dynamodb.UpdateTableInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error)
		DescribeTimeToLive(context.Context, *dynamodb.DescribeTimeToLiveInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
		UpdateTimeToLive(context.Context, *dynamodb.UpdateTimeToLiveInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
	}
)

var (
	_ SQSAPI      = (*sqs.Client)(nil)
	_ S3API       = (*s3.Client)(nil)
	_ DynamoDBAPI = (*dynamodb.Client)(nil)
)
