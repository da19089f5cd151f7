// Package e2e holds end-to-end acceptance tests of Mill: whole flows across
// producers, Workman and the processors, on the AWS emulator and
// PostgreSQL, and for the stores outside AWS on fake-gcs-server and
// Azurite (skipped without them, failing under CI=true).
package e2e
