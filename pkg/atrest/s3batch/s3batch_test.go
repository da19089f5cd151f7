package s3batch_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/s3control"
	ctltypes "github.com/aws/aws-sdk-go-v2/service/s3control/types"

	"github.com/millfleet/mill/internal/testkit/s3controlstub"
	"github.com/millfleet/mill/pkg/atrest"
	"github.com/millfleet/mill/pkg/atrest/s3batch"
	"github.com/millfleet/mill/pkg/storage"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

func md5hex(b []byte) string { s := md5.Sum(b); return hex.EncodeToString(s[:]) }

func crc(b []byte) string {
	return storage.CRC64NVMEBase64(storage.UpdateCRC64NVME(0, b))
}

// object is a test object and its bytes.
type object struct {
	atrest.Object
	body []byte
}

// fixture writes hot, Glacier and Deep Archive objects with keys that need
// URL-encoding, and an old version of a versioned key.
func fixture(t *testing.T, e *env) []object {
	var objs []object
	add := func(key string, class s3types.StorageClass, body string) string {
		v := e.put(t, key, []byte(body), class)
		objs = append(objs, object{atrest.Object{Bucket: e.bucket, Key: key}, []byte(body)})
		return v
	}
	add("hot/plain.txt", s3types.StorageClassStandard, "hot bytes")
	add("cold/a b+c=d,e.bin", s3types.StorageClassGlacier, "glacier bytes, with a comma")
	add("deep/é ü/ファイル 100%.txt", s3types.StorageClassDeepArchive, "deep archive bytes")
	// Both versions of a key, by version ID: moto restores only an
	// object's current version, so the old one is hot.
	old := e.put(t, "deep/versioned", []byte("the first version"), s3types.StorageClassStandard)
	cur := e.put(t, "deep/versioned", []byte("the second version"), s3types.StorageClassDeepArchive)
	if old == "" || cur == "" || old == cur {
		t.Fatalf("a versioned bucket gave versions %q and %q", old, cur)
	}
	objs = append(objs, object{atrest.Object{Bucket: e.bucket, Key: "deep/versioned", VersionID: old}, []byte("the first version")},
		object{atrest.Object{Bucket: e.bucket, Key: "deep/versioned", VersionID: cur}, []byte("the second version")})
	return objs
}

func TestComputeChecksumOfEveryStorageClass(t *testing.T) {
	e := newEnv(t, s3controlstub.Options{})
	objs := fixture(t, e)
	missing := atrest.Object{Bucket: e.bucket, Key: "gone/never written"}
	for _, alg := range []atrest.Algorithm{atrest.MD5, atrest.CRC64NVME} {
		t.Run(string(alg), func(t *testing.T) {
			spec := e.spec(t, alg, missing)
			for _, o := range objs {
				spec.Objects = append(spec.Objects, o.Object)
			}
			id, err := e.checker.Submit(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			again, err := e.checker.Submit(context.Background(), spec)
			if err != nil || again != id {
				t.Fatalf("the same token made job %q (%v), the first was %s", again, err, id)
			}
			st := e.wait(t, id)
			if st.State != atrest.StateComplete || st.Total != int64(len(spec.Objects)) || st.Succeeded != int64(len(objs)) || st.Failed != 1 || st.Finished.IsZero() || st.Reason != "" {
				t.Fatalf("status %+v", st)
			}
			res, errs := e.results(t, id)
			if len(errs) != 0 {
				t.Fatalf("line errors: %v", errs)
			}
			if len(res) != len(spec.Objects) {
				t.Fatalf("%d results for %d objects", len(res), len(spec.Objects))
			}
			for _, o := range objs {
				r := res[o.Object]
				want := md5hex(o.body)
				if alg == atrest.CRC64NVME {
					want = crc(o.body)
				}
				if !r.OK || r.Algorithm != alg || r.Checksum != want || r.Error != "" {
					t.Errorf("%q (version %q): %+v, want %s %s", o.Key, o.VersionID, r, alg, want)
				}
			}
			// The stand-in's own tests pin the error code (NoSuchKey).
			if r := res[missing]; r.OK || r.Checksum != "" || r.Error == "" {
				t.Errorf("a missing object: %+v", r)
			}
			// Mill read no object and restored none: it wrote the manifest
			// and read the report, under the report prefix only.
			puts, gets := 0, 0
			for _, req := range e.calls.requests() {
				if !strings.Contains(req, "/atrest/reports/") || strings.Contains(req, "restore") {
					t.Errorf("the checker sent %s", req)
				}
				puts += strings.Count(req[:4], "PUT")
				gets += strings.Count(req[:4], "GET")
			}
			if puts == 0 || gets < 3 {
				t.Errorf("the checker's client recorded %d PUTs and %d GETs: the recorder sees nothing", puts, gets)
			}
		})
	}
}

func TestACancelledJobIsReportedAndHasNoResults(t *testing.T) {
	e := newEnv(t, s3controlstub.Options{Hold: true})
	objs := fixture(t, e)
	id, err := e.checker.Submit(context.Background(), e.spec(t, atrest.MD5, objs[0].Object, objs[1].Object))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := e.checker.Describe(context.Background(), id); err != nil || st.State != atrest.StateActive || st.State.Done() {
		t.Fatalf("a held job: %+v, %v", st, err)
	}
	if _, err := e.ctl.UpdateJobStatus(context.Background(), &s3control.UpdateJobStatusInput{AccountId: aws.String(e.account),
		JobId: aws.String(id), RequestedJobStatus: ctltypes.RequestedJobStatusCancelled, StatusUpdateReason: aws.String("the test cancels")}); err != nil {
		t.Fatal(err)
	}
	st := e.wait(t, id)
	if st.State != atrest.StateCancelled || st.Succeeded != 0 || !strings.Contains(st.Reason, "the test cancels") {
		t.Fatalf("status %+v", st)
	}
	res, errs := e.results(t, id)
	if len(res) != 0 || len(errs) != 1 || !strings.Contains(errs[0].Error(), "no completion report") {
		t.Fatalf("results of a cancelled job: %v, %v", res, errs)
	}
}

func TestAFailedJobIsReportedWithItsReason(t *testing.T) {
	e := newEnv(t, s3controlstub.Options{})
	objs := fixture(t, e)
	// A job whose manifest is not what it names (another ETag) fails.
	body, fields := s3batch.EncodeManifest([]atrest.Object{objs[0].Object})
	ctx := context.Background()
	if _, err := e.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(e.bucket), Key: aws.String("manifests/bad.csv"), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	out, err := e.ctl.CreateJob(ctx, &s3control.CreateJobInput{
		AccountId: aws.String(e.account), ClientRequestToken: aws.String("bad-etag"), ConfirmationRequired: aws.Bool(false),
		Operation: &ctltypes.JobOperation{S3ComputeObjectChecksum: &ctltypes.S3ComputeObjectChecksumOperation{
			ChecksumAlgorithm: ctltypes.ComputeObjectChecksumAlgorithmMd5, ChecksumType: ctltypes.ComputeObjectChecksumTypeFullObject}},
		Manifest: &ctltypes.JobManifest{Spec: &ctltypes.JobManifestSpec{Format: s3batch.ManifestFormat, Fields: fields},
			Location: &ctltypes.JobManifestLocation{ObjectArn: aws.String("arn:aws:s3:::" + e.bucket + "/manifests/bad.csv"), ETag: aws.String("0123456789abcdef0123456789abcdef")}},
		Report: &ctltypes.JobReport{Enabled: true, Format: s3batch.ReportFormat, ReportScope: ctltypes.JobReportScopeAllTasks,
			Bucket: aws.String("arn:aws:s3:::" + e.bucket), Prefix: aws.String("atrest/reports")},
		RoleArn: aws.String(e.role), Priority: aws.Int32(1),
	})
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(out.JobId)
	st := e.wait(t, id)
	if st.State != atrest.StateFailed || st.Reason == "" || st.Succeeded != 0 {
		t.Fatalf("status %+v", st)
	}
	res, errs := e.results(t, id)
	if len(res) != 0 || len(errs) != 1 || !strings.Contains(errs[0].Error(), "manifest") {
		t.Fatalf("results of a failed job: %v, %v", res, errs)
	}
	var le *s3batch.LineError
	if errors.As(errs[0], &le) {
		t.Fatalf("a job without a report is not a line error: %v", errs[0])
	}
}
