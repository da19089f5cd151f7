package s3batch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/s3controlstub"
	"github.com/millfleet/mill/pkg/atrest"
	"github.com/millfleet/mill/pkg/atrest/s3batch"
)

func (e *env) get(t *testing.T, key string) []byte {
	t.Helper()
	out, err := e.s3.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(e.bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer out.Body.Close()
	b, _ := io.ReadAll(out.Body)
	return b
}

func (e *env) write(t *testing.T, key string, b []byte) {
	t.Helper()
	if _, err := e.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(e.bucket), Key: aws.String(key), Body: bytes.NewReader(b)}); err != nil {
		t.Fatal(err)
	}
}

// TestATamperedCompletionReportYieldsNoFalseChecksum rewrites a finished
// job's report in the report bucket, as anyone with write access to it
// could, and checks that nothing Mill did not ask S3 for becomes a
// checksum.
func TestATamperedCompletionReportYieldsNoFalseChecksum(t *testing.T) {
	e := newEnv(t, s3controlstub.Options{})
	objs := fixture(t, e)
	spec := e.spec(t, atrest.MD5)
	for _, o := range objs {
		spec.Objects = append(spec.Objects, o.Object)
	}
	id, err := e.checker.Submit(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if st := e.wait(t, id); st.State != atrest.StateComplete {
		t.Fatalf("status %+v", st)
	}
	mkey := "atrest/reports/job-" + id + "/manifest.json"
	orig := e.get(t, mkey)
	var m map[string]any
	if err := json.Unmarshal(orig, &m); err != nil {
		t.Fatal(err)
	}
	results := m["Results"].([]any)
	first := results[0].(map[string]any)
	rkey := first["Key"].(string)
	lines := strings.Split(strings.TrimSpace(string(e.get(t, rkey))), "\n")
	if len(lines) != len(objs) {
		t.Fatalf("%d report lines for %d objects", len(lines), len(objs))
	}

	t.Run("a results file whose MD5 is not manifest.json's", func(t *testing.T) {
		e.write(t, rkey, []byte(strings.Join(lines, "\n")+"\n"+lines[0]+"\n"))
		res, errs := e.results(t, id)
		if len(res) != 0 || len(errs) != 1 || !strings.Contains(errs[0].Error(), "MD5") {
			t.Fatalf("%v %v", res, errs)
		}
	})

	t.Run("hostile lines with a matching MD5", func(t *testing.T) {
		good := lines[0]
		hostile := []string{
			good,
			strings.Replace(lines[1], `""checksumAlgorithm"":""MD5""`, `""checksumAlgorithm"":""SHA1""`, 1),
			e.bucket + ",not%20asked%20for,,succeeded,200,,\"{\"\"checksum_hex\"\":\"\"acbd18db4cc2f85cedef654fccc4a4d8\"\",\"\"checksumAlgorithm\"\":\"\"MD5\"\"}\"",
			good, // twice
			"garbage",
		}
		body := []byte(strings.Join(hostile, "\n") + "\n")
		e.write(t, rkey, body)
		sum := md5hex(body)
		first["MD5Checksum"] = sum
		mb, _ := json.Marshal(m)
		e.write(t, mkey, mb)
		res, errs := e.results(t, id)
		if len(res) != 1 {
			t.Fatalf("%d results, want only the untouched line's: %v", len(res), res)
		}
		for o, r := range res {
			if !r.OK || r.Checksum != md5hex(objs[indexOf(objs, o)].body) {
				t.Fatalf("the untouched line: %+v", r)
			}
		}
		// lines 2 to 5, and the objects of the dropped lines
		if want := 4 + len(objs) - 2; len(errs) != want {
			t.Fatalf("%d errors, want %d: %v", len(errs), want, errs)
		}
		for _, err := range errs {
			var le *s3batch.LineError
			if !errors.As(err, &le) {
				t.Errorf("not a line error: %v", err)
			}
		}
	})

	t.Run("manifest.json names a file of another job", func(t *testing.T) {
		first["Key"] = "atrest/reports/job-other/results/x.csv"
		mb, _ := json.Marshal(m)
		e.write(t, mkey, mb)
		res, errs := e.results(t, id)
		if len(res) != 0 || len(errs) != 1 || !strings.Contains(errs[0].Error(), "not a results file of this job") {
			t.Fatalf("%v %v", res, errs)
		}
	})

	t.Run("the manifest rewritten since the job was created", func(t *testing.T) {
		e.write(t, mkey, orig)
		e.write(t, rkey, []byte(strings.Join(lines, "\n")+"\n"))
		out, err := e.s3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(e.bucket), Prefix: aws.String("atrest/reports/manifests/")})
		if err != nil || len(out.Contents) != 1 {
			t.Fatalf("manifests: %v %v", out, err)
		}
		mk := aws.ToString(out.Contents[0].Key)
		first := aws.ToString(e.s3Version(t, mk))
		// A new version naming one object: the job's version is read.
		e.write(t, mk, []byte(e.bucket+",hot/plain.txt\n"))
		res, errs := e.results(t, id)
		if len(res) != len(objs) || len(errs) != 0 {
			t.Fatalf("%d results, %v", len(res), errs)
		}
		// The job's version gone: no results.
		if _, err := e.s3.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(e.bucket), Key: aws.String(mk), VersionId: aws.String(first)}); err != nil {
			t.Fatal(err)
		}
		res, errs = e.results(t, id)
		if len(res) != 0 || len(errs) != 1 || !strings.Contains(errs[0].Error(), "read manifest") {
			t.Fatalf("%v %v", res, errs)
		}
	})
}

// s3Version returns the oldest version of key.
func (e *env) s3Version(t *testing.T, key string) *string {
	t.Helper()
	out, err := e.s3.ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{Bucket: aws.String(e.bucket), Prefix: aws.String(key)})
	if err != nil || len(out.Versions) == 0 {
		t.Fatalf("versions of %s: %v", key, err)
	}
	return out.Versions[len(out.Versions)-1].VersionId
}

func indexOf(objs []object, o atrest.Object) int {
	for i := range objs {
		if objs[i].Object == o {
			return i
		}
	}
	return -1
}
