package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/migrate"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/reportstore"
	"github.com/millfleet/mill/pkg/reportstore/fsreportstore"
	"github.com/millfleet/mill/pkg/reportstore/s3reportstore"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/audited"
	"github.com/millfleet/mill/pkg/storage/s3store"
)

const migrateDuraCloudUsage = `millctl migrate duracloud ACCOUNT FROM TO [SPACE...]

Migrates the content of store FROM of ACCOUNT, a DuraCloud store (an s3 store
with "layout": "duracloud" in the registry), to store TO, a Mill store of the
same account: the SPACEs given, else every space of FROM, one space after the
other. Each item is read once, its MD5 and CRC-64/NVME computed over the bytes
read; the destination verifies DuraCloud's recorded MD5 as it writes (an item
whose bytes do not match it is reported corrupt and not copied); the copy is
read back and its MD5 and CRC-64/NVME must equal the source's. Every write goes
through the audited provider as user mill-migrate naming FROM as its source,
so the audit log records each copy and the evidence appender makes it a
replication event.

Resumable: an item already at TO with DuraCloud's MD5 and size is skipped, so a
second run copies nothing twice. An item TO holds with other content is
reported and never overwritten.

The report (JSON and CSV, every item) goes to the reports store under
migrations/ACCOUNT/FROM-TO/; a summary is printed. Exit status 1 when any item
was not copied or skipped.`

// migrateDuraCloudOptions are the options of migrate duracloud.
type migrateDuraCloudOptions struct {
	configOptions
	queuePrefix string
	format      *wiring.WireFormat
	claims      *wiring.Claims
	reports     *wiring.Reports
	reportsDir  string
	workers     int
	transfer    *storage.Transfer
}

func (o *migrateDuraCloudOptions) define(fs *flag.FlagSet, _ *app) {
	wiring.QueuePrefixVar(fs, &o.queuePrefix)
	o.format = wiring.WireFormatFlag(fs)
	o.claims = wiring.ClaimsFlags(fs)
	o.reports = wiring.ReportsFlags(fs)
	fs.StringVar(&o.reportsDir, "reports-dir", "", "local `directory` of the reports, instead of --reports-bucket")
	fs.IntVar(&o.workers, "workers", migrate.DefaultWorkers, "items migrated at once")
	o.transfer = wiring.TransferFlags(fs)
}

func (o *migrateDuraCloudOptions) run(ctx context.Context, a *app, args []string) error {
	if len(args) < 3 {
		return usagef("want ACCOUNT FROM TO [SPACE...]")
	}
	account, from, to, spaces := args[0], args[1], args[2], args[3:]
	if o.workers < 1 || o.workers > 256 {
		return usagef("--workers must be 1 to 256, got %d", o.workers)
	}
	if from == to {
		return usagef("FROM and TO are the same store %s", from)
	}
	for _, s := range spaces {
		if err := storage.ValidateSpaceID(s); err != nil {
			return usagef("SPACE %q: %v", s, err)
		}
	}
	if o.transfer.Streams < 1 || o.transfer.PartSize < 5<<20 {
		return usagef("--transfer-streams must be at least 1 and --transfer-part-size at least 5 MiB")
	}
	transfer := *o.transfer
	format, err := o.format.Parse()
	if err != nil {
		return usagef("%v", err)
	}
	reg, err := o.src.registry(ctx)
	if err != nil {
		return printFileErrors(a, err)
	}
	fromStore, err := reg.Store(account, from)
	if err != nil {
		return err
	}
	toStore, err := reg.Store(account, to)
	if err != nil {
		return err
	}
	if fromStore.Layout != s3store.LayoutDuraCloud {
		return usagef("store %s of %s is not a DuraCloud store (an s3 store with \"layout\": %q)", from, account, s3store.LayoutDuraCloud)
	}
	if toStore.Layout == s3store.LayoutDuraCloud {
		return usagef("store %s of %s is a DuraCloud store: migrate to a Mill store", to, account)
	}
	var base *aws.Config
	pathStyle := false
	var reports reportstore.Store
	if o.reportsDir != "" {
		reports = fsreportstore.Store{Dir: o.reportsDir}
	}
	cfg, err := a.awsConfig(ctx)
	if err != nil {
		return err
	}
	base, pathStyle = &cfg.AWS, cfg.EndpointOverride
	if reports == nil {
		if o.reports.Bucket == "" {
			return usagef("--reports-bucket or --reports-dir is required: the migration's report goes there")
		}
		reports = s3reportstore.Store{Client: cfg.S3(), Bucket: o.reports.Bucket, Prefix: o.reports.Prefix}
	}
	opener := wiring.NewOpener(reg, base, pathStyle)
	src, err := opener.Open(ctx, account, from)
	if err != nil {
		return err
	}
	dstRaw, err := opener.Open(ctx, account, to)
	if err != nil {
		return err
	}
	q, err := openAuditQueue(ctx, a, queue.Name(o.queuePrefix, queue.KeyAudit), o.claims)
	if err != nil {
		return fmt.Errorf("open the audit queue: %w", err)
	}
	dst, err := audited.New(dstRaw, q, audited.Config{Account: account, StoreID: to, StoreKind: toStore.Kind,
		SourceStoreID: from, UserID: migrate.UserID, Format: format})
	if err != nil {
		return err
	}
	return runMigration(ctx, a, migrationRun{account: account, from: from, to: to, reports: reports,
		cfg: migrate.Config{Source: src, Dest: dst, Spaces: spaces, Workers: o.workers, Transfer: transfer}})
}

// migrationRun is one migration and where its report goes.
type migrationRun struct {
	account, from, to string
	reports           reportstore.Store
	cfg               migrate.Config
}

// runMigration migrates, writing the CSV rows to a temporary file, then
// stores the CSV and JSON reports and prints the summary.
func runMigration(ctx context.Context, a *app, m migrationRun) error {
	start := time.Now().UTC()
	tmp, err := os.CreateTemp("", "mill-migration-*.csv")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	rows, err := migrate.NewCSV(tmp)
	if err != nil {
		return err
	}
	sum := migrate.NewSummary(start)
	var werr error
	merr := migrate.Migrate(ctx, m.cfg, func(it migrate.Item) {
		sum.Add(it)
		if err := rows.Write(it); err != nil && werr == nil {
			werr = err
		}
	})
	sum.Finished = time.Now().UTC()
	if err := rows.Flush(); err != nil && werr == nil {
		werr = err
	}
	if werr != nil {
		return fmt.Errorf("write the CSV report: %w", werr)
	}
	rep := migrate.Report{Account: m.account, From: m.from, To: m.to, Summary: sum}
	if merr != nil {
		rep.Error = merr.Error()
	}
	// An interrupted migration (SIGINT) still stores what it did.
	ctx = context.WithoutCancel(ctx)
	key := path.Join("migrations", m.account, m.from+"-"+m.to, start.Format("20060102T150405Z"))
	size, err := tmp.Seek(0, 1)
	if err != nil {
		return err
	}
	if _, err := tmp.Seek(0, 0); err != nil {
		return err
	}
	if rep.CSV, err = m.reports.Put(ctx, key+".csv", tmp, size); err != nil {
		return fmt.Errorf("store the CSV report: %w", err)
	}
	body, err := rep.JSON()
	if err != nil {
		return err
	}
	loc, err := m.reports.Put(ctx, key+".json", bytes.NewReader(body), int64(len(body)))
	if err != nil {
		return fmt.Errorf("store the JSON report: %w", err)
	}
	rep.Text(a.stdout)
	fmt.Fprintf(a.stdout, "report: %s\n        %s\n", loc, rep.CSV)
	if merr != nil {
		return merr
	}
	if !sum.Clean() {
		var n []string
		for _, o := range migrate.Outcomes {
			if c := sum.Items[o]; c > 0 && o != migrate.Copied && o != migrate.Skipped {
				n = append(n, fmt.Sprintf("%d %s", c, o))
			}
		}
		return fmt.Errorf("migration incomplete: %s (see the report)", strings.Join(n, ", "))
	}
	return nil
}
