// Package atrest is the port of fixity computed at rest: a provider
// computes the checksums of many stored objects itself, without a GET or
// a restore (S3 Batch Operations' Compute checksum operation), and Mill
// reads the results from the job's completion report.
//
// Implementations: s3batch (S3 Control CreateJob/DescribeJob, the CSV
// manifest and the completion report, as the AWS API reference documents
// them).
package atrest

import (
	"context"
	"iter"
	"time"
)

// Algorithm is the checksum a job computes, always of the full object.
type Algorithm string

// Algorithms.
const (
	MD5       Algorithm = "MD5"
	CRC64NVME Algorithm = "CRC64NVME"
)

// Object is one object of a job's manifest.
type Object struct {
	Bucket    string
	Key       string
	VersionID string // "" for the current version
}

// Spec is a job to create.
type Spec struct {
	// Objects are the job's manifest (at least one).
	Objects []Object
	// Algorithm computed for every object.
	Algorithm Algorithm
	// ReportBucket and ReportPrefix: where the manifest is written and
	// where the provider writes its completion report.
	ReportBucket, ReportPrefix string
	// RoleARN is the role the provider assumes to run the job.
	RoleARN string
	// Priority of the job (higher first).
	Priority int32
	// Token makes creation idempotent: the same token never makes a
	// second job.
	Token string
	// Description is shown with the job.
	Description string
}

// State of a job.
type State string

// States: Done is true for Complete, Failed and Cancelled only.
const (
	StateActive    State = "Active"
	StateComplete  State = "Complete"
	StateFailed    State = "Failed"
	StateCancelled State = "Cancelled"
)

// Done reports whether the job will not change any more.
func (s State) Done() bool { return s == StateComplete || s == StateFailed || s == StateCancelled }

// Status is what Describe reports of a job.
type Status struct {
	ID    string
	State State
	// Reason is the provider's explanation of a failure ("" otherwise).
	Reason string
	// Tasks: total, succeeded and failed, as the provider counts them.
	Total, Succeeded, Failed int64
	// Finished is when the job reached a done state (zero before).
	Finished time.Time
}

// Result is one object's line of a completion report.
type Result struct {
	Object
	// OK: the provider computed the checksum (TaskStatus succeeded).
	OK bool
	// Algorithm and Checksum: the computed value, MD5 as lower-case hex,
	// CRC64NVME as standard base64 (as S3 writes it); empty when !OK.
	Algorithm Algorithm
	Checksum  string
	// Error: the provider's error code and message when !OK.
	Error string
}

// Checker runs at-rest checksum jobs.
type Checker interface {
	// Submit writes the manifest and creates the job; it returns the
	// job's ID.
	Submit(ctx context.Context, s Spec) (string, error)
	// Describe returns the job's status.
	Describe(ctx context.Context, jobID string) (Status, error)
	// Results reads the completion report of a done job, one result per
	// manifest object; a job not done fails.
	Results(ctx context.Context, jobID string) iter.Seq2[Result, error]
}
