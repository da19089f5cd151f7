package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/millfleet/mill/pkg/setup"
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
also creates the CloudWatch queue-depth alarms of infra/ (see pkg/alarms).`,
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
			fs.StringVar(&c.AuditTable, "audit-table", setup.DefaultAuditTable, "DynamoDB `table` of the audit log")
			fs.StringVar(&c.LeaseTable, "lease-table", setup.DefaultLeaseTable, "DynamoDB `table` of producer leases")
			fs.DurationVar(&c.TableTimeout, "table-timeout", setup.DefaultTableTimeout, "how long to wait for a new table to become ACTIVE")
			fs.BoolVar(&c.SkipDB, "skip-db", false, "do not migrate the database")
			dryRun := fs.Bool("dry-run", false, "print what would be created or updated; change nothing")
			alarmOpts := alarmFlags(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) > 0 {
					return usagef("unexpected arguments: %q", args)
				}
				c.QueuePrefix, c.DatabaseURL = *prefix, *dbURL
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
