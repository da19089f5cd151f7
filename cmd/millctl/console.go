package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/console"
	"github.com/millfleet/mill/internal/console/auth"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/changelog"
	"github.com/millfleet/mill/pkg/changelog/fschangelog"
	"github.com/millfleet/mill/pkg/changelog/s3changelog"
	"github.com/millfleet/mill/pkg/configstore"
	"github.com/millfleet/mill/pkg/configstore/fsconfigstore"
	"github.com/millfleet/mill/pkg/configstore/s3configstore"
	"github.com/millfleet/mill/pkg/deadletter"
	"github.com/millfleet/mill/pkg/fleet/dynamofleet"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/queuestats"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/reportstore/fsreportstore"
	"github.com/millfleet/mill/pkg/reportstore/s3reportstore"
)

// defaultChangeLogPrefix is where the change log lives in the config
// bucket when --change-log is not given.
const defaultChangeLogPrefix = "console-changes/"

func init() {
	register(&command{
		name:    "console",
		summary: "serve the Mill Console: policies, queues, dead letters, bit integrity, fleet, in a browser",
		usage: `millctl console [flags]

Serves the Mill Console on --listen: the duplication policy editor (checked
with the rules of millctl policy validate, saved with optimistic
concurrency, every version in the history), the seven queues live with a
depth chart of the last hour, the dead letters (filtered, shown, redriven
and purged as millctl dlq does; the console scans the queue at most every
--dlq-rescan while someone looks), the bit-integrity runs, reports and
results (with --database-url), and the fleet with its pauses (--fleet-table;
empty: no fleet page). Every change is logged with its user and recorded in
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
pauses and resumes), admin (also edits policies).`,
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			src := configFlags(fs, a)
			listen := fs.String("listen", "127.0.0.1:8080", "`address` to serve on")
			mode := fs.String("auth", "none", "authentication `mode`: alb, tokens or none (loopback only)")
			var allowedHosts stringList
			fs.Var(&allowedHosts, "allowed-host", "`host` or host:port the console answers to, as browsers send it (repeatable, or comma-separated; default: under --auth none the loopback names with the --listen port, otherwise any)")
			tokensFile := fs.String("tokens-file", "", "tokens `file` (--auth tokens)")
			albARN := fs.String("alb-arn", "", "`ARN` of the load balancer that signs x-amzn-oidc-data (--auth alb)")
			albKeyURL := fs.String("alb-key-url", auth.DefaultALBKeyURL, "`URL` of the load balancer's public keys; {region} is the ARN's region, the key id is appended")
			issuer := fs.String("oidc-issuer", "", "OIDC `issuer` of the load balancer's listener (--auth alb)")
			clientID := fs.String("oidc-client-id", "", "OIDC client `id` of the listener; when set, tokens of another client are refused")
			userClaim := fs.String("oidc-user-claim", "email", "`claim` naming the user (sub when missing)")
			roleClaim := fs.String("oidc-role-claim", "groups", "`claim` whose values map to roles")
			admins := fs.String("oidc-admins", "", "comma-separated role-claim `values` that make a user an admin (* for everyone)")
			operators := fs.String("oidc-operators", "", "comma-separated role-claim `values` that make a user an operator")
			viewers := fs.String("oidc-viewers", "", "comma-separated role-claim `values` that make a user a viewer")
			logoutURL := fs.String("logout-url", "", "`URL` of the identity provider's sign-out page, linked after signing out (--auth alb)")
			secure := fs.Bool("secure-cookies", false, "mark the login cookie Secure (set it when users reach the console over HTTPS)")
			changeLog := fs.String("change-log", "", "where changes are recorded: s3://`BUCKET/PREFIX` or a directory (default: the config bucket under "+defaultChangeLogPrefix+", or CONFIG_DIR/console-changes)")
			prefix := queuePrefixFlag(fs)
			dbURL := databaseURLFlag(fs)
			reportsBucket := fs.String("reports-bucket", wiring.DefaultReportsBucket, "S3 `bucket` for bit-integrity reports")
			reportsPrefix := fs.String("reports-prefix", "", "key `prefix` of the reports in --reports-bucket")
			reportsDir := fs.String("reports-dir", "", "local `directory` of the reports, instead of --reports-bucket")
			refresh := fs.Duration("refresh", console.DefaultRefresh, "how often live pages refresh (`duration`)")
			sampleEvery := fs.Duration("sample-every", console.DefaultSampleEvery, "how often the queues are sampled for the depth charts (`duration`)")
			policyRefresh := fs.Duration("policy-refresh", console.DefaultPolicyRefresh, "Workman's and the producers' policy cache (`duration`), told to users after a save")
			dlqRescan := fs.Duration("dlq-rescan", console.DefaultDeadLetterRescan, "scan the dead-letter queue again when its page is viewed this long (`duration`) after the last scan")
			dlqMax := fs.Int("dlq-max", console.DefaultDeadLetterMax, "keep at most `n` dead letters in the console's index")
			dlqHold := fs.Duration("dlq-hold", console.DefaultDeadLetterHold, "how long a scan keeps the dead letters it looked at invisible (`duration`; extended while it runs, released at its end)")
			claims := wiring.ClaimsFlags(fs)
			fleetTable := fleetTableFlag(fs)
			return func(ctx context.Context, args []string) error {
				if len(args) > 0 {
					return usagef("unexpected arguments: %q", args)
				}
				if *dlqHold < time.Second || *dlqHold > queue.MaxVisibility {
					return usagef("--dlq-hold %v: want 1s to %v", *dlqHold, queue.MaxVisibility)
				}
				authn, err := consoleAuth(*mode, *tokensFile, auth.ALBConfig{
					ARN: *albARN, KeyURL: *albKeyURL, Issuer: *issuer, ClientID: *clientID,
					UserClaim: *userClaim, RoleClaim: *roleClaim, Roles: map[auth.Role][]string{
						auth.RoleAdmin: splitList(*admins), auth.RoleOperator: splitList(*operators), auth.RoleViewer: splitList(*viewers)},
				})
				if err != nil {
					return err
				}
				if err := console.CheckListen(*listen, authn); err != nil {
					return err
				}
				hosts, err := console.ParseAllowedHosts(allowedHosts...)
				if err != nil {
					return usagef("--allowed-host: %v", err)
				}
				if err := console.CheckAllowedHosts(hosts, authn); err != nil {
					return usagef("--allowed-host: %v", err)
				}
				awsCfg, err := a.awsConfig(ctx)
				if err != nil {
					return err
				}
				s3c := awsCfg.S3(func(o *s3.Options) { o.UsePathStyle = o.UsePathStyle || awsCfg.EndpointOverride })
				var files configstore.Store
				if *src.dir != "" {
					if files, err = fsconfigstore.New(*src.dir, 0); err != nil {
						return err
					}
				} else {
					files = s3configstore.New(s3c, *src.bucket, *src.prefix, 0)
				}
				changes, err := openChangeLog(*changeLog, s3c, *src.bucket, *src.prefix, *src.dir)
				if err != nil {
					return err
				}
				sqsc := awsCfg.SQS()
				queues := queuestats.New(*prefix, func(ctx context.Context, _, name string) (queue.Queue, error) {
					return sqsqueue.Open(ctx, sqsc, name, sqsqueue.Config{})
				}, queuestats.CloudWatchAges{Client: awsCfg.CloudWatch()})
				dlq, err := claims.DeadLetters(ctx, sqsc, s3c, "", deadletter.Config{Prefix: *prefix, Hold: *dlqHold, Logger: a.logger})
				if err != nil { // the page says so; the rest of the console works
					a.logger.Error("console: the dead-letter queue cannot be read", "err", err)
				}
				cfg := console.Config{
					Auth: authn, AllowedHosts: hosts, Files: files, Changes: changes, Queues: queues, DeadLetters: dlq,
					DeadLetterRescan: *dlqRescan, DeadLetterMax: *dlqMax,
					Refresh: *refresh, SampleEvery: *sampleEvery, PolicyRefresh: *policyRefresh,
					SecureCookies: *secure, LogoutURL: *logoutURL, Logger: a.logger,
				}
				where := []string{"config " + files.Where(""), "queues " + *prefix + "*"}
				if *fleetTable != "" {
					cfg.Fleet = dynamofleet.New(awsCfg.DynamoDB(), *fleetTable, nil)
					queues.WithFleet(cfg.Fleet)
					where = append(where, "fleet registry "+*fleetTable)
				}
				if *dbURL != "" {
					db, err := milldb.Open(ctx, *dbURL, milldb.Config{MaxConns: 4})
					if err != nil {
						return err
					}
					defer db.Close()
					cfg.BitLog = milldb.NewBitLog(db.Pool)
					where = append(where, "bit log in PostgreSQL")
				}
				if *reportsDir != "" {
					cfg.Reports = fsreportstore.Store{Dir: *reportsDir}
				} else if *reportsBucket != "" {
					cfg.Reports = s3reportstore.Store{Client: s3c, Bucket: *reportsBucket, Prefix: *reportsPrefix}
				}
				cfg.Where = strings.Join(where, " · ")
				srv, err := console.New(cfg)
				if err != nil {
					return err
				}
				ln, err := net.Listen("tcp", *listen)
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "Mill Console on http://%s (auth %s; answers %s)\n", ln.Addr(), authn.Mode(), srv.Hosts(ln.Addr()))
				return srv.Serve(ctx, ln)
			}
		},
	})
	register(&command{
		name:    "console token",
		summary: "mint a console token for a user and role (--auth tokens)",
		usage: `millctl console token --user NAME --role viewer|operator|admin [--tokens-file FILE]

Prints a new random token on stdout — give it to the user; it is shown only
once. With --tokens-file the line holding the token's SHA-256 (never the
token) is appended to FILE (created with mode 0600); without, the line is
printed on stderr to add by hand. Remove a line to revoke its token: the
console notices within seconds.`,
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			user := fs.String("user", "", "the user's `name` (shown in pages and the change log)")
			role := fs.String("role", "viewer", "the user's `role`: viewer, operator or admin")
			file := fs.String("tokens-file", "", "tokens `file` to append the line to")
			return func(ctx context.Context, args []string) error {
				if len(args) > 0 {
					return usagef("unexpected arguments: %q", args)
				}
				r, err := auth.ParseRole(*role)
				if err != nil {
					return usagef("%v", err)
				}
				tok := auth.NewToken()
				line, err := auth.TokenLine(*user, r, tok)
				if err != nil {
					return usagef("%v", err)
				}
				if *file == "" {
					fmt.Fprintf(a.stderr, "add this line to the tokens file:\n%s\n", line)
				} else if err := appendLine(*file, line); err != nil {
					return err
				} else {
					fmt.Fprintf(a.stderr, "added %s (%s) to %s\n", *user, r, *file)
				}
				fmt.Fprintln(a.stdout, tok)
				return nil
			}
		},
	})
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

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
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

// appendLine appends one line to a file, creating it with mode 0600.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, werr := fmt.Fprintln(f, line)
	return errors.Join(werr, f.Sync(), f.Close())
}
