package wiring

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/millfleet/mill/pkg/auditlog/dynamoauditlog"
	"github.com/millfleet/mill/pkg/reportstore/s3reportstore"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/duradb"
	"github.com/millfleet/mill/pkg/duradb/mysqlduradb"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/notify"
	"github.com/millfleet/mill/pkg/notify/snsnotify"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/pricing"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/runs/pgruns"
	"github.com/millfleet/mill/pkg/spacestats/pgspacestats"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/s3store"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/telemetry"
	"github.com/millfleet/mill/pkg/workman"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/noop"
)

// AWSConfig says where the AWS dependencies live. Every name has the default
// `millctl setup` creates.
type AWSConfig struct {
	// AWS is the loaded SDK configuration (required).
	AWS *awsconfig.Config
	// SQSOptions are applied to the SQS client (e.g. a request meter).
	SQSOptions []func(*sqs.Options)
	// Claims is the claim check put around every queue (nil: none), and
	// its Tracing the queues' tracing.
	Claims *Claims
	// Tracing traces the database's queries (the SDK's calls are traced
	// through AWS's configuration: telemetry.Tracing.AWS).
	Tracing *telemetry.Tracing
	// QueuePrefix names the queues (default queue.DefaultPrefix);
	// QueueNames overrides the name of a key.
	QueuePrefix string
	QueueNames  map[string]string
	// Config is where accounts.json and the policy files are: a local
	// directory, or the config bucket (default setup.DefaultConfigBucket)
	// under a prefix.
	Config ConfigSource
	// PolicyRefresh is how long policies are cached (default
	// policy.DefaultRefresh).
	PolicyRefresh time.Duration
	// AuditTable is the DynamoDB audit log table (default
	// auditlog.DefaultTable).
	AuditTable string
	// DatabaseURL of PostgreSQL: content index and bit log (required).
	DatabaseURL string
	// Database tunes the pool.
	Database milldb.Config
	// ReportsBucket (default setup.DefaultReportsBucket) and ReportsPrefix say
	// where bit-integrity reports go.
	ReportsBucket string
	ReportsPrefix string
	// CheckpointBucket (the state bucket; "" keeps no checkpoints) and
	// CheckpointPrefix say where long transfers keep their progress;
	// Transfer, ResumeMinSize and CheckpointEvery are Deps'.
	CheckpointBucket string
	CheckpointPrefix string
	Transfer         storage.Transfer
	ResumeMinSize    int64
	CheckpointEvery  int64

	// DuraCloudDB, when set, is the MySQL DSN of DuraCloud's mill
	// database (Deps.DuraCloudDB; opened and migrated by mysqlduradb).
	DuraCloudDB string

	// NotifyTopicARN, when set, is the SNS topic operators' notifications
	// are published to (snsnotify.Notifier); otherwise they are logged.
	NotifyTopicARN string
	// ReportAdminSpace: see Deps.ReportAdminSpace.
	ReportAdminSpace bool
	// Prices: see Deps.Prices.
	Prices *pricing.Table
	// DupRestoreDays: see Deps.DupRestoreDays.
	DupRestoreDays int

	// Types are the task types that will be served (default Types). When
	// only NOOP is, nothing but the queues is opened: no registry,
	// policies, audit log or database.
	Types []task.Type

	// Agent: see Deps.Agent.
	Agent bitlog.Agent

	Format       task.Format
	RecheckDelay time.Duration
	Noop         noop.Config
	Clock        clock.Clock
	Logger       *slog.Logger
}

// AWS opens the production dependencies: SQS queues for the seven keys,
// the store registry and cached policies (config bucket or directory), the
// DynamoDB audit log, the PostgreSQL content index, bit log and statistics
// history (milldb) and
// the S3 reports bucket. close releases the database pool; call it after the
// processors are done.
func AWS(ctx context.Context, cfg AWSConfig) (d *Deps, close func() error, err error) {
	var errs []error
	if cfg.AWS == nil {
		errs = append(errs, errors.New("wiring: AWSConfig.AWS is required"))
	}
	if len(cfg.Types) == 0 {
		cfg.Types = Types
	}
	storageNeeded := NeedsStorage(cfg.Types)
	if storageNeeded && cfg.DatabaseURL == "" {
		errs = append(errs, errors.New("wiring: a database URL is required (content index and bit log)"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	if cfg.QueuePrefix == "" {
		cfg.QueuePrefix = queue.DefaultPrefix
	}
	if cfg.Config.Bucket == "" {
		cfg.Config.Bucket = setup.DefaultConfigBucket
	}
	if cfg.AuditTable == "" {
		cfg.AuditTable = auditlog.DefaultTable
	}
	if cfg.ReportsBucket == "" {
		cfg.ReportsBucket = setup.DefaultReportsBucket
	}
	aws := cfg.AWS
	s3c := aws.S3(func(o *s3.Options) { o.UsePathStyle = o.UsePathStyle || aws.EndpointOverride })

	sqsc := aws.SQS(cfg.SQSOptions...)
	qs := Queues{}
	for _, k := range queue.AllKeys {
		name := queue.Name(cfg.QueuePrefix, k)
		if n := cfg.QueueNames[k]; n != "" {
			name = n
		}
		q, err := cfg.Claims.Open(ctx, sqsc, s3c, name, sqsqueue.Config{Clock: cfg.Clock, Logger: cfg.Logger})
		if err != nil {
			errs = append(errs, fmt.Errorf("wiring: open queue %s: %w", name, err))
			continue
		}
		qs[k] = q
	}

	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	if !storageNeeded {
		d = &Deps{Logger: cfg.Logger, Clock: cfg.Clock, Queues: qs, Format: cfg.Format, Noop: cfg.Noop}
		return d, func() error { return nil }, nil
	}

	src := cfg.Config
	reg, err := src.Registry(ctx, s3c)
	if err != nil {
		errs = append(errs, fmt.Errorf("wiring: %w", err))
	}
	pols := src.Policies(s3c)
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	opener := NewOpener(reg, &aws.AWS, aws.EndpointOverride, aws.LimitS3)

	notifier, err := Notifier(aws, cfg.NotifyTopicARN, cfg.Logger)
	if err != nil {
		return nil, nil, fmt.Errorf("wiring: %w", err)
	}
	dbc := cfg.Database
	if dbc.Tracer == nil {
		dbc.Tracer = cfg.Tracing.PGX()
	}
	db, err := milldb.Open(ctx, cfg.DatabaseURL, dbc)
	if err != nil {
		return nil, nil, fmt.Errorf("wiring: database: %w", err)
	}
	d = &Deps{
		Logger: cfg.Logger, Clock: cfg.Clock, Queues: qs, Stores: opener,
		Policies: policy.NewCache(pols, policy.CacheConfig{Refresh: cfg.PolicyRefresh, Clock: cfg.Clock, Logger: cfg.Logger}),
		AuditLog: dynamoauditlog.New(aws.DynamoDB(), cfg.AuditTable),
		Index:    pgcontentindex.New(db.Pool),
		BitLog:   pgbitlog.New(db.Pool),
		Stats:    pgspacestats.New(db.Pool),
		Runs:     pgruns.New(db.Pool),
		Reports:  s3reportstore.Store{Client: s3c, Bucket: cfg.ReportsBucket, Prefix: cfg.ReportsPrefix},
		Notifier: notifier, ReportAdminSpace: cfg.ReportAdminSpace, Prices: cfg.Prices,
		DupRestoreDays: cfg.DupRestoreDays,
		Format:         cfg.Format, RecheckDelay: cfg.RecheckDelay, Noop: cfg.Noop,
		Transfer: cfg.Transfer, ResumeMinSize: cfg.ResumeMinSize, CheckpointEvery: cfg.CheckpointEvery,
		Agent: cfg.Agent,
	}
	ddb := aws.DynamoDB()
	d.Probes = map[string]workman.Probe{
		processors.DependencyPostgres: db.Pool.Ping,
		"dynamodb": func(ctx context.Context) error {
			_, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &cfg.AuditTable})
			return err
		},
	}
	if cfg.CheckpointBucket != "" {
		d.Checkpoints = s3store.NewCheckpoints(s3c, cfg.CheckpointBucket, cfg.CheckpointPrefix)
	}
	if cfg.DuraCloudDB == "" {
		return d, func() error { db.Close(); return nil }, nil
	}
	mdb, err := mysqlduradb.Open(ctx, cfg.DuraCloudDB)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("wiring: DuraCloud's mill database: %w", err)
	}
	d.DuraCloudDB = mdb
	d.Probes[duradb.DependencyMySQL] = mdb.Ping
	return d, func() error { mdb.Close(); db.Close(); return nil }, nil
}

// NotifyFlag defines --notify-topic-arn (MILL_NOTIFY_TOPIC_ARN) on fs.
func NotifyFlag(fs *flag.FlagSet) *string {
	return fs.String("notify-topic-arn", "", "SNS topic `ARN` operators' notifications are published to (empty: they are logged)")
}

// Notifier returns the notifier of a topic ARN: snsnotify.Notifier on the topic,
// or notify.Log with logger when the ARN is empty.
func Notifier(aws *awsconfig.Config, topicARN string, logger *slog.Logger) (notify.Notifier, error) {
	if topicARN == "" {
		return notify.Log{Logger: logger}, nil
	}
	return snsnotify.New(aws.SNS(), topicARN)
}
