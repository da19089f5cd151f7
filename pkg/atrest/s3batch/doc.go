// Package s3batch is the atrest.Checker on S3 Batch Operations: each job
// runs the Compute checksum operation (S3ComputeObjectChecksum, full
// object) over a CSV manifest Mill writes, and Mill reads the computed
// checksums from the job's completion report. S3 computes them at rest, in
// every storage class: no GET and no restore of an archived object.
//
// Submit writes the manifest (S3BatchOperations_CSV_20180820: Bucket,Key
// or Bucket,Key,VersionId; keys URL-encoded, see EncodeKey) to
// <ReportPrefix>/manifests/ in the report bucket, once (its key names its
// content; If-None-Match), then calls CreateJob with the manifest's ETag
// and version, a completion report of all tasks (Report_CSV_20180820)
// under ReportPrefix, ConfirmationRequired false and Spec.Token as the
// ClientRequestToken, so a repeated Submit never makes a second job.
//
// Describe maps DescribeJob's status: Complete, Failed and Cancelled are
// themselves; every other documented state (New, Preparing, Suspended,
// Ready, Active, Pausing, Paused, Completing, Cancelling, Failing) is
// Active; a state S3 does not document is an error.
//
// Results trusts nothing in the report it did not ask for. It takes the
// manifest, the report location and the algorithm from DescribeJob, reads
// the manifest back (by its version and ETag), reads <prefix>/job-<id>/manifest.json,
// and reads each results CSV it names only from under
// <prefix>/job-<id>/results/ in the report bucket, after checking the
// file's MD5 against the MD5Checksum manifest.json gives it (a check
// against corruption: whoever can rewrite the report can rewrite both). A
// line yields a checksum only when it names an object of the manifest not
// yet reported, its task succeeded, and its ResultMessage is the Compute
// checksum JSON ({"checksum_base64", "checksum_hex", "checksumAlgorithm",
// "checksumType"}) of the job's algorithm, FULL_OBJECT, with a value of
// the algorithm's length (both encodings agreeing when both are given).
// Any other line is a *LineError and the iteration goes on; manifest
// objects without a line end it with one *LineError each, so every
// manifest object has exactly one outcome. AWS's report pages show the
// columns but no Compute checksum line: the JSON's field names are those
// of published readers of real reports, and make test/aws checks them. The
// documented schema lists ErrorCode before HTTPStatusCode while the
// documented example lines put the status code first: the numeric one of
// the two columns is taken as the status code.
//
// # Endpoints
//
// The S3 Control API lives at {AccountId}.s3-control.{region}.amazonaws.com:
// the SDK's endpoint rules put the account ID in front of the host, also
// of a custom endpoint (AWS_ENDPOINT_URL_S3_CONTROL, or AWS_ENDPOINT_URL),
// which breaks an endpoint such as http://127.0.0.1:port.
// awsconfig.Config.S3Control builds a client that uses a custom endpoint
// as it is (awsconfig.NoAccountHost); the account ID still travels in the
// x-amz-account-id header. AWS's own endpoint keeps its account host. The account is Options.AccountID, or the
// caller's (STS GetCallerIdentity) when that is empty.
package s3batch
