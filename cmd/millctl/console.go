package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/app/console"
	"github.com/millfleet/mill/internal/app/console/auth"
	"github.com/millfleet/mill/internal/ops/queuestats"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/changelog"
	"github.com/millfleet/mill/pkg/changelog/fschangelog"
	"github.com/millfleet/mill/pkg/changelog/s3changelog"
	"github.com/millfleet/mill/pkg/deadletter"
	"github.com/millfleet/mill/pkg/evidence"
	"github.com/millfleet/mill/pkg/fleet/dynamofleet"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/reportstore/fsreportstore"
	"github.com/millfleet/mill/pkg/reportstore/s3reportstore"
	"github.com/millfleet/mill/pkg/runs/pgruns"
)

// defaultChangeLogPrefix is where the change log lives in the config
// bucket when --change-log is not given.
const defaultChangeLogPrefix = "console-changes/"

const consoleUsage = `millctl console [flags]

Serves the Mill Console on --listen: the duplication policy editor (checked
with the rules of millctl policy validate, saved with optimistic
concurrency, every version in the history), the seven queues live with a
depth chart of the last hour, the dead letters (filtered, shown, redriven
and purged as millctl dlq does; the console scans the queue at most every
--dlq-rescan while someone looks), the bit-integrity runs, reports and
results (with --database-url), and the fleet with its pauses (--fleet-table;
empty: no fleet page). Its home page says whether everything is safe; with
--database-url it also finds items (the content index), restores their
versions (audited, as millctl content restore) and shows the statistics
and the producer runs in progress; with --evidence-log, an item's events
and their inclusion proofs. Every change is logged with its user and recorded in
the change log (--change-log; default the config bucket under
console-changes/).

Authentication (--auth):
  alb     behind an AWS Application Load Balancer that authenticates users
          with OIDC: the x-amzn-oidc-data header is verified (--alb-arn,
          --oidc-issuer, --alb-key-url) and roles come from a claim
          (--oidc-role-claim; --oidc-admins, --oidc-operators, --oidc-viewers)
  tokens  a file of hashed tokens (--tokens-file); mint one with
          millctl console token
  none    no authentication, every user an admin: only on a loopback
          --listen address, answering loopback host names only (refused
          otherwise)

Host names (--allowed-host): a request naming another host in its Host
header gets 421 Misdirected Request, and a change must come from a page of
an allowed host (its Origin or Referer). Default: under --auth none,
localhost, 127.0.0.1, [::1] and the --listen address, with its port, so a
web page whose name is rebound to 127.0.0.1 reads and changes nothing;
under alb and tokens, any host (the credentials, not the address,
authenticate) — name the console's host names there too, as users'
browsers show them.

Roles: viewer (reads), operator (also redrives and purges dead letters,
pauses and resumes), admin (also edits policies).`

// consoleOptions are the options of console.
type consoleOptions struct {
	configOptions
	// cfg holds the console's settings that are flags (--refresh,
	// --secure-cookies, ...); run fills in the rest.
	cfg                        console.Config
	listen, mode, tokensFile   string
	allowedHosts               stringList
	alb                        auth.ALBConfig
	admins, operators, viewers string
	changeLog                  string
	prefix, dbURL              string
	reports                    *wiring.Reports
	reportsDir                 string
	dlqHold                    time.Duration
	claims                     *wiring.Claims
	fleetTable                 string
	items                      consoleItemOptions
	evidenceLog, evidenceKey   string
}

func (o *consoleOptions) define(fs *flag.FlagSet, _ *app) {
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8080", "`address` to serve on")
	fs.StringVar(&o.mode, "auth", "none", "authentication `mode`: alb, tokens or none (loopback only)")
	fs.Var(&o.allowedHosts, "allowed-host", "`host` or host:port the console answers to, as browsers send it (repeatable, or comma-separated; default: under --auth none the loopback names with the --listen port, otherwise any)")
	fs.StringVar(&o.tokensFile, "tokens-file", "", "tokens `file` (--auth tokens)")
	o.defineALB(fs)
	fs.StringVar(&o.cfg.LogoutURL, "logout-url", "", "`URL` of the identity provider's sign-out page, linked after signing out (--auth alb)")
	fs.BoolVar(&o.cfg.SecureCookies, "secure-cookies", false, "mark the login cookie Secure (set it when users reach the console over HTTPS)")
	fs.StringVar(&o.changeLog, "change-log", "", "where changes are recorded: s3://`BUCKET/PREFIX` or a directory (default: the config bucket under "+defaultChangeLogPrefix+", or CONFIG_DIR/console-changes)")
	wiring.QueuePrefixVar(fs, &o.prefix)
	databaseURLVar(fs, &o.dbURL)
	o.reports = wiring.ReportsFlags(fs)
	fs.StringVar(&o.reportsDir, "reports-dir", "", "local `directory` of the reports, instead of --reports-bucket")
	fs.DurationVar(&o.cfg.Refresh, "refresh", console.DefaultRefresh, "how often live pages refresh (`duration`)")
	fs.DurationVar(&o.cfg.SampleEvery, "sample-every", console.DefaultSampleEvery, "how often the queues are sampled for the depth charts (`duration`)")
	fs.DurationVar(&o.cfg.PolicyRefresh, "policy-refresh", console.DefaultPolicyRefresh, "Workman's and the producers' policy cache (`duration`), told to users after a save")
	fs.DurationVar(&o.cfg.DeadLetterRescan, "dlq-rescan", console.DefaultDeadLetterRescan, "scan the dead-letter queue again when its page is viewed this long (`duration`) after the last scan")
	fs.IntVar(&o.cfg.DeadLetterMax, "dlq-max", console.DefaultDeadLetterMax, "keep at most `n` dead letters in the console's index")
	fs.DurationVar(&o.dlqHold, "dlq-hold", console.DefaultDeadLetterHold, "how long a scan keeps the dead letters it looked at invisible (`duration`; extended while it runs, released at its end)")
	o.claims = wiring.ClaimsFlags(fs)
	fleetTableVar(fs, &o.fleetTable)
	o.items.define(fs)
	fs.StringVar(&o.evidenceLog, "evidence-log", "", "the evidence log whose events and proofs item pages show: a `directory`, or s3://BUCKET/PREFIX (as millctl evidence --log)")
	fs.StringVar(&o.evidenceKey, "evidence-key", "", "`file` holding the evidence log's note verifier key (as millctl evidence --key)")
}

// evidence opens --evidence-log with --evidence-key; nil when neither is
// given.
func (o *consoleOptions) evidence(ctx context.Context, a *app) (*console.EvidenceLog, error) {
	if o.evidenceLog == "" || o.evidenceKey == "" { // run refused one without the other
		return nil, nil
	}
	b, err := evidenceBlobs(ctx, a, o.evidenceLog)
	if err != nil {
		return nil, err
	}
	v, err := evidence.LoadVerifier(o.evidenceKey)
	if err != nil {
		return nil, err
	}
	return &console.EvidenceLog{Blobs: b, Verifier: v}, nil
}

// defineALB defines the flags of --auth alb.
func (o *consoleOptions) defineALB(fs *flag.FlagSet) {
	fs.StringVar(&o.alb.ARN, "alb-arn", "", "`ARN` of the load balancer that signs x-amzn-oidc-data (--auth alb)")
	fs.StringVar(&o.alb.KeyURL, "alb-key-url", auth.DefaultALBKeyURL, "`URL` of the load balancer's public keys; {region} is the ARN's region, the key id is appended")
	fs.StringVar(&o.alb.Issuer, "oidc-issuer", "", "OIDC `issuer` of the load balancer's listener (--auth alb)")
	fs.StringVar(&o.alb.ClientID, "oidc-client-id", "", "OIDC client `id` of the listener; when set, tokens of another client are refused")
	fs.StringVar(&o.alb.UserClaim, "oidc-user-claim", "email", "`claim` naming the user (sub when missing)")
	fs.StringVar(&o.alb.RoleClaim, "oidc-role-claim", "groups", "`claim` whose values map to roles")
	fs.StringVar(&o.admins, "oidc-admins", "", "comma-separated role-claim `values` that make a user an admin (* for everyone)")
	fs.StringVar(&o.operators, "oidc-operators", "", "comma-separated role-claim `values` that make a user an operator")
	fs.StringVar(&o.viewers, "oidc-viewers", "", "comma-separated role-claim `values` that make a user a viewer")
}

func (o *consoleOptions) run(ctx context.Context, a *app, args []string) error {
	if err := noArgs(args); err != nil {
		return err
	}
	if o.dlqHold < time.Second || o.dlqHold > queue.MaxVisibility {
		return usagef("--dlq-hold %v: want 1s to %v", o.dlqHold, queue.MaxVisibility)
	}
	if (o.evidenceLog == "") != (o.evidenceKey == "") {
		return usagef("--evidence-log and --evidence-key go together")
	}
	authn, hosts, err := o.access()
	if err != nil {
		return err
	}
	awsCfg, err := a.awsConfig(ctx)
	if err != nil {
		return err
	}
	s3c := awsCfg.S3(func(opts *s3.Options) { opts.UsePathStyle = opts.UsePathStyle || awsCfg.EndpointOverride })
	cfg, where, err := o.config(ctx, a, awsCfg, s3c)
	if err != nil {
		return err
	}
	cfg.Auth, cfg.AllowedHosts = authn, hosts
	if o.fleetTable != "" {
		cfg.Fleet = dynamofleet.New(awsCfg.DynamoDB(), o.fleetTable, nil)
		cfg.Queues.WithFleet(cfg.Fleet)
		where = append(where, "fleet registry "+o.fleetTable)
	}
	var db *milldb.DB
	if o.dbURL != "" {
		if db, err = milldb.Open(ctx, o.dbURL, milldb.Config{MaxConns: 4}); err != nil {
			return err
		}
		defer db.Close()
		cfg.BitLog = pgbitlog.New(db.Pool)
		cfg.Runs = pgruns.New(db.Pool)
		where = append(where, "bit log and producer runs in PostgreSQL")
	}
	where = append(where, o.items.items(ctx, o.src, awsCfg, s3c, o.claims, o.prefix, db, &cfg)...)
	if cfg.Evidence, err = o.evidence(ctx, a); err != nil {
		return err
	}
	if cfg.Evidence != nil {
		where = append(where, "evidence log "+o.evidenceLog)
	}
	if o.reportsDir != "" {
		cfg.Reports = fsreportstore.Store{Dir: o.reportsDir}
	} else if o.reports.Bucket != "" {
		cfg.Reports = s3reportstore.Store{Client: s3c, Bucket: o.reports.Bucket, Prefix: o.reports.Prefix}
	}
	cfg.Where = strings.Join(where, " · ")
	return o.serve(ctx, a, cfg)
}

// access builds the authenticator of --auth and checks --listen and
// --allowed-host against it.
func (o *consoleOptions) access() (auth.Authenticator, []string, error) {
	alb := o.alb
	alb.Roles = map[auth.Role][]string{
		auth.RoleAdmin: splitList(o.admins), auth.RoleOperator: splitList(o.operators), auth.RoleViewer: splitList(o.viewers)}
	authn, err := consoleAuth(o.mode, o.tokensFile, alb)
	if err != nil {
		return nil, nil, err
	}
	if err := console.CheckListen(o.listen, authn); err != nil {
		return nil, nil, err
	}
	hosts, err := console.ParseAllowedHosts(o.allowedHosts...)
	if err != nil {
		return nil, nil, usagef("--allowed-host: %v", err)
	}
	if err := console.CheckAllowedHosts(hosts, authn); err != nil {
		return nil, nil, usagef("--allowed-host: %v", err)
	}
	return authn, hosts, nil
}

// config is the console's configuration: the config files, the change
// log, the queues and the dead letters, and where they are.
func (o *consoleOptions) config(ctx context.Context, a *app, awsCfg *awsconfig.Config, s3c *s3.Client) (console.Config, []string, error) {
	files, err := o.src.Files(s3c, 0)
	if err != nil {
		return console.Config{}, nil, err
	}
	changes, err := openChangeLog(o.changeLog, s3c, o.src.Bucket, o.src.Prefix, o.src.Dir)
	if err != nil {
		return console.Config{}, nil, err
	}
	sqsc := awsCfg.SQS()
	queues := queuestats.New(o.prefix, func(ctx context.Context, _, name string) (queue.Queue, error) {
		return sqsqueue.Open(ctx, sqsc, name, sqsqueue.Config{})
	}, queuestats.CloudWatchAges{Client: awsCfg.CloudWatch()})
	dlq, err := o.claims.DeadLetters(ctx, sqsc, s3c, "", deadletter.Config{Prefix: o.prefix, Hold: o.dlqHold, Logger: a.logger})
	if err != nil { // the page says so; the rest of the console works
		a.logger.Error("console: the dead-letter queue cannot be read", "err", err)
	}
	cfg := o.cfg
	cfg.Files, cfg.Changes, cfg.Queues, cfg.DeadLetters, cfg.Logger = files, changes, queues, dlq, a.logger
	return cfg, []string{"config " + files.Where(""), "queues " + o.prefix + "*"}, nil
}

// serve serves the console on --listen until ctx ends.
func (o *consoleOptions) serve(ctx context.Context, a *app, cfg console.Config) error {
	srv, err := console.New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "Mill Console on http://%s (auth %s; answers %s)\n", ln.Addr(), cfg.Auth.Mode(), srv.Hosts(ln.Addr()))
	return srv.Serve(ctx, ln)
}

const consoleTokenUsage = `millctl console token --user NAME --role viewer|operator|admin [--tokens-file FILE]

Prints a new random token on stdout — give it to the user; it is shown only
once. With --tokens-file the line holding the token's SHA-256 (never the
token) is appended to FILE (created with mode 0600); without, the line is
printed on stderr to add by hand. Remove a line to revoke its token: the
console notices within seconds.`

// consoleTokenOptions are the options of console token.
type consoleTokenOptions struct{ user, role, file string }

func (o *consoleTokenOptions) define(fs *flag.FlagSet, _ *app) {
	fs.StringVar(&o.user, "user", "", "the user's `name` (shown in pages and the change log)")
	fs.StringVar(&o.role, "role", "viewer", "the user's `role`: viewer, operator or admin")
	fs.StringVar(&o.file, "tokens-file", "", "tokens `file` to append the line to")
}

func (o *consoleTokenOptions) run(_ context.Context, a *app, args []string) error {
	if err := noArgs(args); err != nil {
		return err
	}
	r, err := auth.ParseRole(o.role)
	if err != nil {
		return usagef("%v", err)
	}
	tok := auth.NewToken()
	line, err := auth.TokenLine(o.user, r, tok)
	if err != nil {
		return usagef("%v", err)
	}
	if o.file == "" {
		fmt.Fprintf(a.stderr, "add this line to the tokens file:\n%s\n", line)
	} else if err := appendLine(o.file, line); err != nil {
		return err
	} else {
		fmt.Fprintf(a.stderr, "added %s (%s) to %s\n", o.user, r, o.file)
	}
	fmt.Fprintln(a.stdout, tok)
	return nil
}

// consoleAuth builds the authenticator of --auth.
func consoleAuth(mode, tokensFile string, alb auth.ALBConfig) (auth.Authenticator, error) {
	switch mode {
	case "none":
		return auth.Anonymous{Role: auth.RoleAdmin}, nil
	case "tokens":
		if tokensFile == "" {
			return nil, usagef("--auth tokens needs --tokens-file")
		}
		return auth.NewTokens(tokensFile)
	case "alb":
		return auth.NewALB(alb)
	}
	return nil, usagef("--auth %q: want alb, tokens or none", mode)
}

// openChangeLog opens --change-log, or its default next to the
// configuration.
func openChangeLog(where string, s3c *s3.Client, bucket, prefix, dir string) (changelog.Log, error) {
	switch {
	case strings.HasPrefix(where, "s3://"):
		b, p, _ := strings.Cut(strings.TrimPrefix(where, "s3://"), "/")
		if b == "" {
			return nil, usagef("--change-log %q: want s3://BUCKET/PREFIX", where)
		}
		if p != "" && !strings.HasSuffix(p, "/") {
			p += "/"
		}
		return s3changelog.New(s3c, b, p), nil
	case where != "":
		return fschangelog.New(where)
	case dir != "":
		return fschangelog.New(filepath.Join(dir, "console-changes"))
	}
	return s3changelog.New(s3c, bucket, prefix+defaultChangeLogPrefix), nil
}
