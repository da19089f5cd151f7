package s3batch

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3control"
	ctltypes "github.com/aws/aws-sdk-go-v2/service/s3control/types"

	"github.com/millfleet/mill/pkg/atrest"
	"github.com/millfleet/mill/pkg/awsconfig"
)

func TestKeysRoundTripThroughTheManifest(t *testing.T) {
	keys := []string{"plain", "a b", "a+b", "a%2Bb", "comma,key", "quote\"key", "é/ü/ファイル", "new\nline", "~._-/x", "%"}
	var objs []atrest.Object
	for i, k := range keys {
		o := atrest.Object{Bucket: "b", Key: k}
		if i%2 == 0 {
			o.VersionID = "v" + k[:1]
		}
		objs = append(objs, o)
	}
	body, fields := EncodeManifest(objs)
	if len(fields) != 3 {
		t.Fatalf("fields %v", fields)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		if strings.ContainsAny(line, " +\"") || strings.Count(line, ",") != 2 {
			t.Errorf("manifest line %q: a key is not fully encoded", line)
		}
	}
	back, err := DecodeManifest(strings.NewReader(string(body)), fields)
	if err != nil {
		t.Fatal(err)
	}
	for i := range objs {
		if back[i] != objs[i] {
			t.Errorf("%+v read back as %+v", objs[i], back[i])
		}
		// Either URL decoding reads the key back.
		if p, err := url.PathUnescape(EncodeKey(objs[i].Key)); err != nil || p != objs[i].Key {
			t.Errorf("%q: path-unescaped %q, %v", objs[i].Key, p, err)
		}
	}
	if _, fields := EncodeManifest(objs[1:2]); len(fields) != 2 {
		t.Errorf("no version: fields %v", fields)
	}
}

func TestEveryDocumentedJobStatusMaps(t *testing.T) {
	done := map[ctltypes.JobStatus]atrest.State{
		ctltypes.JobStatusComplete: atrest.StateComplete, ctltypes.JobStatusFailed: atrest.StateFailed,
		ctltypes.JobStatusCancelled: atrest.StateCancelled,
	}
	for _, s := range ctltypes.JobStatus("").Values() {
		got, ok := State(s)
		want, isDone := done[s]
		if !isDone {
			want = atrest.StateActive
		}
		if !ok || got != want {
			t.Errorf("%s: %q, %v; want %s", s, got, ok, want)
		}
	}
	if _, ok := State("Exploded"); ok {
		t.Error("an undocumented status maps")
	}
	j := &ctltypes.JobDescriptor{JobId: aws.String("j"), Status: "Exploded"}
	if _, err := status(j); err == nil {
		t.Error("Describe accepts an undocumented status")
	}
}

func TestSpecsAreValidatedBeforeAnythingIsWritten(t *testing.T) {
	good := atrest.Spec{Objects: []atrest.Object{{Bucket: "b", Key: "k"}}, Algorithm: atrest.MD5, ReportBucket: "r",
		RoleARN: "arn:aws:iam::123456789012:role/x", Token: "tok-1"}
	if err := validate(good); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*atrest.Spec){
		"no objects":    func(s *atrest.Spec) { s.Objects = nil },
		"algorithm":     func(s *atrest.Spec) { s.Algorithm = "SHA256" },
		"report bucket": func(s *atrest.Spec) { s.ReportBucket = "" },
		"role":          func(s *atrest.Spec) { s.RoleARN = "mill-role" },
		"token":         func(s *atrest.Spec) { s.Token = "a/b" },
		"long token":    func(s *atrest.Spec) { s.Token = strings.Repeat("x", 65) },
		"priority":      func(s *atrest.Spec) { s.Priority = -1 },
		"prefix":        func(s *atrest.Spec) { s.ReportPrefix = "a/../b" },
		"object no key": func(s *atrest.Spec) { s.Objects = []atrest.Object{{Bucket: "b"}} },
		"object no bkt": func(s *atrest.Spec) { s.Objects = []atrest.Object{{Key: "k"}} },
	} {
		s := good
		mod(&s)
		if err := validate(s); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// report parses lines against a manifest of two objects.
func report(t *testing.T, alg atrest.Algorithm, csv string) ([]atrest.Result, []error, map[atrest.Object]bool) {
	t.Helper()
	pending := map[atrest.Object]bool{
		{Bucket: "b", Key: "a b+c"}:             false,
		{Bucket: "b", Key: "v", VersionID: "1"}: false,
		{Bucket: "b", Key: "cur"}:               false,
	}
	var res []atrest.Result
	var errs []error
	err := parseReport(strings.NewReader(csv), "s3://r/f.csv", alg, pending, func(r atrest.Result, err error) bool {
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("not a line error: %v", err)
			}
			if r.OK || r.Checksum != "" || r.Algorithm != "" {
				t.Fatalf("a line error carries a checksum: %+v", r)
			}
			errs = append(errs, err)
			return true
		}
		res = append(res, r)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return res, errs, pending
}

const md5Msg = `"{""checksum_base64"":""rL0Y20zC+Fzt72VPzMSk2A=="",""checksum_hex"":""acbd18db4cc2f85cedef654fccc4a4d8"",""checksumAlgorithm"":""MD5"",""checksumType"":""FULL_OBJECT""}"`

func TestAGoodReportYieldsChecksums(t *testing.T) {
	res, errs, pending := report(t, atrest.MD5, ""+
		"b,a%20b%2Bc,,succeeded,200,,"+md5Msg+"\n"+
		"b,v,1,failed,403,AccessDenied,Access Denied\n"+
		// A line of the documented schema's order (ErrorCode first), hex only,
		// and the current version's ID for a manifest line without one.
		`b,cur,7,succeeded,,200,"{""checksum_hex"":""ACBD18DB4CC2F85CEDEF654FCCC4A4D8"",""checksumAlgorithm"":""MD5""}"`+"\n")
	if len(errs) != 0 || len(res) != 3 {
		t.Fatalf("results %+v, errors %v", res, errs)
	}
	if r := res[0]; !r.OK || r.Key != "a b+c" || r.Checksum != "acbd18db4cc2f85cedef654fccc4a4d8" || r.Algorithm != atrest.MD5 {
		t.Errorf("%+v", r)
	}
	if r := res[1]; r.OK || r.Error != "AccessDenied: Access Denied" || r.VersionID != "1" {
		t.Errorf("%+v", r)
	}
	if r := res[2]; !r.OK || r.Object != (atrest.Object{Bucket: "b", Key: "cur"}) || r.Checksum != "acbd18db4cc2f85cedef654fccc4a4d8" {
		t.Errorf("%+v", r)
	}
	for o, done := range pending {
		if !done {
			t.Errorf("%+v not marked", o)
		}
	}
	crc, errs, _ := report(t, atrest.CRC64NVME, `b,cur,,succeeded,200,,"{""checksum_base64"":""AAAAAAAAAAE="",""checksumAlgorithm"":""CRC64NVME"",""checksumType"":""FULL_OBJECT""}"`+"\n")
	if len(errs) != 0 || crc[0].Checksum != "AAAAAAAAAAE=" || !crc[0].OK {
		t.Fatalf("%+v %v", crc, errs)
	}
}

func TestHostileReportLinesGiveErrorsNeverChecksums(t *testing.T) {
	for name, line := range map[string]string{
		"not in the manifest":   "b,other,,succeeded,200,," + md5Msg,
		"another bucket":        "evil,a%20b%2Bc,,succeeded,200,," + md5Msg,
		"six fields":            "b,a%20b%2Bc,,succeeded,200," + md5Msg,
		"eight fields":          "b,a%20b%2Bc,,succeeded,200,,x," + md5Msg,
		"bad key encoding":      "b,a%zz,,succeeded,200,," + md5Msg,
		"task status":           "b,a%20b%2Bc,,SUCCEEDED,200,," + md5Msg,
		"HTTP status":           "b,a%20b%2Bc,,succeeded,2000,," + md5Msg,
		"succeeded with a 500":  "b,a%20b%2Bc,,succeeded,500,," + md5Msg,
		"not JSON":              "b,a%20b%2Bc,,succeeded,200,,acbd18db4cc2f85cedef654fccc4a4d8",
		"two JSON values":       "b,a%20b%2Bc,,succeeded,200,,\"{}{}\"",
		"another algorithm":     `b,a%20b%2Bc,,succeeded,200,,"{""checksum_hex"":""acbd18db4cc2f85cedef654fccc4a4d8"",""checksumAlgorithm"":""SHA1""}"`,
		"no algorithm":          `b,a%20b%2Bc,,succeeded,200,,"{""checksum_hex"":""acbd18db4cc2f85cedef654fccc4a4d8""}"`,
		"composite":             `b,a%20b%2Bc,,succeeded,200,,"{""checksum_hex"":""acbd18db4cc2f85cedef654fccc4a4d8"",""checksumAlgorithm"":""MD5"",""checksumType"":""COMPOSITE""}"`,
		"no checksum":           `b,a%20b%2Bc,,succeeded,200,,"{""checksumAlgorithm"":""MD5""}"`,
		"short hex":             `b,a%20b%2Bc,,succeeded,200,,"{""checksum_hex"":""acbd18"",""checksumAlgorithm"":""MD5""}"`,
		"bad base64":            `b,a%20b%2Bc,,succeeded,200,,"{""checksum_base64"":""!!!!"",""checksumAlgorithm"":""MD5""}"`,
		"disagreeing encodings": `b,a%20b%2Bc,,succeeded,200,,"{""checksum_base64"":""AAAAAAAAAAAAAAAAAAAAAA=="",""checksum_hex"":""acbd18db4cc2f85cedef654fccc4a4d8"",""checksumAlgorithm"":""MD5""}"`,
		"bare quote":            `b,a%20b%2Bc,,succeeded,200,,x"y`,
	} {
		res, errs, _ := report(t, atrest.MD5, line+"\n")
		if len(res) != 0 || len(errs) != 1 {
			t.Errorf("%s: results %+v, errors %v", name, res, errs)
			continue
		}
		if !strings.Contains(errs[0].Error(), "s3://r/f.csv line 1") {
			t.Errorf("%s: %v does not name the line", name, errs[0])
		}
		// The error is the object's one result only when the line is of
		// an object of the manifest.
		var le *LineError
		errors.As(errs[0], &le)
		ofManifest := le.Object == atrest.Object{Bucket: "b", Key: "a b+c"}
		if want := !strings.HasPrefix(name, "not in") && name != "another bucket" && name != "six fields" &&
			name != "eight fields" && name != "bad key encoding" && name != "bare quote"; ofManifest != want || (!want && le.Object != atrest.Object{}) {
			t.Errorf("%s: the error names %+v", name, le.Object)
		}
	}
	// A line reported twice: the first counts, the second is an error.
	res, errs, _ := report(t, atrest.MD5, "b,a%20b%2Bc,,succeeded,200,,"+md5Msg+"\nb,a%20b%2Bc,,succeeded,200,,"+md5Msg+"\n")
	var le *LineError
	if len(res) != 1 || len(errs) != 1 || !strings.Contains(errs[0].Error(), "line 2") || !strings.Contains(errs[0].Error(), "reported again") ||
		!errors.As(errs[0], &le) || le.Object != (atrest.Object{}) {
		t.Errorf("a duplicate line: %+v %v", res, errs)
	}
	// A broken line does not hide the next one.
	res, errs, _ = report(t, atrest.MD5, "b,x\"y,,succeeded,200,,{}\nb,a%20b%2Bc,,succeeded,200,,"+md5Msg+"\n")
	if len(res) != 1 || !res[0].OK || len(errs) != 1 {
		t.Errorf("a broken line before a good one: %+v %v", res, errs)
	}
}

func TestACustomEndpointKeepsItsHost(t *testing.T) {
	r := awsconfig.NoAccountHost(s3control.NewDefaultEndpointResolverV2())
	p := s3control.EndpointParameters{Region: aws.String("us-east-1"), AccountId: aws.String("123456789012"), RequiresAccountId: aws.Bool(true),
		UseDualStack: aws.Bool(false), UseFIPS: aws.Bool(false)}
	e, err := r.ResolveEndpoint(context.Background(), p)
	if err != nil || e.URI.Host != "123456789012.s3-control.us-east-1.amazonaws.com" {
		t.Fatalf("AWS: %v, %v", e.URI.String(), err)
	}
	p.Endpoint = aws.String("http://127.0.0.1:4599")
	e, err = r.ResolveEndpoint(context.Background(), p)
	if err != nil || e.URI.String() != "http://127.0.0.1:4599" {
		t.Fatalf("custom: %v, %v", e.URI.String(), err)
	}
	e, err = s3control.NewDefaultEndpointResolverV2().ResolveEndpoint(context.Background(), p)
	if err != nil || e.URI.Host != "123456789012.127.0.0.1:4599" {
		t.Fatalf("the SDK's own resolver no longer prefixes a custom endpoint (%v, %v): NoAccountHost may go", e.URI.String(), err)
	}
}
