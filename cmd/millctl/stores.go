package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/configstore"
	"github.com/millfleet/mill/pkg/configstore/fsconfigstore"
	"github.com/millfleet/mill/pkg/configstore/s3configstore"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/setup"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/stores/jsonpos"
)

// defaultConfigBucket is the config bucket's default name.
const defaultConfigBucket = "mill-config"

// configSource is where accounts.json and the duplication policies live:
// a local directory (--config-dir) or the config bucket (--config-bucket,
// under --config-prefix).
type configSource struct {
	a              *app
	bucket, dir    *string
	prefix         *string
	cachedS3Client *s3.Client
}

// configFlags defines --config-bucket, --config-prefix and --config-dir.
func configFlags(fs *flag.FlagSet, a *app) *configSource {
	return &configSource{
		a:      a,
		bucket: fs.String("config-bucket", defaultConfigBucket, "S3 `bucket` holding accounts.json and the duplication policies"),
		prefix: fs.String("config-prefix", "", "key `prefix` of those files in the config bucket"),
		dir:    fs.String("config-dir", "", "local `directory` to use instead of the config bucket"),
	}
}

func (c *configSource) s3(ctx context.Context) (*s3.Client, error) {
	if c.cachedS3Client == nil {
		cfg, err := c.a.awsConfig(ctx)
		if err != nil {
			return nil, err
		}
		c.cachedS3Client = cfg.S3()
	}
	return c.cachedS3Client, nil
}

// where names the source for messages.
func (c *configSource) where() string {
	if *c.dir != "" {
		return *c.dir
	}
	return "s3://" + *c.bucket + "/" + *c.prefix
}

// policies returns the policy repository.
func (c *configSource) policies(ctx context.Context) (policy.Repository, error) {
	if *c.dir != "" {
		return policy.NewDir(*c.dir), nil
	}
	cl, err := c.s3(ctx)
	if err != nil {
		return nil, err
	}
	return policy.NewS3(cl, *c.bucket, *c.prefix), nil
}

// files is the versioned store of the configuration files (conditional
// writes, history) over the same source.
func (c *configSource) files(ctx context.Context) (configstore.Store, error) {
	if *c.dir != "" {
		return fsconfigstore.New(*c.dir, stores.MaxFileSize)
	}
	cl, err := c.s3(ctx)
	if err != nil {
		return nil, err
	}
	return s3configstore.New(cl, *c.bucket, *c.prefix, stores.MaxFileSize), nil
}

// registry loads accounts.json.
func (c *configSource) registry(ctx context.Context) (*stores.Registry, error) {
	if *c.dir != "" {
		return stores.LoadFile(filepath.Join(*c.dir, stores.FileName))
	}
	cl, err := c.s3(ctx)
	if err != nil {
		return nil, err
	}
	return stores.LoadS3(ctx, cl, *c.bucket, *c.prefix+stores.FileName)
}

func init() {
	register(&command{
		name:    "stores validate",
		summary: "check accounts.json (a local FILE, or the one in the config source)",
		usage: `millctl stores validate [FILE]

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
place ("would update": millctl setup adds it). Changes nothing.`,
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			src := configFlags(fs, a)
			checkBuckets := fs.Bool("buckets", false, "also check every s3 store's bucket: exists, versioned, trash expiry (needs AWS access)")
			retention := trashRetentionFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) > 1 {
					return usagef("at most one FILE")
				}
				var reg *stores.Registry
				var err error
				where := src.where()
				if len(args) == 1 {
					where = args[0]
					reg, err = stores.LoadFile(args[0])
				} else {
					reg, err = src.registry(ctx)
				}
				if err != nil {
					return printFileErrors(a, err)
				}
				fmt.Fprintf(a.stdout, "%s: ok: %s\n", where, registrySummary(reg))
				if !*checkBuckets {
					return nil
				}
				if err := validRetention(*retention); err != nil {
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
				sum, err := setup.Plan(ctx, storeBucketResources(refs, *retention), func(r setup.Result) { fmt.Fprintln(a.stdout, r) })
				if err != nil {
					return fmt.Errorf("%d of %d store buckets failed the check", sum.Failed, len(refs))
				}
				return nil
			}
		},
	})
	register(&command{
		name:    "stores put",
		summary: "validate and store accounts.json, the registry of accounts and stores",
		usage: `millctl stores put FILE|-

Validates FILE (- for stdin) as the registry of accounts and stores, exactly
as stores validate does, then checks every duplication policy in force
against it: each account listed in duplication-accounts.json with a policy
file must still be in the registry, and every store its policies name must
still be one of the account's stores. Only then is it written to the config
source as accounts.json — conditionally: if someone else changed
accounts.json since it was read here, nothing is written (run it again).
Nothing is written when any check fails. The previous version stays in the
bucket's history (or under .history/ of --config-dir).`,
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			src := configFlags(fs, a)
			return func(ctx context.Context, args []string) error {
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
				files, err := src.files(ctx)
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
				repo, err := src.policies(ctx)
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
		},
	})
	register(&command{
		name:    "stores get",
		summary: "print accounts.json from the config source",
		usage: `millctl stores get

Prints accounts.json, the registry of accounts and stores, as stored in the
config source (--config-bucket under --config-prefix, or --config-dir).`,
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			src := configFlags(fs, a)
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usagef("no arguments expected")
				}
				files, err := src.files(ctx)
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
		},
	})
	register(&command{
		name:    "stores list",
		summary: "list the accounts and stores of the registry",
		usage:   "millctl stores list\n\nPrints one line per store of every account in the registry.",
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			src := configFlags(fs, a)
			return func(ctx context.Context, args []string) error {
				if len(args) != 0 {
					return usagef("no arguments expected")
				}
				reg, err := src.registry(ctx)
				if err != nil {
					return printFileErrors(a, err)
				}
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ACCOUNT\tSTATUS\tSTORE\tPRIMARY\tKIND\tLOCATION\tREGION\tCREDENTIALS")
				for _, acct := range reg.Accounts {
					for _, s := range acct.Stores {
						loc := s.Root
						if s.Kind == "s3" {
							loc = "s3://" + s.Bucket + "/" + s.Prefix
							if s.Endpoint != "" {
								loc += " @ " + s.Endpoint
							}
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\t%s\t%s\t%s\n", acct.ID, acct.Status, s.ID, s.Primary, s.Kind, loc, dash(s.Region), storeCredentials(s))
					}
				}
				return tw.Flush()
			}
		},
	})
}

// registrySummary counts a registry's accounts and stores.
func registrySummary(reg *stores.Registry) string {
	n := 0
	for _, acct := range reg.Accounts {
		n += len(acct.Stores)
	}
	return fmt.Sprintf("%d accounts (%d active), %d stores", len(reg.Accounts), len(reg.ActiveAccounts()), n)
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

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printFileErrors prints each problem of a validation error (positioned
// file:line:col errors, possibly joined) on its own line of stderr and
// returns a one-line summary error; other errors pass through unchanged.
func printFileErrors(a *app, err error) error {
	var pe *jsonpos.Error
	if !errors.As(err, &pe) {
		return err
	}
	list := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	}
	for _, e := range list {
		fmt.Fprintln(a.stderr, e)
	}
	if len(list) == 1 {
		return errors.New("1 problem")
	}
	return fmt.Errorf("%d problems", len(list))
}

// readInput reads a configuration file, or stdin for "-", refusing more
// than max bytes (jsonpos.ErrTooLarge).
func readInput(a *app, name string, max int64) ([]byte, error) {
	if name == "-" {
		return jsonpos.ReadAll("<stdin>", a.stdin, max)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return jsonpos.ReadAll(name, f, max)
}
