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

	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/s3event"
	"github.com/millfleet/mill/pkg/setup"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
)

func init() {
	register(&command{
		name:    "setup",
		summary: "create every queue, bucket and table and migrate the database (idempotent)",
		usage: `Create what Mill needs, or check that it is there: the seven SQS queues
(each work queue redriving to the dead-letter queue), the config, state and
reports buckets, the audit-log, lease and fleet tables, and the database schema.
Safe to run again: each resource is reported as created, exists or updated,
and a second run changes nothing. --dry-run prints the plan only. --alarms
also creates the CloudWatch queue-depth alarms of infra/ (see pkg/alarms).
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
policy lets S3 send to it.`,
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			var c setup.Config
			prefix := queuePrefixFlag(fs)
			dbURL := databaseURLFlag(fs)
			fs.DurationVar(&c.VisibilityTimeout, "visibility-timeout", setup.DefaultVisibilityTimeout, "visibility timeout of every queue")
			fs.DurationVar(&c.WorkRetention, "queue-retention", setup.DefaultWorkRetention, "message retention of the work queues")
			fs.DurationVar(&c.DeadLetterRetention, "dead-letter-retention", setup.DefaultDeadLetterRetention, "message retention of the dead-letter queue")
			fs.StringVar(&c.ConfigBucket, "config-bucket", setup.DefaultConfigBucket, "S3 `bucket` for accounts and duplication policies")
			fs.StringVar(&c.StateBucket, "state-bucket", setup.DefaultStateBucket, "S3 `bucket` for producer state")
			fs.StringVar(&c.ReportsBucket, "reports-bucket", setup.DefaultReportsBucket, "S3 `bucket` for bit-integrity reports")
			claims := wiring.ClaimsFlags(fs)
			fs.StringVar(&c.AuditTable, "audit-table", setup.DefaultAuditTable, "DynamoDB `table` of the audit log")
			fs.StringVar(&c.LeaseTable, "lease-table", setup.DefaultLeaseTable, "DynamoDB `table` of producer leases")
			fs.StringVar(&c.FleetTable, "fleet-table", setup.DefaultFleetTable, "DynamoDB `table` of the fleet registry (Workman heartbeats, pauses)")
			fs.DurationVar(&c.TableTimeout, "table-timeout", setup.DefaultTableTimeout, "how long to wait for a new table to become ACTIVE")
			fs.BoolVar(&c.SkipDB, "skip-db", false, "do not migrate the database")
			dryRun := fs.Bool("dry-run", false, "print what would be created or updated; change nothing")
			alarmOpts := alarmFlags(fs)
			notify := fs.Bool("store-notifications", false, "configure every registered s3 store bucket to send object events to the audit queue")
			storeBuckets := fs.Bool("store-buckets", true, "check every registered s3 store bucket: report its versioning, expire its stores' trash after --trash-retention")
			retention := trashRetentionFlag(fs)
			cfgPrefix := fs.String("config-prefix", "", "key `prefix` of accounts.json in the config bucket (for the store buckets)")
			cfgDir := fs.String("config-dir", "", "local `directory` holding accounts.json, instead of the config bucket (for the store buckets)")
			return func(ctx context.Context, args []string) error {
				if len(args) > 0 {
					return usagef("unexpected arguments: %q", args)
				}
				c.QueuePrefix, c.DatabaseURL = *prefix, *dbURL
				c.ClaimsBucket, c.ClaimsPrefix = claims.Bucket, claims.Prefix
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
				ars, err := alarmOpts.resources(awsCfg, c.QueuePrefix)
				if err != nil {
					return err
				}
				rs = append(rs, ars...)
				if *notify || *storeBuckets {
					if err := validRetention(*retention); err != nil {
						return err
					}
					src := wiring.ConfigSource{Dir: *cfgDir, Bucket: c.ConfigBucket, Prefix: *cfgPrefix}
					buckets, err := registryBuckets(ctx, awsCfg, src)
					switch {
					case errors.Is(err, errNoRegistryYet) && !*notify:
						fmt.Fprintf(a.stdout, "store buckets: %v; not checked\n", err)
					case err != nil:
						return fmt.Errorf("store buckets: %w", err)
					}
					if *storeBuckets {
						rs = append(rs, storeBucketResources(buckets, *retention)...)
					}
					if *notify {
						rs = append(rs, notificationResources(awsCfg, c, buckets)...)
					}
				}
				do := setup.Apply
				if *dryRun {
					do = setup.Plan
				}
				sum, err := do(ctx, rs, func(r setup.Result) { fmt.Fprintln(a.stdout, r) })
				fmt.Fprintln(a.stdout, sum)
				return err
			}
		},
	})
}

// trashRetentionFlag defines --trash-retention.
func trashRetentionFlag(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("trash-retention", storage.DefaultRetention, "how long deleted or replaced content stays recoverable in a store bucket without versioning (whole days)")
}

func validRetention(d time.Duration) error {
	if d < 24*time.Hour || d%(24*time.Hour) != 0 {
		return usagef("--trash-retention %v: want whole days (24h, 720h, …)", d)
	}
	return nil
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
	buckets := make([]s3event.Bucket, 0, len(refs))
	for _, b := range refs {
		buckets = append(buckets, s3event.Bucket{Name: b.name, Client: b.client})
	}
	return s3event.NotificationResources(awsCfg.SQS(), queue.Name(c.QueuePrefix, queue.KeyAudit), buckets)
}
