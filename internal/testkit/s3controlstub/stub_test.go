package s3controlstub_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/s3control"
	ctltypes "github.com/aws/aws-sdk-go-v2/service/s3control/types"
	"github.com/aws/smithy-go"

	"github.com/millfleet/mill/internal/testkit/s3controlstub"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/storage"
)

type fx struct {
	s3     *s3.Client
	ctl    *s3control.Client
	stub   *s3controlstub.Server
	bucket string
	etag   string // of the manifest at manifests/m.csv
}

func setup(t *testing.T, o s3controlstub.Options) *fx {
	t.Helper()
	if testenv.RealAWS() {
		t.Skip("the stand-in's own tests run against the emulator only")
	}
	cfg := testenv.AWS(t)
	f := &fx{s3: cfg.S3(), stub: s3controlstub.New(cfg.S3(), o)}
	if err := f.stub.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.stub.Close)
	testenv.RequireLoopback(t, "the stand-in", f.stub.URL())
	f.ctl = cfg.S3Control(func(o *s3control.Options) { o.BaseEndpoint = aws.String(f.stub.URL()) })
	f.bucket = testenv.Prefix(t) + "stub"
	ctx := context.Background()
	if _, err := f.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(f.bucket)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, f.s3, f.bucket)
	f.put(t, "data/hot one", "hot", s3types.StorageClassStandard)
	f.put(t, "data/cold+1", "cold", s3types.StorageClassGlacier)
	f.etag = f.put(t, "manifests/m.csv", f.bucket+",data/hot%20one\n"+f.bucket+",data/cold%2B1\n"+f.bucket+",data/missing\n", "")
	return f
}

func (f *fx) put(t *testing.T, key, body string, class s3types.StorageClass) string {
	t.Helper()
	out, err := f.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(f.bucket), Key: aws.String(key), Body: strings.NewReader(body), StorageClass: class})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Trim(aws.ToString(out.ETag), `"`)
}

func (f *fx) input(token string) *s3control.CreateJobInput {
	return &s3control.CreateJobInput{
		AccountId: aws.String(f.stub.Account()), ClientRequestToken: aws.String(token), ConfirmationRequired: aws.Bool(false),
		Operation: &ctltypes.JobOperation{S3ComputeObjectChecksum: &ctltypes.S3ComputeObjectChecksumOperation{
			ChecksumAlgorithm: ctltypes.ComputeObjectChecksumAlgorithmCrc64nvme, ChecksumType: ctltypes.ComputeObjectChecksumTypeFullObject}},
		Manifest: &ctltypes.JobManifest{
			Spec:     &ctltypes.JobManifestSpec{Format: ctltypes.JobManifestFormatS3BatchOperationsCsv20180820, Fields: []ctltypes.JobManifestFieldName{"Bucket", "Key"}},
			Location: &ctltypes.JobManifestLocation{ObjectArn: aws.String("arn:aws:s3:::" + f.bucket + "/manifests/m.csv"), ETag: aws.String(f.etag)}},
		Report: &ctltypes.JobReport{Enabled: true, Format: ctltypes.JobReportFormatReportCsv20180820, ReportScope: ctltypes.JobReportScopeAllTasks,
			Bucket: aws.String("arn:aws:s3:::" + f.bucket), Prefix: aws.String("reports")},
		RoleArn: aws.String("arn:aws:iam::123456789012:role/batch"), Priority: aws.Int32(5), Description: aws.String("stand-in test"),
	}
}

func (f *fx) create(t *testing.T, in *s3control.CreateJobInput) string {
	t.Helper()
	out, err := f.ctl.CreateJob(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.JobId)
}

func (f *fx) describe(t *testing.T, id string) *ctltypes.JobDescriptor {
	t.Helper()
	out, err := f.ctl.DescribeJob(context.Background(), &s3control.DescribeJobInput{AccountId: aws.String(f.stub.Account()), JobId: aws.String(id)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Job
}

func (f *fx) wait(t *testing.T, id string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := f.stub.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func (f *fx) get(t *testing.T, key string) []byte {
	t.Helper()
	out, err := f.s3.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(f.bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer out.Body.Close()
	b, _ := io.ReadAll(out.Body)
	return b
}

func code(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

func TestAJobComputesChecksumsAndWritesTheDocumentedReport(t *testing.T) {
	f := setup(t, s3controlstub.Options{})
	id := f.create(t, f.input("tok-1"))
	if st := f.wait(t, id); st != "Complete" {
		t.Fatalf("status %s", st)
	}
	j := f.describe(t, id)
	p := j.ProgressSummary
	if j.Status != ctltypes.JobStatusComplete || aws.ToInt64(p.TotalNumberOfTasks) != 3 || aws.ToInt64(p.NumberOfTasksSucceeded) != 2 ||
		aws.ToInt64(p.NumberOfTasksFailed) != 1 || j.TerminationDate == nil || j.CreationTime == nil || aws.ToString(j.Description) != "stand-in test" ||
		j.Priority != 5 || j.Operation.S3ComputeObjectChecksum.ChecksumAlgorithm != "CRC64NVME" || aws.ToString(j.Report.Prefix) != "reports" ||
		aws.ToString(j.Manifest.Location.ETag) != f.etag || !strings.HasSuffix(aws.ToString(j.JobArn), ":job/"+id) {
		t.Fatalf("descriptor %+v / %+v", j, p)
	}
	var m struct {
		Format, ReportSchema string
		Results              []struct{ TaskExecutionStatus, Bucket, MD5Checksum, Key string }
	}
	if err := json.Unmarshal(f.get(t, "reports/job-"+id+"/manifest.json"), &m); err != nil {
		t.Fatal(err)
	}
	if m.Format != "Report_CSV_20180820" || len(m.Results) != 2 || m.ReportSchema == "" {
		t.Fatalf("manifest.json %+v", m)
	}
	lines := map[string]string{}
	for _, r := range m.Results {
		b := f.get(t, r.Key)
		if !strings.HasPrefix(r.Key, "reports/job-"+id+"/results/") || r.Bucket != f.bucket || md5hex(b) != r.MD5Checksum {
			t.Fatalf("result file %+v", r)
		}
		lines[r.TaskExecutionStatus] = string(b)
	}
	hot := storage.CRC64NVMEBase64(storage.UpdateCRC64NVME(0, []byte("hot")))
	cold := storage.CRC64NVMEBase64(storage.UpdateCRC64NVME(0, []byte("cold")))
	for _, want := range []string{f.bucket + ",data/hot%20one,,succeeded,200,,", `""checksum_base64"":""` + hot + `""`, f.bucket + ",data/cold%2B1,,succeeded,200,,",
		`""checksum_base64"":""` + cold + `""`, `""checksumAlgorithm"":""CRC64NVME""`, `""checksumType"":""FULL_OBJECT""`} {
		if !strings.Contains(lines["succeeded"], want) {
			t.Errorf("the succeeded report lacks %s:\n%s", want, lines["succeeded"])
		}
	}
	if !strings.HasPrefix(lines["failed"], f.bucket+",data/missing,,failed,404,NoSuchKey,") {
		t.Errorf("the failed report:\n%s", lines["failed"])
	}
}

func md5hex(b []byte) string {
	s := storage.NewSums()
	s.Write(b)
	return s.MD5()
}

func TestCreateJobIsIdempotentPerToken(t *testing.T) {
	f := setup(t, s3controlstub.Options{Hold: true})
	id := f.create(t, f.input("same"))
	if again := f.create(t, f.input("same")); again != id {
		t.Fatalf("the same request and token made job %s, then %s", id, again)
	}
	other := f.input("same")
	other.Priority = aws.Int32(6)
	if _, err := f.ctl.CreateJob(context.Background(), other); code(err) != "IdempotencyException" {
		t.Fatalf("another request with the same token: %v", err)
	}
	second := f.create(t, f.input("another"))
	out, err := f.ctl.ListJobs(context.Background(), &s3control.ListJobsInput{AccountId: aws.String(f.stub.Account())})
	if err != nil || len(out.Jobs) != 2 {
		t.Fatalf("list: %+v, %v", out, err)
	}
	page, err := f.ctl.ListJobs(context.Background(), &s3control.ListJobsInput{AccountId: aws.String(f.stub.Account()), MaxResults: aws.Int32(1)})
	if err != nil || len(page.Jobs) != 1 || page.NextToken == nil {
		t.Fatalf("page 1: %+v, %v", page, err)
	}
	rest, err := f.ctl.ListJobs(context.Background(), &s3control.ListJobsInput{AccountId: aws.String(f.stub.Account()), MaxResults: aws.Int32(1), NextToken: page.NextToken})
	if err != nil || len(rest.Jobs) != 1 || rest.NextToken != nil || aws.ToString(rest.Jobs[0].JobId) == aws.ToString(page.Jobs[0].JobId) {
		t.Fatalf("page 2: %+v, %v", rest, err)
	}
	if _, err := f.ctl.UpdateJobStatus(context.Background(), &s3control.UpdateJobStatusInput{AccountId: aws.String(f.stub.Account()), JobId: aws.String(second),
		RequestedJobStatus: ctltypes.RequestedJobStatusCancelled}); err != nil {
		t.Fatal(err)
	}
	if st := f.wait(t, second); st != "Cancelled" {
		t.Fatalf("cancelled job: %s", st)
	}
	f.stub.Release(id)
	if st := f.wait(t, id); st != "Complete" {
		t.Fatalf("released job: %s", st)
	}
	done, err := f.ctl.ListJobs(context.Background(), &s3control.ListJobsInput{AccountId: aws.String(f.stub.Account()), JobStatuses: []ctltypes.JobStatus{ctltypes.JobStatusCancelled}})
	if err != nil || len(done.Jobs) != 1 || aws.ToString(done.Jobs[0].JobId) != second || done.Jobs[0].Operation != ctltypes.OperationNameS3ComputeObjectChecksum {
		t.Fatalf("cancelled jobs: %+v, %v", done, err)
	}
	if _, err := f.ctl.UpdateJobStatus(context.Background(), &s3control.UpdateJobStatusInput{AccountId: aws.String(f.stub.Account()), JobId: aws.String(id),
		RequestedJobStatus: ctltypes.RequestedJobStatusCancelled}); code(err) != "JobStatusException" {
		t.Fatalf("cancelling a complete job: %v", err)
	}
}

func TestAConfirmationRequiredJobWaitsSuspended(t *testing.T) {
	f := setup(t, s3controlstub.Options{})
	in := f.input("confirm")
	in.ConfirmationRequired = aws.Bool(true)
	id := f.create(t, in)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := f.stub.WaitFor(ctx, id, "Suspended"); err != nil {
		t.Fatal(err)
	}
	if j := f.describe(t, id); j.SuspendedDate == nil || aws.ToString(j.SuspendedCause) == "" || !aws.ToBool(j.ConfirmationRequired) {
		t.Fatalf("suspended: %+v", j)
	}
	out, err := f.ctl.UpdateJobStatus(ctx, &s3control.UpdateJobStatusInput{AccountId: aws.String(f.stub.Account()), JobId: aws.String(id), RequestedJobStatus: ctltypes.RequestedJobStatusReady})
	if err != nil || out.Status != ctltypes.JobStatusReady {
		t.Fatalf("confirm: %+v, %v", out, err)
	}
	if st := f.wait(t, id); st != "Complete" {
		t.Fatalf("status %s", st)
	}
}

func TestJobsFailWithAReason(t *testing.T) {
	f := setup(t, s3controlstub.Options{})
	missing := f.input("no-manifest")
	missing.Manifest.Location.ObjectArn = aws.String("arn:aws:s3:::" + f.bucket + "/manifests/none.csv")
	etag := f.input("etag")
	etag.Manifest.Location.ETag = aws.String("ffffffffffffffffffffffffffffffff")
	badCSV := f.input("bad-csv")
	badCSV.Manifest.Location.ETag = aws.String(f.put(t, "manifests/bad.csv", "one,two,three\n", ""))
	badCSV.Manifest.Location.ObjectArn = aws.String("arn:aws:s3:::" + f.bucket + "/manifests/bad.csv")
	noReport := f.input("no-report")
	noReport.Report.Bucket = aws.String("arn:aws:s3:::" + f.bucket + "-none")
	for want, in := range map[string]*s3control.CreateJobInput{
		"ManifestReadFailed": missing, "ManifestETagMismatch": etag, "ManifestInvalid": badCSV, "ReportBucketUnreachable": noReport,
	} {
		id := f.create(t, in)
		if st := f.wait(t, id); st != "Failed" {
			t.Errorf("%s: status %s", want, st)
			continue
		}
		j := f.describe(t, id)
		if len(j.FailureReasons) != 1 || aws.ToString(j.FailureReasons[0].FailureCode) != want || aws.ToString(j.FailureReasons[0].FailureReason) == "" || j.TerminationDate == nil {
			t.Errorf("%s: %+v", want, j.FailureReasons)
		}
	}
}

func TestRequestsOutsideTheReferenceAreRefused(t *testing.T) {
	f := setup(t, s3controlstub.Options{})
	ctx := context.Background()
	if _, err := f.ctl.DescribeJob(ctx, &s3control.DescribeJobInput{AccountId: aws.String(f.stub.Account()), JobId: aws.String("nope")}); code(err) != "NotFoundException" {
		t.Errorf("unknown job: %v", err)
	}
	var nf *ctltypes.NotFoundException
	if _, err := f.ctl.DescribeJob(ctx, &s3control.DescribeJobInput{AccountId: aws.String(f.stub.Account()), JobId: aws.String("nope")}); !errors.As(err, &nf) {
		t.Errorf("unknown job: not the SDK's NotFoundException: %v", err)
	}
	other := f.input("other-account")
	other.AccountId = aws.String("210987654321")
	if _, err := f.ctl.CreateJob(ctx, other); code(err) != "AccessDenied" {
		t.Errorf("another account: %v", err)
	}
	tagging := f.input("tagging")
	tagging.Operation = &ctltypes.JobOperation{S3PutObjectTagging: &ctltypes.S3SetObjectTaggingOperation{}}
	if _, err := f.ctl.CreateJob(ctx, tagging); code(err) != "BadRequestException" {
		t.Errorf("another operation: %v", err)
	}
	composite := f.input("composite")
	composite.Operation.S3ComputeObjectChecksum.ChecksumType = ctltypes.ComputeObjectChecksumTypeComposite
	if _, err := f.ctl.CreateJob(ctx, composite); code(err) != "BadRequestException" {
		t.Errorf("a composite checksum: %v", err)
	}
	fields := f.input("fields")
	fields.Manifest.Spec.Fields = []ctltypes.JobManifestFieldName{"Key", "Bucket"}
	if _, err := f.ctl.CreateJob(ctx, fields); code(err) != "BadRequestException" {
		t.Errorf("fields out of order: %v", err)
	}
	out, err := f.ctl.ListJobs(ctx, &s3control.ListJobsInput{AccountId: aws.String(f.stub.Account())})
	if err != nil || len(out.Jobs) != 0 {
		t.Errorf("refused requests made jobs: %+v, %v", out, err)
	}
}
