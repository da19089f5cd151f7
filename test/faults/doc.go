// Package faults holds Mill's fault tests: real binaries (workman,
// dupproducer, bitproducer built into a temporary directory) against the
// local AWS emulator and PostgreSQL, with faults injected from outside —
// the SQS endpoint cut for 30 s (internal/testkit/faultproxy), a PostgreSQL restart
// during a bit-integrity run (internal/testkit/pgcluster), workman and producers
// killed with SIGKILL, two producers of one kind started together; and faults
// that must heal without an operator: PostgreSQL stopped through a bit run for
// MILL_FAULTS_OUTAGE (default 40 s, past the 30 s three attempts used to last;
// the acceptance figure is 120 s), the audit table of DynamoDB answering only
// 500s for as long during audits, one bucket answering 503 SlowDown above
// MILL_FAULTS_THROTTLE_RATE requests a second (default 20) during a
// duplication whose other account's buckets keep full speed, 30 % of S3
// GET bodies broken mid-read under
// the producers and workman, and a burst of retries on the lowest of six
// queues of an otherwise idle workman.
//
// The tests carry the build tag "faults" so `make test` does not run them;
// `make test/faults` does (about 10 minutes at the full counts), and so does
// CI after `make test` and `make lint`. By hand, with the local services up:
//
//	source localstack/env.sh && go test -tags faults -race -timeout 40m -v ./test/faults/...
//
// MILL_FAULTS_SCALE (default 1) scales the task and item counts. Work is fed
// while it is consumed, never more than a few hundred messages deep, as the
// producers do in production: moto's SQS slows in proportion to queue depth.
//
// Each test is bounded in time and logs its measurements (duplicates per
// kill, recovery time after the outage, durations).
package faults
