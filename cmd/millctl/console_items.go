package main

import (
	"context"
	"flag"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/app/console"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/auditlog/dynamoauditlog"
	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/spacestats/pgspacestats"
	"github.com/millfleet/mill/pkg/storage"
)

// consoleItemOptions are the console's flags for the home, item and
// statistics pages.
type consoleItemOptions struct {
	auditTable string
	alarms     bool
}

func (o *consoleItemOptions) define(fs *flag.FlagSet) {
	fs.StringVar(&o.auditTable, "audit-table", auditlog.DefaultTable, "DynamoDB audit log `table` an item's page reads its audit events from (empty: none)")
	fs.BoolVar(&o.alarms, "alarms", true, "show Mill's CloudWatch alarms in ALARM on the home page (those millctl setup --alarms defines)")
}

// registryOpener opens a store of the registry as it is now: the registry
// is read again for each item page or restore (a store added since the
// console started opens too).
type registryOpener struct {
	src       *configSource
	base      *aws.Config
	pathStyle bool
}

func (r registryOpener) Open(ctx context.Context, account, storeID string) (storage.Provider, error) {
	reg, err := r.src.registry(ctx)
	if err != nil {
		return nil, err
	}
	return wiring.NewOpener(reg, r.base, r.pathStyle).Open(ctx, account, storeID)
}

var _ storage.Opener = registryOpener{}

// items configures the sources of the home, item and statistics pages:
// the content index and statistics in db (nil: none), the audit log, the
// stores, the audit queue restores are audited on, the alarms.
func (o *consoleItemOptions) items(ctx context.Context, src *configSource, awsCfg *awsconfig.Config, s3c *s3.Client,
	claims *wiring.Claims, prefix string, db *milldb.DB, cfg *console.Config) (where []string) {
	if db != nil {
		cfg.Index, cfg.Stats = pgcontentindex.New(db.Pool), pgspacestats.New(db.Pool)
		where = append(where, "content index and statistics in PostgreSQL")
	}
	if o.auditTable != "" {
		cfg.Audit = dynamoauditlog.New(awsCfg.DynamoDB(), o.auditTable)
		where = append(where, "audit log "+o.auditTable)
	}
	if o.alarms {
		cfg.Alarms = console.CloudWatchAlarms{Client: awsCfg.CloudWatch(), Prefix: prefix}
	}
	cfg.Stores = registryOpener{src: src, base: &awsCfg.AWS, pathStyle: awsCfg.EndpointOverride}
	q, err := claims.Open(ctx, awsCfg.SQS(), s3c, queue.Name(prefix, queue.KeyAudit), sqsqueue.Config{})
	if err != nil { // the item pages offer no restore; the rest works
		cfg.Logger.Error("console: the audit queue cannot be opened: no restores", "err", err)
		return where
	}
	cfg.AuditQueue = q
	return where
}
