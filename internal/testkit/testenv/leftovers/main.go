// Command leftovers runs a test command (make test runs go test under it)
// and fails when the run left something behind on the local services:
//
//	go run ./internal/testkit/testenv/leftovers go test -race -count=1 ./...
//
// It tags the run (testenv.RunVar, so every testenv.Prefix and
// testenv.Schema name carries the tag), lists the S3 buckets, SQS queues,
// DynamoDB tables, CloudWatch alarms, CloudFormation stacks and PostgreSQL
// schemas before and after the command, and reports as leftovers every
// resource still named with the run's tag, and every one made during the
// run under a name that is no test's (a default name such as mill-state).
// On a shared emulator another user's resource made meanwhile under a
// default name is reported too; on CI the services are the run's own.
//
// Exit status: the command's when it failed, else 1 when something was
// left, else 0. When the command is interrupted nothing is checked.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/awsconfig"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: leftovers COMMAND [ARG…]")
		os.Exit(2)
	}
	os.Exit(run(os.Args[1:]))
}

func run(argv []string) int {
	var b [2]byte
	_, _ = rand.Read(b[:])
	tag := hex.EncodeToString(b[:])
	before, err := list()
	if err != nil {
		fmt.Fprintln(os.Stderr, "leftovers:", wiring.Explain(err))
		return 1
	}

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), testenv.RunVar+"="+tag)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// A terminal's Ctrl-C reaches the command too; this waits for it.
	signal.Ignore(os.Interrupt, syscall.SIGTERM)
	runErr := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(runErr, &exit) && !exit.Exited():
		return 1 // killed by a signal: its cleanups did not run
	case runErr != nil && exit == nil:
		fmt.Fprintln(os.Stderr, "leftovers:", runErr)
		return 1
	}

	after, err := list()
	if err != nil {
		fmt.Fprintln(os.Stderr, "leftovers:", wiring.Explain(err))
		return 1
	}
	left := leftovers(before, after, tag)
	for _, r := range left {
		fmt.Fprintf(os.Stderr, "leftovers: %s %s\n", r.kind, r.name)
	}
	if len(left) > 0 {
		fmt.Fprintf(os.Stderr, "leftovers: the run (tag %s) left %d resources on the local services: "+
			"a test must remove what it creates (testenv.Cleanup*), under names from testenv.Prefix\n", tag, len(left))
	}
	switch {
	case exit != nil:
		return exit.ExitCode()
	case len(left) > 0:
		return 1
	}
	return 0
}

type resource struct{ kind, name string }

// testName matches the names testenv gives: "t" or "t_" then the run's
// tag (if any) and ten hex digits, or the real-AWS prefix.
var testName = regexp.MustCompile(`^(t_?[0-9a-f]{10}([0-9a-f]{4})?([-_]|$)|` + testenv.RealAWSPrefix + `)`)

// leftovers returns the resources of after named with the run's tag, and
// those not in before whose names are no test's.
func leftovers(before, after []resource, tag string) []resource {
	ours := regexp.MustCompile(`^t_?` + regexp.QuoteMeta(tag) + `[0-9a-f]{10}([-_]|$)`)
	var left []resource
	for _, r := range after {
		if ours.MatchString(r.name) || !slices.Contains(before, r) && !testName.MatchString(r.name) {
			left = append(left, r)
		}
	}
	return left
}

// list returns every resource of the kinds tests create.
func list() ([]resource, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if os.Getenv("AWS_ENDPOINT_URL") == "" {
		return nil, errors.New("AWS_ENDPOINT_URL is not set: the check is for the local services (source localstack/env.sh)")
	}
	cfg, err := awsconfig.Load(ctx, awsconfig.Options{})
	if err != nil {
		return nil, err
	}
	var rs []resource
	add := func(kind string, names ...string) {
		for _, n := range names {
			rs = append(rs, resource{kind, n})
		}
	}
	for p := s3.NewListBucketsPaginator(cfg.S3(), &s3.ListBucketsInput{}); p.HasMorePages(); {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list buckets: %w", err)
		}
		for _, b := range out.Buckets {
			add("S3 bucket", *b.Name)
		}
	}
	for p := sqs.NewListQueuesPaginator(cfg.SQS(), &sqs.ListQueuesInput{}); p.HasMorePages(); {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list queues: %w", err)
		}
		for _, u := range out.QueueUrls {
			add("SQS queue", u[strings.LastIndex(u, "/")+1:])
		}
	}
	for p := dynamodb.NewListTablesPaginator(cfg.DynamoDB(), &dynamodb.ListTablesInput{}); p.HasMorePages(); {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list tables: %w", err)
		}
		add("DynamoDB table", out.TableNames...)
	}
	for p := cloudwatch.NewDescribeAlarmsPaginator(cfg.CloudWatch(), &cloudwatch.DescribeAlarmsInput{}); p.HasMorePages(); {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list alarms: %w", err)
		}
		for _, a := range out.MetricAlarms {
			add("CloudWatch alarm", *a.AlarmName)
		}
	}
	for p := cloudformation.NewListStacksPaginator(cloudformation.NewFromConfig(cfg.AWS), &cloudformation.ListStacksInput{}); p.HasMorePages(); {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list stacks: %w", err)
		}
		for _, s := range out.StackSummaries {
			if s.StackStatus != cfntypes.StackStatusDeleteComplete {
				add("CloudFormation stack", *s.StackName)
			}
		}
	}
	if u := os.Getenv("MILL_DATABASE_URL"); u != "" {
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			return nil, fmt.Errorf("PostgreSQL: %w", err)
		}
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, `select nspname from pg_namespace where nspname not like 'pg\_%' and nspname <> 'information_schema'`)
		if err != nil {
			return nil, fmt.Errorf("list schemas: %w", err)
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, fmt.Errorf("list schemas: %w", err)
		}
		add("PostgreSQL schema", names...)
	}
	return rs, nil
}
