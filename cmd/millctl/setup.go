package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/s3event"
	"github.com/millfleet/mill/pkg/setup"
	"github.com/millfleet/mill/pkg/storage"
)

func init() {
	register(&command{
		name:    "setup",
		summary: "create every queue, bucket and table and migrate the database (idempotent)",
		usage: `Create what Mill needs, or check that it is there: the seven SQS queues
(each work queue redriving to the dead-letter queue), the config, state and
reports buckets, the audit-log and lease tables, and the database schema.
Safe to run again: each resource is reported as created, exists or updated,
and a second run changes nothing. --dry-run prints the plan only. --alarms
also creates the CloudWatch queue-depth alarms of infra/ (see pkg/alarms).
--store-notifications also makes every s3 store bucket of the registry
(accounts.json in the config bucket, or --config-dir) send its object
created/removed events to the audit queue, so content written straight to a
bucket is audited too; the audit queue's policy lets S3 send to it.`,
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
			fs.DurationVar(&c.TableTimeout, "table-timeout", setup.DefaultTableTimeout, "how long to wait for a new table to become ACTIVE")
			fs.BoolVar(&c.SkipDB, "skip-db", false, "do not migrate the database")
			dryRun := fs.Bool("dry-run", false, "print what would be created or updated; change nothing")
			alarmOpts := alarmFlags(fs)
			notify := fs.Bool("store-notifications", false, "configure every registered s3 store bucket to send object events to the audit queue")
			cfgPrefix := fs.String("config-prefix", "", "key `prefix` of accounts.json in the config bucket (with --store-notifications)")
			cfgDir := fs.String("config-dir", "", "local `directory` holding accounts.json, instead of the config bucket (with --store-notifications)")
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
				if *notify {
					nrs, err := notificationResources(ctx, awsCfg, c, *cfgDir, *cfgPrefix)
					if err != nil {
						return err
					}
					rs = append(rs, nrs...)
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

// notificationResources reads the store registry and returns the setup
// resources that point every s3 store bucket's object events at the audit
// queue. Each bucket is configured with its store's own client (region,
// endpoint, role).
func notificationResources(ctx context.Context, awsCfg *awsconfig.Config, c setup.Config, dir, prefix string) ([]setup.Resource, error) {
	reg, err := wiring.ConfigSource{Dir: dir, Bucket: c.ConfigBucket, Prefix: prefix}.Registry(ctx, awsCfg.S3())
	if err != nil {
		return nil, fmt.Errorf("--store-notifications: %w", err)
	}
	opener := wiring.NewOpener(reg, &awsCfg.AWS, awsCfg.EndpointOverride)
	var buckets []s3event.Bucket
	seen := map[string]bool{}
	for _, acct := range reg.Accounts {
		for _, st := range acct.Stores {
			if st.Kind != storage.KindS3 || seen[st.Bucket] {
				continue
			}
			seen[st.Bucket] = true
			cl, err := opener.S3Client(acct.ID, st.ID)
			if err != nil {
				return nil, err
			}
			buckets = append(buckets, s3event.Bucket{Name: st.Bucket, Client: cl})
		}
	}
	return s3event.NotificationResources(awsCfg.SQS(), queue.Name(c.QueuePrefix, queue.KeyAudit), buckets), nil
}
