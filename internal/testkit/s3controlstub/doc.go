// Package s3controlstub is a stand-in for the S3 Batch Operations job API
// of S3 Control, for tests only: neither moto nor LocalStack implements
// CreateJob. It serves, on 127.0.0.1, the REST-XML operations CreateJob,
// DescribeJob, ListJobs and UpdateJobStatus (cancel, and confirm a
// Suspended job) as the S3 Control API reference defines them: paths
// /v20180820/jobs[/{id}[/status]], the x-amz-account-id header, the
// request and response documents, the ErrorResponse errors, the job
// states, and ClientRequestToken idempotency (the same token and request
// return the same job; the same token with another request is an
// IdempotencyException). It implements one operation,
// S3ComputeObjectChecksum (MD5 and CRC64NVME, FULL_OBJECT): other
// operations are a BadRequestException.
//
// A job runs in its own goroutine: New, Preparing (the CSV manifest is
// read from the emulator's S3 and must have the ETag the job names; the
// report bucket must exist; otherwise the job is Failed with a reason),
// Suspended when ConfirmationRequired until UpdateJobStatus Ready, Active,
// then Completing or Cancelling and Complete or Cancelled. Each task reads
// the object's bytes from the emulator and computes its checksum over the
// full object: MD5 (the ResultMessage's checksum_hex, lower case, and
// checksum_base64) or CRC64NVME (checksum_base64, big-endian, and
// checksum_hex). The completion report — <prefix>/job-<id>/manifest.json
// and one results CSV for succeeded and one for failed tasks, each line
// Bucket, Key (URL-encoded), VersionId, TaskStatus, HTTPStatusCode,
// ErrorCode, ResultMessage as AWS's example report lines have them — is
// written to the report bucket when at least one task ran.
//
// S3 computes checksums at rest and needs no restore. The emulator
// refuses a GET of a GLACIER or DEEP_ARCHIVE object (InvalidObjectState),
// so the stand-in restores such an object (RestoreObject, one day; moto
// restores at once) and reads it then. That restore leaves the object
// restored in the emulator, which S3's own Compute checksum would not.
// moto restores only an object's current version, so the task of a
// non-current archived version fails (InvalidObjectState).
// The stand-in uses the S3 client it is given, which must reach the
// emulator directly: a request-counting proxy in front of the processes
// under test sees none of the stand-in's GETs and restores.
//
// Progress is deterministic for tests: Wait blocks until a job is done,
// and with Options.Hold a job stays Active, before its first task, until
// Release (or a cancel). Nothing sleeps.
package s3controlstub
