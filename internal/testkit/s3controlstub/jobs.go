package s3controlstub

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/millfleet/mill/pkg/storage"
)

// job is one job; its fields but id, req, canon, done and wake are
// guarded by Server.mu.
type job struct {
	id    string
	req   createJobRequest
	canon string

	status     string
	reason     string
	failures   []failureXML
	created    time.Time
	suspended  time.Time
	terminated time.Time

	total, succeeded, failed int64

	hold, cancelled, confirmed bool

	done chan struct{} // closed when the job is done
	wake chan struct{} // a state change the runner may wait for
}

func (j *job) poke() {
	select {
	case j.wake <- struct{}{}:
	default:
	}
}

func (j *job) progress() progressXML {
	return progressXML{TotalNumberOfTasks: j.total, NumberOfTasksSucceeded: j.succeeded, NumberOfTasksFailed: j.failed}
}

// Wait blocks until the job is done (or ctx ends) and returns its status.
func (s *Server) Wait(ctx context.Context, id string) (string, error) {
	s.mu.Lock()
	j, ok := s.jobs[id]
	s.mu.Unlock()
	if !ok {
		return "", fmt.Errorf("s3controlstub: no job %s", id)
	}
	select {
	case <-j.done:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return j.status, nil
}

// Release lets a held job (Options.Hold) run its tasks.
func (s *Server) Release(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j, ok := s.jobs[id]; ok {
		j.hold = false
		j.poke()
	}
}

// Status returns a job's current status ("" for no such job).
func (s *Server) Status(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j, ok := s.jobs[id]; ok {
		return j.status
	}
	return ""
}

// WaitFor blocks until the job's status is one of statuses (or ctx ends).
func (s *Server) WaitFor(ctx context.Context, id string, statuses ...string) (string, error) {
	for {
		s.mu.Lock()
		j, ok := s.jobs[id]
		if !ok {
			s.mu.Unlock()
			return "", fmt.Errorf("s3controlstub: no job %s", id)
		}
		st, ch := j.status, s.changed
		s.mu.Unlock()
		for _, want := range statuses {
			if st == want {
				return st, nil
			}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return st, fmt.Errorf("s3controlstub: job %s is %s: %w", id, st, ctx.Err())
		}
	}
}

// notify wakes WaitFor; s.mu is held.
func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// set changes the job's status unless it is being cancelled.
func (s *Server) set(j *job, status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !j.cancelled {
		j.status = status
		s.notify()
	}
}

// finish ends the job in status.
func (s *Server) finish(j *job, status, code, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j.status = status
	s.notify()
	if code != "" {
		j.failures = append(j.failures, failureXML{FailureCode: code, FailureReason: reason})
	}
	j.terminated = time.Now()
}

// object is one manifest line.
type object struct{ bucket, key, rawKey, version string }

// row is one completion-report line.
type row struct {
	o          object
	ok         bool
	httpStatus int
	code, msg  string
}

// run takes the job through its states.
func (s *Server) run(j *job) {
	defer s.wg.Done()
	defer close(j.done)
	ctx := s.ctx
	s.set(j, "Preparing")
	objs, code, err := s.prepare(ctx, j)
	if err != nil {
		s.finish(j, "Failed", code, err.Error())
		return
	}
	s.mu.Lock()
	j.total = int64(len(objs))
	confirm := j.req.ConfirmationRequired != nil && *j.req.ConfirmationRequired
	if confirm && !j.cancelled {
		j.status, j.suspended = "Suspended", time.Now()
		s.notify()
	}
	s.mu.Unlock()
	// Suspended until confirmed, held until released: wait for a poke.
	if !s.await(ctx, j, func() bool { return !confirm || j.confirmed }) {
		return
	}
	s.set(j, "Active")
	if !s.await(ctx, j, func() bool { return !j.hold }) {
		return
	}
	var rows []row
	alg := j.req.Operation.S3ComputeObjectChecksum.ChecksumAlgorithm
	for _, o := range objs {
		s.mu.Lock()
		c := j.cancelled
		s.mu.Unlock()
		if c {
			break
		}
		r := s.task(ctx, o, alg)
		s.mu.Lock()
		if r.ok {
			j.succeeded++
		} else {
			j.failed++
		}
		s.mu.Unlock()
		rows = append(rows, r)
	}
	s.mu.Lock()
	final := "Complete"
	if j.cancelled {
		final = "Cancelled"
	} else {
		j.status = "Completing"
		s.notify()
	}
	s.mu.Unlock()
	if len(rows) > 0 && j.req.Report.Enabled {
		if err := s.writeReport(ctx, j, rows); err != nil {
			s.finish(j, "Failed", "ReportWriteFailed", err.Error())
			return
		}
	}
	s.finish(j, final, "", "")
}

// await waits until ok() (checked under s.mu) or a cancel; false when the
// job ended cancelled (it is then finished) or the server closed.
func (s *Server) await(ctx context.Context, j *job, ok func() bool) bool {
	for {
		s.mu.Lock()
		c, ready := j.cancelled, ok()
		s.mu.Unlock()
		if c {
			s.finish(j, "Cancelled", "", "")
			return false
		}
		if ready {
			return true
		}
		select {
		case <-j.wake:
		case <-ctx.Done():
			s.finish(j, "Failed", "StandInClosed", "the stand-in was closed")
			return false
		}
	}
}

// prepare reads the manifest and checks the report bucket.
func (s *Server) prepare(ctx context.Context, j *job) ([]object, string, error) {
	m := j.req.Manifest
	loc, ok := strings.CutPrefix(m.Location.ObjectArn, "arn:aws:s3:::")
	bucket, key, found := strings.Cut(loc, "/")
	if !ok || !found || bucket == "" || key == "" {
		return nil, "ManifestInvalid", fmt.Errorf("manifest ObjectArn %q is not an S3 object ARN", m.Location.ObjectArn)
	}
	in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if m.Location.ObjectVersionID != "" {
		in.VersionId = aws.String(m.Location.ObjectVersionID)
	}
	out, err := s.s3.GetObject(ctx, in)
	if err != nil {
		return nil, "ManifestReadFailed", fmt.Errorf("reading the manifest s3://%s/%s failed: %v", bucket, key, err)
	}
	defer out.Body.Close()
	if got := strings.Trim(aws.ToString(out.ETag), `"`); got != strings.Trim(m.Location.ETag, `"`) {
		return nil, "ManifestETagMismatch", fmt.Errorf("the manifest's ETag is %s, the job names %s", got, m.Location.ETag)
	}
	cr := csv.NewReader(io.LimitReader(out.Body, 1<<30))
	cr.FieldsPerRecord = len(m.Spec.Fields)
	var objs []object
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, "ManifestInvalid", fmt.Errorf("the manifest is not a CSV of %s: %v", strings.Join(m.Spec.Fields, ","), err)
		}
		k, err := url.QueryUnescape(rec[1])
		if err != nil || rec[0] == "" || k == "" {
			return nil, "ManifestInvalid", fmt.Errorf("manifest line %q: no bucket or a key that is not URL-encoded", strings.Join(rec, ","))
		}
		o := object{bucket: rec[0], key: k, rawKey: rec[1]}
		if len(rec) == 3 {
			o.version = rec[2]
		}
		objs = append(objs, o)
	}
	if len(objs) == 0 {
		return nil, "ManifestEmpty", errors.New("the manifest names no object")
	}
	if j.req.Report.Enabled {
		rb := strings.TrimPrefix(j.req.Report.Bucket, "arn:aws:s3:::")
		if _, err := s.s3.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(rb)}); err != nil {
			return nil, "ReportBucketUnreachable", fmt.Errorf("the report bucket %s cannot be reached: %v", rb, err)
		}
	}
	return objs, "", nil
}

// task computes one object's checksum from the emulator's bytes,
// restoring an archived object first (see the package doc).
func (s *Server) task(ctx context.Context, o object, alg string) row {
	in := &s3.GetObjectInput{Bucket: aws.String(o.bucket), Key: aws.String(o.key)}
	if o.version != "" {
		in.VersionId = aws.String(o.version)
	}
	out, err := s.s3.GetObject(ctx, in)
	var invalid *s3types.InvalidObjectState
	if errors.As(err, &invalid) {
		_, rerr := s.s3.RestoreObject(ctx, &s3.RestoreObjectInput{Bucket: in.Bucket, Key: in.Key, VersionId: in.VersionId,
			RestoreRequest: &s3types.RestoreRequest{Days: aws.Int32(1)}})
		if rerr != nil {
			return failedRow(o, rerr)
		}
		out, err = s.s3.GetObject(ctx, in)
	}
	if err != nil {
		return failedRow(o, err)
	}
	defer out.Body.Close()
	sums := storage.NewSums()
	if _, err := io.Copy(sums, out.Body); err != nil {
		return failedRow(o, err)
	}
	var val []byte
	if alg == "MD5" {
		val, _ = hex.DecodeString(sums.MD5())
	} else {
		val = binary.BigEndian.AppendUint64(nil, sums.CRC64NVME())
	}
	msg, _ := json.Marshal(map[string]string{
		"checksum_base64": base64.StdEncoding.EncodeToString(val), "checksum_hex": hex.EncodeToString(val),
		"checksumAlgorithm": alg, "checksumType": "FULL_OBJECT",
	})
	return row{o: o, ok: true, httpStatus: 200, msg: string(msg)}
}

func failedRow(o object, err error) row {
	r := row{o: o, httpStatus: 500, code: "InternalError", msg: err.Error()}
	var api smithy.APIError
	if errors.As(err, &api) {
		r.code, r.msg = api.ErrorCode(), api.ErrorMessage()
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		r.httpStatus = re.HTTPStatusCode()
	}
	return r
}
