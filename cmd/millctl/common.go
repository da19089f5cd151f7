package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/queue"
)

// awsConfig loads the SDK configuration from the default chain.
func (a *app) awsConfig(ctx context.Context) (*awsconfig.Config, error) {
	return awsconfig.Load(ctx, awsconfig.Options{Logger: a.logger, Getenv: a.getenv})
}

// queuePrefixFlag defines --queue-prefix (MILL_QUEUE_PREFIX).
func queuePrefixFlag(fs *flag.FlagSet) *string {
	return fs.String("queue-prefix", queue.DefaultPrefix, "prefix of every queue name (the queue `prefix`)")
}

// databaseURLFlag defines --database-url (MILL_DATABASE_URL).
func databaseURLFlag(fs *flag.FlagSet) *string {
	return fs.String("database-url", "", "PostgreSQL connection `URL` (postgres://user:pass@host:port/db?sslmode=disable)")
}

// confirm asks question on stderr and reads y/yes from stdin.
func confirm(a *app, question string) bool {
	fmt.Fprintf(a.stderr, "%s [y/N] ", question)
	line, _ := bufio.NewReader(a.stdin).ReadString('\n')
	return slices.Contains([]string{"y", "yes"}, strings.ToLower(strings.TrimSpace(line)))
}
