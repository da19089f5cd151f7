// Package fleet holds the acceptance tests of the fleet registry and the
// instance lifecycle with real processes: Workman binaries on the AWS
// emulator (and PostgreSQL for the pause test) report to the fleet table
// and are read back with millctl fleet; millctl pause and resume stop and
// restart a task type fleet-wide; a stub instance metadata service
// announces an Auto Scaling termination. Heartbeats are 1 s apart so each
// test takes seconds. Skipped without the services, failing under CI=true.
package fleet
