// Package services tests what localstack/up.sh and localstack/host.sh
// promise about the local services they start: every default port lies
// outside the kernel's ephemeral range (so a client socket can never hold
// it when `make up` starts), every listening socket of those services is on
// loopback, and the LD_PRELOAD shim that keeps LocalStack and DynamoDB Local
// there turns wildcard binds into loopback binds and leaves other binds
// alone.
package services
