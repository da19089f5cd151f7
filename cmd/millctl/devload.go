package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/millfleet/mill/internal/app/devmode"
	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/configstore"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
)

// defaultDemoBuckets prefixes the demo's store buckets.
const defaultDemoBuckets = "mill-demo-"

const devLoadUsage = `millctl dev load [flags]

Loads the demo of millctl dev into a mill set up with millctl setup: one
bucket per demo store (--demo-buckets PREFIX, then acme-1, acme-2, acme-3,
globex-1, globex-2; versioned, encrypted, public access blocked), the
registry (accounts.json) and the duplication policies in the config source,
then --items generated content items written through the audited providers
to each account's primary store, so an AUDIT task is queued for every write
and Workman duplicates them as in production (acme's photos to stores 2 and
3, its docs to 2, its scratch space ignored; every space of globex to 2).

It never overwrites configuration: a config source that already holds an
accounts.json or a policy other than the demo's is refused, and loading the
demo again (the same --demo-buckets) only adds content. See make local,
which runs it with Workman and the producers on the local emulator.`

// devLoadOptions are the options of dev load.
type devLoadOptions struct {
	contentWriter
	items  int
	seed   uint64
	prefix string
}

func (o *devLoadOptions) define(fs *flag.FlagSet, _ *app) {
	fs.IntVar(&o.items, "items", 50, "number of content `items` to write (at least 5)")
	fs.Uint64Var(&o.seed, "seed", devmode.DefaultSeed, "`seed` of the generated content")
	fs.StringVar(&o.prefix, "demo-buckets", defaultDemoBuckets, "`prefix` of the demo's store bucket names")
}

func (o *devLoadOptions) run(ctx context.Context, a *app, args []string) error {
	if err := noArgs(args); err != nil {
		return err
	}
	if o.items < devmode.MinItems {
		return usagef("--items must be at least %d", devmode.MinItems)
	}
	format, err := o.format.Parse()
	if err != nil {
		return usagef("%v", err)
	}
	reg, err := devmode.DemoRegistry(func(acct, id string, primary bool) stores.Store {
		return stores.Store{ID: id, Primary: primary, Kind: storage.KindS3, Bucket: o.prefix + acct + "-" + id}
	})
	if err != nil {
		return usagef("--demo-buckets %q: %v", o.prefix, err)
	}

	// 1. The registry and the policies, never over others.
	if err := loadDemoConfig(ctx, a, o.src, reg); err != nil {
		return err
	}

	// 2. The store buckets.
	awsCfg, err := a.awsConfig(ctx)
	if err != nil {
		return err
	}
	if err := createDemoBuckets(ctx, a, awsCfg, reg); err != nil {
		return err
	}

	// 3. The content, through the audited providers.
	return o.seedContent(ctx, a, awsCfg, reg, format)
}

// createDemoBuckets creates the bucket of every demo store.
func createDemoBuckets(ctx context.Context, a *app, awsCfg *awsconfig.Config, reg *stores.Registry) error {
	var rs []setup.Resource
	for _, acct := range reg.Accounts {
		for _, s := range acct.Stores {
			rs = append(rs, &setup.Bucket{Client: awsCfg.S3(), BucketName: s.Bucket, Region: awsCfg.AWS.Region})
		}
	}
	sum, err := setup.Apply(ctx, rs, func(r setup.Result) { fmt.Fprintln(a.stdout, r) })
	if err != nil {
		return fmt.Errorf("store buckets: %w", err)
	}
	fmt.Fprintln(a.stdout, sum)
	return nil
}

// seedContent writes --items generated items through the audited
// providers of the demo's primary stores.
func (o *devLoadOptions) seedContent(ctx context.Context, a *app, awsCfg *awsconfig.Config, reg *stores.Registry, format task.Format) error {
	q, err := openAuditQueue(ctx, a, queue.Name(o.queuePrefix, queue.KeyAudit), o.claims)
	if err != nil {
		return fmt.Errorf("open the audit queue (run millctl setup first): %w", err)
	}
	opener := wiring.NewOpener(reg, &awsCfg.AWS, awsCfg.EndpointOverride)
	sd, err := devmode.Seed(ctx, devmode.SeedConfig{Registry: reg, Open: opener.Open, Audit: q, Format: format,
		UserID: o.userID, Items: o.items, Seed: o.seed})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "content: %d items (%.1f KiB) in %d spaces written through the audited providers; their AUDIT tasks are on %s\n",
		sd.Items, float64(sd.Bytes)/1024, sd.Spaces, q.Name())
	fmt.Fprintln(a.stdout, "next: run workman to process them (audit → duplication), and the producers for sweeps and bit checks")
	return nil
}

// loadDemoConfig writes the demo's accounts.json and policies to the
// config source, unless something else is there: everything is checked
// before anything is written.
func loadDemoConfig(ctx context.Context, a *app, src *configSource, reg *stores.Registry) error {
	files, err := src.files(ctx)
	if err != nil {
		return err
	}
	repo, err := src.policies(ctx)
	if err != nil {
		return err
	}
	data, err := reg.Marshal()
	if err != nil {
		return err
	}
	notDemo := func(what string) error {
		return fmt.Errorf("%s exists and is not the demo's (a real configuration, or another --demo-buckets); dev load changes no configuration it did not write", what)
	}
	where := files.Where(stores.FileName)
	writeRegistry := false
	switch cur, err := files.Get(ctx, stores.FileName); {
	case errors.Is(err, configstore.ErrNotFound):
		writeRegistry = true
	case err != nil:
		return err
	case !bytes.Equal(cur.Data, data):
		return notDemo(where)
	}
	pols := devmode.DemoPolicies()
	for _, acct := range devmode.DemoStores {
		cur, err := repo.Policy(ctx, acct.Account)
		switch {
		case errors.Is(err, policy.ErrNotFound):
		case err != nil:
			return err
		default:
			cb, err1 := cur.Marshal()
			wb, err2 := pols[acct.Account].Marshal()
			if err := errors.Join(err1, err2); err != nil {
				return err
			}
			if !bytes.Equal(cb, wb) {
				return notDemo(policy.FileName(acct.Account))
			}
		}
	}
	if writeRegistry {
		meta := configstore.Meta{Author: operator(), Action: "millctl dev load"}
		if _, err := files.Put(ctx, stores.FileName, data, configstore.Cond{IfAbsent: true}, meta); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "registry: stored %s (%s)\n", where, registrySummary(reg))
	} else {
		fmt.Fprintf(a.stdout, "registry: %s is the demo's already\n", where)
	}
	for _, acct := range devmode.DemoStores {
		if err := repo.Put(ctx, acct.Account, pols[acct.Account]); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "policy: stored %s, %s listed in %s\n", policy.FileName(acct.Account), acct.Account, policy.AccountsFile)
	}
	return nil
}
