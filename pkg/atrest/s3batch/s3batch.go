package s3batch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3control"
	ctltypes "github.com/aws/aws-sdk-go-v2/service/s3control/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"

	"github.com/millfleet/mill/pkg/atrest"
)

// Formats of the manifest and the completion report, as CreateJob names
// them.
const (
	ManifestFormat = "S3BatchOperations_CSV_20180820"
	ReportFormat   = "Report_CSV_20180820"
)

// Options configure a Checker.
type Options struct {
	// AccountID is the 12-digit account that owns the jobs; empty means
	// the caller's account (STS GetCallerIdentity, asked once).
	AccountID string
	// STS answers GetCallerIdentity when AccountID is empty.
	STS *sts.Client
	// Partition of the ARNs Mill builds ("aws" when empty).
	Partition string
}

// Checker runs Compute checksum jobs with S3 Batch Operations. It keeps no
// state of its own: everything Results needs comes from DescribeJob, so a
// job submitted by one process can be read by another.
type Checker struct {
	ctl *s3control.Client
	s3  *s3.Client
	o   Options

	mu      sync.Mutex
	account string
}

var _ atrest.Checker = (*Checker)(nil)

// New returns a Checker that creates jobs with ctl and writes manifests to
// and reads reports from the report bucket with s3c.
func New(ctl *s3control.Client, s3c *s3.Client, o Options) *Checker {
	if o.Partition == "" {
		o.Partition = "aws"
	}
	return &Checker{ctl: ctl, s3: s3c, o: o}
}

var (
	accountRE = regexp.MustCompile(`^[0-9]{12}$`)
	tokenRE   = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	jobIDRE   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// Account returns the account the jobs belong to.
func (c *Checker) Account(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.account != "" {
		return c.account, nil
	}
	a := c.o.AccountID
	if a == "" {
		if c.o.STS == nil {
			return "", errors.New("s3batch: no account ID set and no STS client to ask")
		}
		out, err := c.o.STS.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
		if err != nil {
			return "", fmt.Errorf("s3batch: which account (sts GetCallerIdentity): %w", err)
		}
		a = aws.ToString(out.Account)
	}
	if !accountRE.MatchString(a) {
		return "", fmt.Errorf("s3batch: account ID %q is not 12 digits", a)
	}
	c.account = a
	return a, nil
}

// validate checks a Spec before anything is written.
func validate(s atrest.Spec) error {
	switch {
	case len(s.Objects) == 0:
		return errors.New("s3batch: a job needs at least one object")
	case s.Algorithm != atrest.MD5 && s.Algorithm != atrest.CRC64NVME:
		return fmt.Errorf("s3batch: algorithm %q: want %s or %s", s.Algorithm, atrest.MD5, atrest.CRC64NVME)
	case s.ReportBucket == "":
		return errors.New("s3batch: no report bucket")
	case s.RoleARN == "" || !strings.HasPrefix(s.RoleARN, "arn:"):
		return fmt.Errorf("s3batch: role %q is not an ARN", s.RoleARN)
	case !tokenRE.MatchString(s.Token):
		return fmt.Errorf("s3batch: token %q: want 1 to 64 of A-Z a-z 0-9 _ . -", s.Token)
	case s.Priority < 0:
		return fmt.Errorf("s3batch: priority %d is negative", s.Priority)
	case strings.Contains(s.ReportPrefix, "//") || strings.Contains("/"+s.ReportPrefix+"/", "/../"):
		return fmt.Errorf("s3batch: report prefix %q", s.ReportPrefix)
	}
	for i, o := range s.Objects {
		if o.Bucket == "" || o.Key == "" {
			return fmt.Errorf("s3batch: object %d has no bucket or key", i)
		}
	}
	return nil
}

// prefix returns the report prefix without leading or trailing slashes.
func prefix(p string) string { return strings.Trim(p, "/") }

// under joins a key to a prefix.
func under(p, rest string) string {
	if p == "" {
		return rest
	}
	return p + "/" + rest
}

func (c *Checker) bucketARN(b string) string { return "arn:" + c.o.Partition + ":s3:::" + b }

// Submit writes the manifest and creates the job.
func (c *Checker) Submit(ctx context.Context, s atrest.Spec) (string, error) {
	if err := validate(s); err != nil {
		return "", err
	}
	account, err := c.Account(ctx)
	if err != nil {
		return "", err
	}
	body, fields := EncodeManifest(s.Objects)
	sum := sha256.Sum256(body)
	p := prefix(s.ReportPrefix)
	key := under(p, "manifests/"+s.Token+"-"+hex.EncodeToString(sum[:8])+".csv")
	etag, version, err := c.writeManifest(ctx, s.ReportBucket, key, body)
	if err != nil {
		return "", err
	}
	desc := s.Description
	if len(desc) > 256 {
		desc = strings.ToValidUTF8(desc[:256], "")
	}
	in := &s3control.CreateJobInput{
		AccountId:            aws.String(account),
		ClientRequestToken:   aws.String(s.Token),
		ConfirmationRequired: aws.Bool(false),
		Operation: &ctltypes.JobOperation{S3ComputeObjectChecksum: &ctltypes.S3ComputeObjectChecksumOperation{
			ChecksumAlgorithm: ctltypes.ComputeObjectChecksumAlgorithm(s.Algorithm),
			ChecksumType:      ctltypes.ComputeObjectChecksumTypeFullObject,
		}},
		Manifest: &ctltypes.JobManifest{
			Spec:     &ctltypes.JobManifestSpec{Format: ManifestFormat, Fields: fields},
			Location: &ctltypes.JobManifestLocation{ObjectArn: aws.String(c.bucketARN(s.ReportBucket) + "/" + key), ETag: aws.String(etag)},
		},
		Report: &ctltypes.JobReport{
			Enabled: true, Format: ReportFormat, ReportScope: ctltypes.JobReportScopeAllTasks,
			Bucket: aws.String(c.bucketARN(s.ReportBucket)),
		},
		RoleArn:  aws.String(s.RoleARN),
		Priority: aws.Int32(s.Priority),
	}
	if version != "" && version != "null" {
		in.Manifest.Location.ObjectVersionId = aws.String(version)
	}
	if p != "" {
		in.Report.Prefix = aws.String(p)
	}
	if desc != "" {
		in.Description = aws.String(desc)
	}
	out, err := c.ctl.CreateJob(ctx, in)
	if err != nil {
		return "", fmt.Errorf("s3batch: create job: %w", err)
	}
	id := aws.ToString(out.JobId)
	if !jobIDRE.MatchString(id) {
		return "", fmt.Errorf("s3batch: create job: the answer's job ID %q is not one", id)
	}
	return id, nil
}

// writeManifest writes a manifest once: its key names its content, so
// when the key exists (a Submit repeated after its CreateJob answer was
// lost) the object there is this manifest, and its ETag and version are
// the ones the first CreateJob named. Writing it again would make a new
// version, and CreateJob with the same token but another manifest version
// is another request.
func (c *Checker) writeManifest(ctx context.Context, bucket, key string, body []byte) (etag, version string, err error) {
	put, err := c.s3.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), IfNoneMatch: aws.String("*"),
		Body: bytes.NewReader(body), ContentType: aws.String("text/csv"),
	})
	var api smithy.APIError
	switch {
	case err == nil:
		etag, version = aws.ToString(put.ETag), aws.ToString(put.VersionId)
	case errors.As(err, &api) && api.ErrorCode() == "PreconditionFailed":
		head, herr := c.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if herr != nil {
			return "", "", fmt.Errorf("s3batch: manifest s3://%s/%s exists but cannot be read: %w", bucket, key, herr)
		}
		if aws.ToInt64(head.ContentLength) != int64(len(body)) {
			return "", "", fmt.Errorf("s3batch: manifest s3://%s/%s exists with %d bytes, not this manifest's %d", bucket, key, aws.ToInt64(head.ContentLength), len(body))
		}
		etag, version = aws.ToString(head.ETag), aws.ToString(head.VersionId)
	default:
		return "", "", fmt.Errorf("s3batch: write manifest s3://%s/%s: %w", bucket, key, err)
	}
	etag = strings.Trim(etag, `"`)
	if etag == "" {
		return "", "", fmt.Errorf("s3batch: write manifest s3://%s/%s: no ETag", bucket, key)
	}
	return etag, version, nil
}
