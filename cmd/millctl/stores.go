package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/configstore"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/stores"
)

const storesValidateUsage = `millctl stores validate [FILE]

Checks the account and store registry: JSON syntax, fields, one primary store
per active account, unique store ids, no credentials, and unique stores: no
two stores of any accounts share or nest a location (one bucket with equal or
nested prefixes, one fs root at or in another; roots absolute, not /). Errors are printed as
file:line:col: message; the exit code is 1 when there are any.

--buckets also checks each s3 store's bucket (with the store's own region,
endpoint and role): that it exists, whether it is versioned (without
versioning the stores keep a copy of what Mill deletes or replaces under
their trash prefix), whether its noncurrent versions expire before
--trash-retention or never, and whether the rule expiring the trash is in
place ("would update": millctl setup adds it). Changes nothing.`

// storesValidateOptions are the options of stores validate.
type storesValidateOptions struct {
	configOptions
	checkBuckets bool
	retention    time.Duration
}

func (o *storesValidateOptions) define(fs *flag.FlagSet, _ *app) {
	fs.BoolVar(&o.checkBuckets, "buckets", false, "also check every s3 store's bucket: exists, versioned, trash expiry (needs AWS access)")
	trashRetentionVar(fs, &o.retention)
}

func (o *storesValidateOptions) run(ctx context.Context, a *app, args []string) error {
	if len(args) > 1 {
		return usagef("at most one FILE")
	}
	var reg *stores.Registry
	var err error
	where := o.src.String()
	if len(args) == 1 {
		where = args[0]
		reg, err = stores.LoadFile(args[0])
	} else {
		reg, err = o.src.registry(ctx)
	}
	if err != nil {
		return printFileErrors(a, err)
	}
	fmt.Fprintf(a.stdout, "%s: ok: %s\n", where, registrySummary(reg))
	if !o.checkBuckets {
		return nil
	}
	return o.checkStoreBuckets(ctx, a, reg)
}

// checkStoreBuckets is --buckets: setup's plan for the store buckets.
func (o *storesValidateOptions) checkStoreBuckets(ctx context.Context, a *app, reg *stores.Registry) error {
	if err := validRetention(o.retention); err != nil {
		return err
	}
	awsCfg, err := a.awsConfig(ctx)
	if err != nil {
		return err
	}
	refs, err := storeBuckets(reg, wiring.NewOpener(reg, &awsCfg.AWS, awsCfg.EndpointOverride))
	if err != nil {
		return err
	}
	sum, err := setup.Plan(ctx, storeBucketResources(refs, o.retention), func(r setup.Result) { fmt.Fprintln(a.stdout, r) })
	if err != nil {
		return fmt.Errorf("%d of %d store buckets failed the check", sum.Failed, len(refs))
	}
	return nil
}

const storesPutUsage = `millctl stores put FILE|-

Validates FILE (- for stdin) as the registry of accounts and stores, exactly
as stores validate does, then checks every duplication policy in force
against it: each account listed in duplication-accounts.json with a policy
file must still be in the registry, and every store its policies name must
still be one of the account's stores. Only then is it written to the config
source as accounts.json — conditionally: if someone else changed
accounts.json since it was read here, nothing is written (run it again).
Nothing is written when any check fails. The previous version stays in the
bucket's history (or under .history/ of --config-dir).`

// storesPutOptions are the options of stores put.
type storesPutOptions struct{ configOptions }

func (o *storesPutOptions) run(ctx context.Context, a *app, args []string) error {
	if len(args) != 1 {
		return usagef("want FILE (or - for stdin)")
	}
	name := args[0]
	data, err := readInput(a, name, stores.MaxFileSize)
	if err != nil {
		return err
	}
	if name == "-" {
		name = "<stdin>"
	}
	reg, err := stores.Parse(name, data)
	if err != nil {
		return printFileErrors(a, err)
	}
	files, err := o.src.files(ctx)
	if err != nil {
		return err
	}
	cond := configstore.Cond{IfAbsent: true}
	switch cur, err := files.Get(ctx, stores.FileName); {
	case err == nil:
		cond = configstore.Cond{IfMatch: cur.Version.ETag}
	case !errors.Is(err, configstore.ErrNotFound):
		return err
	}
	repo, err := o.src.policies(ctx)
	if err != nil {
		return err
	}
	if err := policiesAgainst(ctx, a, repo, reg); err != nil {
		return err
	}
	if _, err := files.Put(ctx, stores.FileName, data, cond, configstore.Meta{Author: operator(), Action: "millctl stores put"}); err != nil {
		if errors.Is(err, configstore.ErrConflict) {
			return fmt.Errorf("%s changed while this ran; nothing written, run it again: %w", files.Where(stores.FileName), err)
		}
		return err
	}
	fmt.Fprintf(a.stdout, "stored %s (%s)\n", files.Where(stores.FileName), registrySummary(reg))
	return nil
}

const storesGetUsage = `millctl stores get

Prints accounts.json, the registry of accounts and stores, as stored in the
config source (--config-bucket under --config-prefix, or --config-dir).`

// storesGetOptions are the options of stores get.
type storesGetOptions struct{ configOptions }

func (o *storesGetOptions) run(ctx context.Context, a *app, args []string) error {
	if len(args) != 0 {
		return usagef("no arguments expected")
	}
	files, err := o.src.files(ctx)
	if err != nil {
		return err
	}
	f, err := files.Get(ctx, stores.FileName)
	if errors.Is(err, configstore.ErrNotFound) {
		return fmt.Errorf("%s does not exist: load one with millctl stores put FILE", files.Where(stores.FileName))
	}
	if err != nil {
		return err
	}
	_, err = a.stdout.Write(f.Data)
	return err
}

const storesListUsage = "millctl stores list\n\nPrints one line per store of every account in the registry, with its fixity\ntarget (the store's \"fixity\" object, defaults filled in)."

// storesListOptions are the options of stores list.
type storesListOptions struct{ configOptions }

func (o *storesListOptions) run(ctx context.Context, a *app, args []string) error {
	if len(args) != 0 {
		return usagef("no arguments expected")
	}
	reg, err := o.src.registry(ctx)
	if err != nil {
		return printFileErrors(a, err)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACCOUNT\tSTATUS\tSTORE\tPRIMARY\tKIND\tLOCATION\tREGION\tCREDENTIALS\tFIXITY TARGET")
	for _, acct := range reg.Accounts {
		for _, s := range acct.Stores {
			loc := s.Root
			if s.Kind == "s3" {
				loc = "s3://" + s.Bucket + "/" + s.Prefix
				if s.Layout != "" {
					// DuraCloud's layout: the spaces are buckets of their own.
					loc += " + s3://" + strings.ToLower(s.AccountPrefix) + ".<space>/"
				}
				if s.Endpoint != "" {
					loc += " @ " + s.Endpoint
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\t%s\t%s\t%s\t%s\n", acct.ID, acct.Status, s.ID, s.Primary, s.Kind, loc, dash(s.Region),
				storeCredentials(s), s.FixityTarget())
		}
	}
	return tw.Flush()
}

// policiesAgainst checks every duplication policy in force against reg:
// its account must be registered and its stores the account's. Each
// problem is printed on stderr; the error counts them.
func policiesAgainst(ctx context.Context, a *app, repo policy.Reader, reg *stores.Registry) error {
	accts, err := repo.Accounts(ctx)
	if errors.Is(err, policy.ErrNotFound) {
		return nil // no duplication-accounts.json: nothing is duplicated yet
	}
	if err != nil {
		return printFileErrors(a, err)
	}
	problems := 0
	for _, acct := range accts {
		p, err := policy.InForce(ctx, repo, acct)
		switch {
		case errors.Is(err, policy.ErrNotFound):
			continue // listed without a policy file: not in force
		case err != nil:
			return printFileErrors(a, err)
		case reg.Account(acct) == nil:
			fmt.Fprintf(a.stderr, "%s: account %q has a duplication policy in force but is not in the new registry\n", policy.FileName(acct), acct)
			problems++
		default:
			if err := p.Check(reg.Known(acct)); err != nil {
				fmt.Fprintf(a.stderr, "%s: %v\n", policy.FileName(acct), err)
				problems++
			}
		}
	}
	if problems > 0 {
		return fmt.Errorf("%d policies in force do not fit the new registry; nothing written (change or delete them first: millctl policy put|delete)", problems)
	}
	return nil
}

// storeCredentials says which credentials reach an s3 store.
func storeCredentials(s stores.Store) string {
	switch {
	case s.Kind != "s3":
		return "-"
	case s.RoleARN != "":
		return "role " + s.RoleARN
	case s.Profile != "":
		return "profile " + s.Profile
	case s.AmbientCredentials:
		return "default chain (ambientCredentials)"
	}
	return "default chain"
}
