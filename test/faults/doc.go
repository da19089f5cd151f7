// Package faults holds Mill's fault tests: real binaries (workman,
// dupproducer, bitproducer built into a temporary directory) against the
// local AWS emulator and PostgreSQL, with faults injected from outside —
// the SQS endpoint cut for 30 s (internal/faultproxy), a PostgreSQL restart
// during a bit-integrity run (internal/pgcluster), workman and producers
// killed with SIGKILL, two producers of one kind started together.
//
// The tests carry the build tag "faults" so `make test` does not run them;
// run them with the local services up (`make up`):
//
//	source localstack/env.sh && go test -tags faults -race -timeout 30m -v ./test/faults/...
//
// Each test is bounded in time and logs its measurements (duplicates per
// kill, recovery time after the outage, durations).
package faults
