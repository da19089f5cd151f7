package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores/jsonpos"
)

// The helpers the commands share: flags defined by several commands,
// flag values, the AWS configuration and the database, prompts and files.
// Printing helpers are in output.go, the config source in configsource.go.

// awsConfig loads the SDK configuration from the default chain.
func (a *app) awsConfig(ctx context.Context) (*awsconfig.Config, error) {
	return awsconfig.Load(ctx, awsconfig.Options{Logger: a.logger, Getenv: a.getenv})
}

// databaseURLVar defines --database-url (MILL_DATABASE_URL) into p.
func databaseURLVar(fs *flag.FlagSet, p *string) { wiring.DatabaseURLVar(fs, p, "", "") }

// dbScope is the flag group of a listing of Mill's database (stats, and
// the bitlog commands through bitlogFilter): the database and the
// account, store and space whose records it lists.
type dbScope struct{ dbURL, account, store, space string }

func (s *dbScope) defineGroup(fs *flag.FlagSet, _ *app) {
	databaseURLVar(fs, &s.dbURL)
	fs.StringVar(&s.account, "account", "", "only this `account`")
	fs.StringVar(&s.store, "store", "", "only this store `id`")
	fs.StringVar(&s.space, "space", "", "only this `space`")
}

// fleetTableVar defines --fleet-table (MILL_FLEET_TABLE) into p.
func fleetTableVar(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "fleet-table", fleet.DefaultTable, "DynamoDB `table` of the fleet registry")
}

// trashRetentionVar defines --trash-retention into p.
func trashRetentionVar(fs *flag.FlagSet, p *time.Duration) {
	fs.DurationVar(p, "trash-retention", storage.DefaultRetention, "how long deleted or replaced content stays recoverable in a store bucket without versioning (whole days)")
}

// validRetention checks --trash-retention.
func validRetention(d time.Duration) error {
	if d < 24*time.Hour || d%(24*time.Hour) != 0 {
		return usagef("--trash-retention %v: want whole days (24h, 720h, …)", d)
	}
	return nil
}

// noArgs is the check of a command that takes no arguments.
func noArgs(args []string) error {
	if len(args) > 0 {
		return usagef("unexpected arguments: %q", args)
	}
	return nil
}

// propsFlag collects repeated --prop k=v.
type propsFlag map[string]string

func (p propsFlag) String() string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k+"="+p[k])
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

func (p propsFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", v)
	}
	p[k] = val
	return nil
}

// stringList collects a repeated string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// withDB checks that a database command got no arguments and a
// --database-url, opens the database and runs f on it.
func withDB(ctx context.Context, url string, args []string, f func(*milldb.DB) error) error {
	if err := noArgs(args); err != nil {
		return err
	}
	if url == "" {
		return usagef("%v", wiring.DatabaseURLRequired(""))
	}
	db, err := milldb.Open(ctx, url, milldb.Config{MaxConns: 2})
	if err != nil {
		return err
	}
	defer db.Close()
	return f(db)
}

// confirm asks question on stderr and reads y/yes from stdin.
func confirm(a *app, question string) bool {
	fmt.Fprintf(a.stderr, "%s [y/N] ", question)
	line, _ := bufio.NewReader(a.stdin).ReadString('\n')
	return slices.Contains([]string{"y", "yes"}, strings.ToLower(strings.TrimSpace(line)))
}

// operator names who runs millctl, for the pause record and the
// configuration history.
func operator() string {
	who := "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		who = u.Username
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		who += "@" + h
	}
	return who
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

// writeFileAtomic writes r to path through a temporary file and a rename.
func writeFileAtomic(path string, r io.Reader) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, r); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
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
