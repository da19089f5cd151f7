package s3batch

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	ctltypes "github.com/aws/aws-sdk-go-v2/service/s3control/types"

	"github.com/millfleet/mill/pkg/atrest"
)

// Limits on what Results reads.
const (
	maxReportManifest = 16 << 20 // manifest.json
	maxLineBytes      = 16 << 10 // a report line, on average per manifest object
)

// LineError is a completion-report line (or a manifest object without
// one) that yields no checksum. Results goes on after it.
//
// Object is the manifest object whose result this error is: each manifest
// object gets exactly one outcome, a Result or a LineError naming it.
// Object is zero when the line names no object of the manifest, or one
// already reported: such an error is about the report, not about an
// object.
type LineError struct {
	File   string // s3://bucket/key of the results CSV; "" for a missing line
	Line   int
	Object atrest.Object
	Err    error
}

func (e *LineError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("s3batch: %v", e.Err)
	}
	return fmt.Sprintf("s3batch: completion report %s line %d: %v", e.File, e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// reportManifest is the completion report's manifest.json.
type reportManifest struct {
	Format       string
	ReportSchema string
	Results      []struct {
		TaskExecutionStatus string
		Bucket              string
		Key                 string
		MD5Checksum         string
	}
}

// job is what Results takes from DescribeJob.
type job struct {
	id                   string
	alg                  atrest.Algorithm
	reportBucket, prefix string
	manifestBucket, mkey string
	manifestETag         string
	manifestVersion      string
	fields               []ctltypes.JobManifestFieldName
}

// parseJob checks that j is a done Compute checksum job with a full report.
func (c *Checker) parseJob(j *ctltypes.JobDescriptor) (job, error) {
	id := aws.ToString(j.JobId)
	st, err := status(j)
	if err != nil {
		return job{}, err
	}
	if !st.State.Done() {
		return job{}, fmt.Errorf("s3batch: job %s is %s (%s), not done", id, st.State, j.Status)
	}
	out := job{id: id}
	op := j.Operation
	if op == nil || op.S3ComputeObjectChecksum == nil {
		return job{}, fmt.Errorf("s3batch: job %s is not a Compute checksum job", id)
	}
	out.alg = atrest.Algorithm(op.S3ComputeObjectChecksum.ChecksumAlgorithm)
	if out.alg != atrest.MD5 && out.alg != atrest.CRC64NVME {
		return job{}, fmt.Errorf("s3batch: job %s computes %q", id, out.alg)
	}
	if t := op.S3ComputeObjectChecksum.ChecksumType; t != ctltypes.ComputeObjectChecksumTypeFullObject {
		return job{}, fmt.Errorf("s3batch: job %s computes %q checksums, not FULL_OBJECT", id, t)
	}
	r := j.Report
	if r == nil || !r.Enabled || r.ReportScope != ctltypes.JobReportScopeAllTasks || r.Format != ReportFormat {
		return job{}, fmt.Errorf("s3batch: job %s has no %s report of all tasks", id, ReportFormat)
	}
	arnPrefix := "arn:" + c.o.Partition + ":s3:::"
	b, ok := strings.CutPrefix(aws.ToString(r.Bucket), arnPrefix)
	if !ok || b == "" || strings.Contains(b, "/") {
		return job{}, fmt.Errorf("s3batch: job %s: report bucket %q is not an S3 bucket ARN", id, aws.ToString(r.Bucket))
	}
	out.reportBucket, out.prefix = b, prefix(aws.ToString(r.Prefix))
	m := j.Manifest
	if m == nil || m.Location == nil || m.Spec == nil || m.Spec.Format != ManifestFormat {
		return job{}, fmt.Errorf("s3batch: job %s has no %s manifest", id, ManifestFormat)
	}
	loc, ok := strings.CutPrefix(aws.ToString(m.Location.ObjectArn), arnPrefix)
	mb, mk, found := strings.Cut(loc, "/")
	if !ok || !found || mb == "" || mk == "" {
		return job{}, fmt.Errorf("s3batch: job %s: manifest %q is not an S3 object ARN", id, aws.ToString(m.Location.ObjectArn))
	}
	out.manifestBucket, out.mkey = mb, mk
	out.manifestETag = strings.Trim(aws.ToString(m.Location.ETag), `"`)
	out.manifestVersion = aws.ToString(m.Location.ObjectVersionId)
	out.fields = m.Spec.Fields
	return out, nil
}

// Results reads the completion report of a done job: one Result per
// manifest object, or a *LineError for it; any other error ends the
// iteration.
func (c *Checker) Results(ctx context.Context, jobID string) iter.Seq2[atrest.Result, error] {
	return func(yield func(atrest.Result, error) bool) {
		if err := c.results(ctx, jobID, yield); err != nil {
			yield(atrest.Result{}, err)
		}
	}
}

// errStop: the consumer stopped the iteration.
var errStop = errors.New("stop")

func (c *Checker) results(ctx context.Context, jobID string, yield func(atrest.Result, error) bool) error {
	d, err := c.describe(ctx, jobID)
	if err != nil {
		return err
	}
	j, err := c.parseJob(d)
	if err != nil {
		return err
	}
	objs, err := c.readManifest(ctx, j)
	if err != nil {
		return err
	}
	pending := make(map[atrest.Object]bool, len(objs)) // true once reported
	for _, o := range objs {
		if pending[o] {
			return fmt.Errorf("s3batch: job %s: manifest names %s twice", j.id, show(o))
		}
		pending[o] = false
	}
	jobDir := under(j.prefix, "job-"+j.id+"/")
	rm, err := c.readReportManifest(ctx, j.reportBucket, jobDir+"manifest.json")
	if err != nil {
		return fmt.Errorf("s3batch: job %s: %w", j.id, err)
	}
	budget := int64(len(objs))*maxLineBytes + 1<<20
	seen := map[string]bool{}
	for _, f := range rm.Results {
		if f.Bucket != j.reportBucket || !strings.HasPrefix(f.Key, jobDir+"results/") || strings.Contains(f.Key, "/../") || seen[f.Key] {
			return fmt.Errorf("s3batch: job %s: manifest.json names s3://%s/%s, not a results file of this job", j.id, f.Bucket, f.Key)
		}
		seen[f.Key] = true
		n, err := c.readResults(ctx, j, f.Key, f.MD5Checksum, budget, pending, yield)
		if errors.Is(err, errStop) {
			return nil
		}
		if err != nil {
			return err
		}
		budget -= n
	}
	for _, o := range objs {
		if !pending[o] {
			pending[o] = true
			if !yield(atrest.Result{Object: o}, &LineError{Object: o, Err: fmt.Errorf("job %s: the completion report has no line for %s", j.id, show(o))}) {
				return nil
			}
		}
	}
	return nil
}

func show(o atrest.Object) string {
	s := "s3://" + o.Bucket + "/" + o.Key
	if o.VersionID != "" {
		s += " (version " + o.VersionID + ")"
	}
	return s
}

// readManifest reads back the job's manifest, as it was when the job was
// created (its version, when the bucket keeps versions, and its ETag).
func (c *Checker) readManifest(ctx context.Context, j job) ([]atrest.Object, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(j.manifestBucket), Key: aws.String(j.mkey)}
	if j.manifestVersion != "" {
		in.VersionId = aws.String(j.manifestVersion)
	}
	out, err := c.s3.GetObject(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("s3batch: job %s: read manifest s3://%s/%s: %w", j.id, j.manifestBucket, j.mkey, err)
	}
	defer out.Body.Close()
	if got := strings.Trim(aws.ToString(out.ETag), `"`); got != j.manifestETag {
		return nil, fmt.Errorf("s3batch: job %s: manifest s3://%s/%s has ETag %s, the job's has %s: it changed", j.id, j.manifestBucket, j.mkey, got, j.manifestETag)
	}
	objs, err := DecodeManifest(out.Body, j.fields)
	if err != nil {
		return nil, fmt.Errorf("s3batch: job %s: %w", j.id, err)
	}
	return objs, nil
}

func (c *Checker) readReportManifest(ctx context.Context, bucket, key string) (*reportManifest, error) {
	out, err := c.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("no completion report: read s3://%s/%s: %w", bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, maxReportManifest+1))
	if err != nil {
		return nil, fmt.Errorf("read s3://%s/%s: %w", bucket, key, err)
	}
	if len(b) > maxReportManifest {
		return nil, fmt.Errorf("s3://%s/%s is over %d bytes", bucket, key, maxReportManifest)
	}
	var m reportManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("s3://%s/%s: %w", bucket, key, err)
	}
	if m.Format != ReportFormat {
		return nil, fmt.Errorf("s3://%s/%s: format %q, want %s", bucket, key, m.Format, ReportFormat)
	}
	return &m, nil
}

// readResults copies a results CSV to a temporary file, checks its MD5
// against manifest.json's, then yields its lines. It returns the file's
// size.
func (c *Checker) readResults(ctx context.Context, j job, key, wantMD5 string, budget int64, pending map[atrest.Object]bool, yield func(atrest.Result, error) bool) (int64, error) {
	name := "s3://" + j.reportBucket + "/" + key
	out, err := c.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(j.reportBucket), Key: aws.String(key)})
	if err != nil {
		return 0, fmt.Errorf("s3batch: job %s: read %s: %w", j.id, name, err)
	}
	defer out.Body.Close()
	tmp, err := os.CreateTemp("", "mill-s3batch-*.csv")
	if err != nil {
		return 0, fmt.Errorf("s3batch: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	h := md5.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(out.Body, budget+1))
	if err != nil {
		return 0, fmt.Errorf("s3batch: job %s: read %s: %w", j.id, name, err)
	}
	if n > budget {
		return 0, fmt.Errorf("s3batch: job %s: %s is larger than a report of %d objects can be", j.id, name, len(pending))
	}
	if got := hex.EncodeToString(h.Sum(nil)); wantMD5 != "" && !strings.EqualFold(got, wantMD5) {
		return 0, fmt.Errorf("s3batch: job %s: %s has MD5 %s, manifest.json says %s", j.id, name, got, wantMD5)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return 0, fmt.Errorf("s3batch: %w", err)
	}
	if err := parseReport(tmp, name, j.alg, pending, yield); err != nil {
		if errors.Is(err, errStop) {
			return n, err
		}
		return 0, err
	}
	return n, nil
}
