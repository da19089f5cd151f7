#!/usr/bin/env bash
# Mill's AWS contract suites and the audit/duplication end-to-end test
# against another AWS than moto:
#
#   scripts/test-aws.sh localstack [go test flags]   make test/localstack
#   scripts/test-aws.sh real [go test flags]         make test/aws
#
# localstack: LocalStack in host mode (localstack/host.sh) on its own port
# beside moto, installed on first use and stopped afterwards if this script
# started it.
#
# real: the AWS account named by MILL_TEST_REAL_AWS (its 12-digit ID; the
# credentials must belong to it), in us-east-1, with the SDK's default
# credential chain (profile, environment, role). Every resource is named
# milltest-<random>-… and removed by the test that made it; see docs/DEVELOPMENT.md
# (Testing against real AWS) for what it costs and how to find leftovers.
#
# PostgreSQL is the local one in both (make up). Every test must run: a
# skipped test fails the run, and CI=true makes a test whose service cannot
# be reached fail instead of skip.
set -euo pipefail
cd "$(dirname "$0")/.."
bench=()
mode=${1:-}
shift || true
export CI=true

# The contract suites: queues (SQS; the blob store in S3 that claim checks,
# producer state, checkpoints and the evidence log use), storage
# (S3), the audit log and leases (DynamoDB), setup (all of them), metrics
# (CloudWatch), S3 event notifications and the operators' notifications (SNS).
pkgs=(./pkg/queue/sqsqueue ./pkg/blob/s3blob ./pkg/storage/s3store
  ./pkg/auditlog/dynamoauditlog ./pkg/lease/dynamolease ./internal/ops/setup
  ./pkg/metrics/cloudwatchmetrics ./pkg/s3event ./pkg/notify/snsnotify)
# The fairness acceptance test (10,000 tasks of one account before 100 of
# another) runs on an SQS fair queue: a real standard queue here in real
# mode; elsewhere the fair-queue stand-in (internal/testkit/sqsfair), as
# LocalStack and moto deliver in send order.
e2e=(./test/e2e -run 'TestAuditDuplicationEndToEnd|TestFairnessAcceptance')

case "$mode" in
  localstack)
    # Against LocalStack also what uses those services: the CloudWatch
    # alarms, Workman's long-task extension, millctl (setup, dlq, enqueue,
    # content), the audit and duplication processors, the stores registry
    # and the CloudFormation stack.
    pkgs+=(./internal/ops/alarms ./pkg/workman ./cmd/millctl ./processors/audit ./processors/dup ./pkg/stores ./infra)
    endpoint=$(localstack/host.sh env | sed -n 's/^export AWS_ENDPOINT_URL=//p')
    started=0
    curl -sf -o /dev/null --max-time 2 "$endpoint/_localstack/health" || started=1
    stop() { if [[ $started == 1 ]]; then localstack/host.sh down; fi; }
    trap stop EXIT
    localstack/host.sh up
    # shellcheck source=localstack/env.sh
    source localstack/env.sh
    export AWS_ENDPOINT_URL=$endpoint
    target="LocalStack at $endpoint"
    ;;
  real)
    if [[ -z "${MILL_TEST_REAL_AWS:-}" ]]; then
      echo "test/aws: set MILL_TEST_REAL_AWS to the 12-digit ID of the AWS account the tests may create and delete resources in" >&2
      exit 2
    fi
    # Only the database from localstack/env.sh: its AWS variables (the
    # emulator's endpoint and test credentials) would win over a profile.
    if [[ -z "${MILL_DATABASE_URL:-}" ]]; then
      eval "$(env -i PATH="$PATH" bash localstack/env.sh | grep '^export MILL_DATABASE_URL=')"
    fi
    export AWS_REGION=${AWS_REGION:-us-east-1}
    # S3 Batch Operations (Compute checksum jobs): against AWS itself, as
    # the role MILL_TEST_BATCH_ROLE_ARN names; elsewhere the tests use the
    # S3 Control stand-in, so it is in neither list above.
    pkgs+=(./pkg/atrest/s3batch)
    # The producer's enqueue rate on SQS itself (sequential sender, then 8,
    # 16 and 32 batches in flight; 10,000 tasks a run, about 4,000
    # SendMessageBatch requests in all): what LocalStack's one Python
    # process caps on a small machine. Its figures are printed at the end.
    bench=(./producers/looping -run '^$' -bench '^BenchmarkEnqueueInFlight$' -benchtime 1x)
    target="AWS account $MILL_TEST_REAL_AWS ($AWS_REGION)"
    ;;
  *)
    echo "usage: scripts/test-aws.sh localstack|real [go test flags]" >&2
    exit 2
    ;;
esac

mkdir -p .local
log=.local/test-aws-$mode.log
echo "test/aws: against $target (log: $log)" >&2
start=$SECONDS
rc=0
(
  # DuraCloud's layout keeps no checksum claim beside the object (the ETag
  # is the MD5), so the suite's Corrupt and Replaced cases, which forge one,
  # do not apply to it: left out by name rather than counted as skips.
  go test -race -count=1 -timeout 14m -v -skip 'TestConformanceDuraCloud/(Corrupt|Replaced)$' "$@" "${pkgs[@]}" || rc=$?
  go test -race -count=1 -timeout 14m -v "$@" "${e2e[@]}" || rc=$?
  if [[ ${#bench[@]} -gt 0 ]]; then
    go test -count=1 -timeout 10m -v "${bench[@]}" || rc=$?
  fi
  exit $rc
) >"$log" 2>&1 || rc=$?
grep -E '^(--- (FAIL|SKIP)|ok|FAIL|panic)|^BenchmarkEnqueueInFlight-|in flight: [0-9]+ tasks' "$log" || true
# What each failed test said (its t.Log/t.Error lines), so a CI log shows
# why without the file.
for name in $(sed -n 's/^--- FAIL: \([^ ]*\).*/\1/p' "$log" | sort -u); do
  echo "test/aws: $name said:"
  sed -n "/^=== RUN   $name\$/,/^--- FAIL: $name /p" "$log" | grep -E '^ +[A-Za-z0-9_]+\.go:[0-9]+: ' | cut -c1-300 | tail -40
done
skipped=$(grep -c -- '--- SKIP' "$log" || true)
passed=$(grep -c -- '--- PASS' "$log" || true)
failed=$(grep -c -- '--- FAIL' "$log" || true)
if [[ $skipped != 0 ]]; then
  echo "test/aws: every test must run against $target; skipped:" >&2
  grep -- '--- SKIP' "$log" >&2
  rc=1
fi
echo "test/aws: took $((SECONDS - start)) s" >&2
echo "$mode: $passed passed, $failed failed, $skipped skipped"
exit $rc
