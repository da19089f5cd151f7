package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
)

const setupUsage = `Create what Mill needs, or check that it is there: the seven SQS queues
(each work queue redriving to the dead-letter queue), the config, state and
reports buckets, the audit-log, lease and fleet tables, and the database schema.
Safe to run again: each resource is reported as created, exists or updated,
and a second run changes nothing. --dry-run prints the plan only. --alarms
also creates the CloudWatch queue-depth alarms of infra/ (see internal/ops/alarms).
Every s3 store bucket of the registry (accounts.json in the config bucket, or
--config-dir; skipped with a note while there is none) is checked too: setup
never creates a store bucket nor changes its versioning, but it adds a
lifecycle rule expiring each store's trash prefix (P.mill-trash/, where stores
in a bucket without versioning keep what Mill deletes or replaces) after
--trash-retention, and notes a bucket that is not versioned or whose
noncurrent versions are never expired or expire before the retention.
--store-buckets=false skips this. --store-notifications also makes every s3
store bucket send its object created/removed events to the audit queue, so
content written straight to a bucket is audited too; the audit queue's
policy lets S3 send to it. --evidence-bucket also creates the evidence log's
bucket with S3 Object Lock in compliance mode and a default retention of
--evidence-retention-days (no version can be deleted before; in production
prefer infra/evidence.yaml, a stack of its own).`

// setupOptions are the options of setup.
type setupOptions struct {
	c                         setup.Config
	prefix, dbURL             string
	claims                    *wiring.Claims
	dryRun, notify, storeBkts bool
	alarms                    *alarmOptions
	retention                 time.Duration
	cfgPrefix, cfgDir         string
	evidenceDays              int
}

func (o *setupOptions) define(fs *flag.FlagSet, _ *app) {
	c := &o.c
	wiring.QueuePrefixVar(fs, &o.prefix)
	databaseURLVar(fs, &o.dbURL)
	fs.DurationVar(&c.VisibilityTimeout, "visibility-timeout", setup.DefaultVisibilityTimeout, "visibility timeout of every queue")
	fs.DurationVar(&c.WorkRetention, "queue-retention", setup.DefaultWorkRetention, "message retention of the work queues")
	fs.DurationVar(&c.DeadLetterRetention, "dead-letter-retention", setup.DefaultDeadLetterRetention, "message retention of the dead-letter queue")
	fs.StringVar(&c.ConfigBucket, "config-bucket", setup.DefaultConfigBucket, "S3 `bucket` for accounts and duplication policies")
	fs.StringVar(&c.StateBucket, "state-bucket", setup.DefaultStateBucket, "S3 `bucket` for producer state")
	fs.StringVar(&c.ReportsBucket, "reports-bucket", setup.DefaultReportsBucket, "S3 `bucket` for bit-integrity reports")
	o.claims = wiring.ClaimsFlags(fs)
	fs.StringVar(&c.AuditTable, "audit-table", setup.DefaultAuditTable, "DynamoDB `table` of the audit log")
	fs.StringVar(&c.LeaseTable, "lease-table", setup.DefaultLeaseTable, "DynamoDB `table` of producer leases")
	fs.StringVar(&c.FleetTable, "fleet-table", setup.DefaultFleetTable, "DynamoDB `table` of the fleet registry (Workman heartbeats, pauses)")
	fs.DurationVar(&c.TableTimeout, "table-timeout", setup.DefaultTableTimeout, "how long to wait for a new table to become ACTIVE")
	fs.BoolVar(&c.SkipDB, "skip-db", false, "do not migrate the database")
	fs.StringVar(&c.EvidenceBucket, "evidence-bucket", "", "also create this S3 `bucket` for the evidence log, with Object Lock in compliance mode (empty: none)")
	fs.IntVar(&o.evidenceDays, "evidence-retention-days", setup.DefaultEvidenceRetentionDays, fmt.Sprintf("default Object Lock retention of the evidence bucket, in `days` (1 to %d); compliance mode: no version can be deleted before", setup.MaxEvidenceRetentionDays))
	fs.BoolVar(&o.dryRun, "dry-run", false, "print what would be created or updated; change nothing")
	o.alarms = alarmFlags(fs)
	fs.BoolVar(&o.notify, "store-notifications", false, "configure every registered s3 store bucket to send object events to the audit queue")
	fs.BoolVar(&o.storeBkts, "store-buckets", true, "check every registered s3 store bucket: report its versioning, expire its stores' trash after --trash-retention")
	trashRetentionVar(fs, &o.retention)
	fs.StringVar(&o.cfgPrefix, "config-prefix", "", "key `prefix` of accounts.json in the config bucket (for the store buckets)")
	fs.StringVar(&o.cfgDir, "config-dir", "", "local `directory` holding accounts.json, instead of the config bucket (for the store buckets)")
}

func (o *setupOptions) run(ctx context.Context, a *app, args []string) error {
	if err := noArgs(args); err != nil {
		return err
	}
	c := o.c
	c.QueuePrefix, c.DatabaseURL = o.prefix, o.dbURL
	c.ClaimsBucket, c.ClaimsPrefix = o.claims.Bucket, o.claims.Prefix
	if o.evidenceDays < 1 || o.evidenceDays > setup.MaxEvidenceRetentionDays {
		return usagef("--evidence-retention-days %d: want 1 to %d", o.evidenceDays, setup.MaxEvidenceRetentionDays)
	}
	c.EvidenceRetentionDays = int32(o.evidenceDays)
	if !c.SkipDB && c.DatabaseURL == "" {
		return usagef("--database-url (MILL_DATABASE_URL) is required, or --skip-db")
	}
	awsCfg, err := a.awsConfig(ctx)
	if err != nil {
		return err
	}
	rs, err := setup.Resources(c, setup.Clients{SQS: awsCfg.SQS(), S3: awsCfg.S3(), DynamoDB: awsCfg.DynamoDB(), Region: awsCfg.AWS.Region})
	if err != nil {
		return usagef("%v", err)
	}
	ars, err := o.alarms.resources(awsCfg, c.QueuePrefix)
	if err != nil {
		return err
	}
	rs = append(rs, ars...)
	if o.notify || o.storeBkts {
		srs, err := o.storeResources(ctx, a, awsCfg, c)
		if err != nil {
			return err
		}
		rs = append(rs, srs...)
	}
	do := setup.Apply
	if o.dryRun {
		do = setup.Plan
	}
	sum, err := do(ctx, rs, func(r setup.Result) { fmt.Fprintln(a.stdout, r) })
	fmt.Fprintln(a.stdout, sum)
	return err
}

// storeResources are the resources of the registry's s3 store buckets:
// their trash expiry (--store-buckets) and their event notifications
// (--store-notifications).
func (o *setupOptions) storeResources(ctx context.Context, a *app, awsCfg *awsconfig.Config, c setup.Config) ([]setup.Resource, error) {
	if err := validRetention(o.retention); err != nil {
		return nil, err
	}
	src := wiring.ConfigSource{Dir: o.cfgDir, Bucket: c.ConfigBucket, Prefix: o.cfgPrefix}
	buckets, err := registryBuckets(ctx, awsCfg, src)
	switch {
	case errors.Is(err, errNoRegistryYet) && !o.notify:
		fmt.Fprintf(a.stdout, "store buckets: %v; not checked\n", err)
	case err != nil:
		return nil, fmt.Errorf("store buckets: %w", err)
	}
	var rs []setup.Resource
	if o.storeBkts {
		rs = append(rs, storeBucketResources(buckets, o.retention)...)
	}
	if o.notify {
		rs = append(rs, notificationResources(awsCfg, c, buckets)...)
	}
	return rs, nil
}

// errNoRegistryYet: the registry is not there yet (a first setup).
var errNoRegistryYet = errors.New("no store registry yet")

// storeBucketRef is an s3 bucket holding stores of the registry, with the
// client of its first store (region, endpoint, role) and every store's
// key prefix in it.
type storeBucketRef struct {
	name     string
	client   *s3.Client
	prefixes []string
}

// registryBuckets reads the store registry and returns its s3 buckets.
func registryBuckets(ctx context.Context, awsCfg *awsconfig.Config, src wiring.ConfigSource) ([]storeBucketRef, error) {
	reg, err := src.Registry(ctx, awsCfg.S3())
	if errors.Is(err, stores.ErrNoRegistry) || errorCodeIs(err, "NoSuchBucket") {
		return nil, fmt.Errorf("%w (%s)", errNoRegistryYet, src)
	}
	if err != nil {
		return nil, err
	}
	return storeBuckets(reg, wiring.NewOpener(reg, &awsCfg.AWS, awsCfg.EndpointOverride))
}

// storeBuckets groups the s3 stores of reg by bucket.
func storeBuckets(reg *stores.Registry, opener *stores.Opener) ([]storeBucketRef, error) {
	var out []storeBucketRef
	index := map[string]int{}
	for _, acct := range reg.Accounts {
		for _, st := range acct.Stores {
			if st.Kind != storage.KindS3 {
				continue
			}
			i, seen := index[st.Bucket]
			if !seen {
				cl, err := opener.S3Client(acct.ID, st.ID)
				if err != nil {
					return nil, err
				}
				i = len(out)
				index[st.Bucket] = i
				out = append(out, storeBucketRef{name: st.Bucket, client: cl})
			}
			if !slices.Contains(out[i].prefixes, st.Prefix) {
				out[i].prefixes = append(out[i].prefixes, st.Prefix)
			}
		}
	}
	return out, nil
}

// storeBucketResources returns the setup resource of each store bucket.
func storeBucketResources(refs []storeBucketRef, retention time.Duration) []setup.Resource {
	rs := make([]setup.Resource, 0, len(refs))
	for _, b := range refs {
		rs = append(rs, &setup.StoreBucket{Client: b.client, BucketName: b.name, Prefixes: b.prefixes, Retention: retention})
	}
	return rs
}

func errorCodeIs(err error, code string) bool {
	var api smithy.APIError
	return errors.As(err, &api) && api.ErrorCode() == code
}

// notificationResources returns the setup resources that point every s3
// store bucket's object events at the audit queue. Each bucket is
// configured with its store's own client (region, endpoint, role).
func notificationResources(awsCfg *awsconfig.Config, c setup.Config, refs []storeBucketRef) []setup.Resource {
	buckets := make([]setup.EventBucket, 0, len(refs))
	for _, b := range refs {
		buckets = append(buckets, setup.EventBucket{Name: b.name, Client: b.client})
	}
	return setup.NotificationResources(awsCfg.SQS(), queue.Name(c.QueuePrefix, queue.KeyAudit), buckets)
}
