package s3batch_test

import (
	"context"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/s3control"

	"github.com/millfleet/mill/internal/testkit/s3controlstub"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/atrest"
	"github.com/millfleet/mill/pkg/atrest/s3batch"
)

// RoleVar names the role the tests' jobs run as on real AWS: one that
// S3 Batch Operations may assume (the stack's BatchOperationsRoleArn
// output, or a role of the same policy) with read and write access to
// buckets named milltest-*.
const RoleVar = "MILL_TEST_BATCH_ROLE_ARN"

// env is a Checker against the stand-in and the emulator, or, with
// MILL_TEST_REAL_AWS, against S3 Batch Operations itself.
type env struct {
	s3      *s3.Client
	ctl     *s3control.Client
	checker *s3batch.Checker
	stub    *s3controlstub.Server // nil on real AWS
	account string
	role    string
	bucket  string // report bucket, versioned, also holds the objects
	calls   *recorder
}

// recorder is an HTTP client that records the requests it sends.
type recorder struct {
	inner interface {
		Do(*http.Request) (*http.Response, error)
	}
	mu   sync.Mutex
	reqs []string // "METHOD path?query"
}

func (r *recorder) Do(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req.Method+" "+req.URL.EscapedPath()+"?"+req.URL.RawQuery)
	r.mu.Unlock()
	return r.inner.Do(req)
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.reqs...)
}

func newEnv(t *testing.T, o s3controlstub.Options) *env {
	t.Helper()
	cfg := testenv.AWS(t)
	e := &env{s3: cfg.S3(), role: "arn:aws:iam::123456789012:role/mill-batch-operations"}
	if testenv.RealAWS() {
		e.role = os.Getenv(RoleVar)
		if e.role == "" {
			t.Fatalf("%s is set: set %s to the ARN of a role S3 Batch Operations may assume (docs/DEVELOPMENT.md)", testenv.RealAWSVar, RoleVar)
		}
		e.account = os.Getenv(testenv.RealAWSVar)
		e.ctl = cfg.S3Control()
	} else {
		// The stand-in reads the emulator directly, with its own client.
		e.stub = s3controlstub.New(cfg.S3(), o)
		if err := e.stub.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.stub.Close)
		e.account = e.stub.Account()
		e.ctl = cfg.S3Control(func(o *s3control.Options) { o.BaseEndpoint = aws.String(e.stub.URL()) })
	}
	// The checker's own S3 client records every request it makes.
	e.calls = &recorder{}
	checkerS3 := cfg.S3(func(o *s3.Options) { e.calls.inner = o.HTTPClient; o.HTTPClient = e.calls })
	e.checker = s3batch.New(e.ctl, checkerS3, s3batch.Options{AccountID: e.account})
	e.bucket = testenv.Prefix(t) + "atrest"
	ctx := context.Background()
	if _, err := e.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(e.bucket)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, e.s3, e.bucket)
	if _, err := e.s3.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(e.bucket),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	return e
}

// put writes an object and returns its version.
func (e *env) put(t *testing.T, key string, body []byte, class s3types.StorageClass) string {
	t.Helper()
	out, err := e.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(e.bucket), Key: aws.String(key),
		Body: bytesReader(body), StorageClass: class})
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return aws.ToString(out.VersionId)
}

// spec is a job over objs reporting to the env's bucket.
func (e *env) spec(t *testing.T, alg atrest.Algorithm, objs ...atrest.Object) atrest.Spec {
	return atrest.Spec{Objects: objs, Algorithm: alg, ReportBucket: e.bucket, ReportPrefix: "atrest/reports",
		RoleARN: e.role, Priority: 10, Token: "t" + testenv.Unique(), Description: t.Name()}
}

// wait returns the job's status once it is done: the stand-in says when;
// S3 is asked every 10 s for up to 30 minutes.
func (e *env) wait(t *testing.T, id string) atrest.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if e.stub != nil {
		if _, err := e.stub.Wait(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		st, err := e.checker.Describe(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if st.State.Done() {
			return st
		}
		if e.stub != nil {
			t.Fatalf("the stand-in says job %s is done; Describe says %s", id, st.State)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("job %s: not done after 30 minutes (%+v)", id, st)
		}
	}
}

// results collects a job's results and line errors.
func (e *env) results(t *testing.T, id string) (map[atrest.Object]atrest.Result, []error) {
	t.Helper()
	res := map[atrest.Object]atrest.Result{}
	var errs []error
	for r, err := range e.checker.Results(context.Background(), id) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, dup := res[r.Object]; dup {
			t.Fatalf("two results for %+v", r.Object)
		}
		res[r.Object] = r
	}
	return res, errs
}
