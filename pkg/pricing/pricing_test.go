package pricing

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/bitlog"
)

func TestDefaultIsLabelledAndValid(t *testing.T) {
	d := Default()
	if d.Region != "us-east-1" || d.TakenOn == "" || !strings.Contains(d.Label, "estimate") {
		t.Fatalf("default table %+v: want us-east-1, dated, labelled an estimate", d)
	}
	if d.GetPer1000 != 0.0004 || d.HeadPer1000 != 0.0004 || d.ListPer1000 != 0.005 || d.BatchJob != 0.25 ||
		d.TransferInRegionPerGB != 0 || d.RestoreFlexiblePerGB != 0.01 || d.RestoreFlexiblePer1000 != 0.05 {
		t.Errorf("default table %+v: a sourced figure differs from its source (see the package doc)", d)
	}
	if !strings.Contains(strings.Join(d.Unverified, ","), "computeChecksumPerGB") {
		t.Errorf("unverified %v: the Compute checksum price was not confirmed and must say so", d.Unverified)
	}
	d.GetPer1000 = 1 // a copy: the next Default is untouched
	if Default().GetPer1000 != 0.0004 {
		t.Error("Default shares its table")
	}
}

func TestParseRefusesBadTables(t *testing.T) {
	good := string(defaultJSON)
	for name, tc := range map[string]struct{ body, want string }{
		"syntax":           {"{\n  \"region\": \"us-east-1\",\n  oops\n}", "line 3, column 3"},
		"type":             {strings.Replace(good, `"getPer1000": 0.0004`, `"getPer1000": "cheap"`, 1), "line 5"},
		"unknown field":    {strings.Replace(good, `"region"`, `"regoin": "x", "region"`, 1), `unknown field "regoin"`},
		"missing price":    {strings.Replace(good, `"headPer1000": 0.0004,`, ``, 1), `"headPer1000" is missing`},
		"negative":         {strings.Replace(good, `"batchJob": 0.25`, `"batchJob": -0.25`, 1), `"batchJob" is -0.25`},
		"absurd":           {strings.Replace(good, `"batchJob": 0.25`, `"batchJob": 1e9`, 1), `"batchJob" is 1e+09`},
		"no date":          {strings.Replace(good, `"takenOn": "2026-11-27"`, `"takenOn": "recently"`, 1), `"takenOn" "recently"`},
		"bad region":       {strings.Replace(good, `"region": "us-east-1"`, `"region": "US East; DROP"`, 1), `"region"`},
		"bad unverified":   {strings.Replace(good, `"unverified": [`, `"unverified": ["storage", `, 1), `names "storage"`},
		"trailing garbage": {good + "{}", "after top-level value"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(tc.body), "prices.json")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "prices.json") {
				t.Fatalf("Parse: %v; want an error naming the file and %q", err, tc.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	p := filepath.Join(t.TempDir(), "prices.json")
	body := strings.Replace(string(defaultJSON), `"region": "us-east-1"`, `"region": "eu-west-1"`, 1)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	tb, err := Load(p)
	if err != nil || tb.Region != "eu-west-1" {
		t.Fatalf("Load: %+v, %v", tb, err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "none.json")); err == nil {
		t.Fatal("Load of a missing file: no error")
	}
}

// TestEstimate: every method priced from the rows' methods and bytes,
// worked out by hand.
func TestEstimate(t *testing.T) {
	tb := &Table{Label: "test", Region: "us-east-1", TakenOn: "2026-01-01",
		GetPer1000: 0.4, HeadPer1000: 0.5, TransferOutPerGB: 0.09, TransferInRegionPerGB: 0.01,
		BatchJob: 0.25, BatchPerMillionObjects: 1, ComputeChecksumPerGB: 0.004,
		RestoreFlexiblePerGB: 0.01, RestoreFlexiblePer1000: 0.05, RestoreDeepArchivePerGB: 0.02, RestoreDeepArchivePer1000: 0.1}
	u := Usage{PartSize: 16 << 20}
	u.Add(bitlog.MethodRead, 0, false)         // an empty item: 1 GET
	u.Add(bitlog.MethodRead, 16<<20, false)    // 1 GET
	u.Add(bitlog.MethodRead, (16<<20)+1, true) // 2 GETs; a restored archived copy
	u.Add(bitlog.MethodAtRest, 2*GB, true)
	u.Add(bitlog.MethodStored, 0, true)
	u.Add("", 0, false)
	if u.Read != (Count{3, 4, 32<<20 + 1}) || u.AtRest != (Count{1, 0, 2 * GB}) || u.Stored != (Count{2, 2, 0}) ||
		u.Archived != (Count{3, 3, 2*GB + 16<<20 + 1}) {
		t.Fatalf("usage %+v", u)
	}
	e := tb.Estimate(u)
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	readGB := float64(32<<20+1) / GB
	near("read", e.Read, 4.0/1000*0.4+readGB*0.01)
	near("read outside", e.ReadOutside, 4.0/1000*0.4+readGB*0.09)
	near("at rest", e.AtRest, 0.25+1.0/1e6+2*0.004)
	near("stored", e.Stored, 2.0/1000*0.5)
	near("total", e.Total, e.Read+e.AtRest+e.Stored)
	archGB := float64(2*GB+16<<20+1) / GB
	readBack := 3.0/1000*0.4 + archGB*0.01
	near("restore flexible", e.RestoreFlexible, 3.0/1000*0.05+archGB*0.01+readBack)
	near("restore deep archive", e.RestoreDeepArchive, 3.0/1000*0.1+archGB*0.02+readBack)
	if e.Usage.Jobs != 1 || e.TakenOn != "2026-01-01" || e.Label != "test" {
		t.Errorf("estimate %+v: want one job and the table's label and date", e)
	}
	if none := tb.Estimate(Usage{}); none.Total != 0 || none.Usage.Jobs != 0 {
		t.Errorf("nothing checked: %+v", none)
	}
}

// TestEstimateRequests: a run of 1,000 BITs (1,010 attempts) and one
// BIT_REPORT is priced from the per-type list: the GETs at the GET price,
// the DynamoDB reads at the read price, the report's PUTs and LIST at the
// PUT and LIST prices, SQS per task, PostgreSQL at 0.
func TestEstimateRequests(t *testing.T) {
	reqs := EstimateRequests(map[string]int64{"BIT": 1010, "BIT_REPORT": 1, "NOOP": 0})
	for name, want := range map[string]float64{"s3 GetObject": 1010, "dynamodb Query": 1010, "s3 PutObject": 2,
		"s3 ListObjectsV2": 1, "postgres statements": 1010*9 + 12, "sqs Workman": 1011 * WorkmanSQSPerTask} {
		if got := reqs[name]; math.Abs(got-want) > 1e-9 {
			t.Errorf("%s: %v requests, want %v", name, got, want)
		}
	}
	tb := Default()
	e := tb.RequestsCost(reqs, "test")
	wantS3 := 1010*tb.GetPer1000/1000 + 2*tb.PutPer1000/1000 + tb.ListPer1000/1000
	wantSQS := 1011 * (EnqueueSQSPerTask + WorkmanSQSPerTask) * tb.SQSPerMillion / 1e6
	if math.Abs(e.ByService["s3"]-wantS3) > 1e-12 || math.Abs(e.ByService["sqs"]-wantSQS) > 1e-12 ||
		math.Abs(e.ByService["dynamodb"]-1010*tb.DynamoReadPerMillion/1e6) > 1e-12 || e.ByService["postgres"] != 0 {
		t.Errorf("by service %v; want s3 %v, sqs %v", e.ByService, wantS3, wantSQS)
	}
	if sum := e.ByService["s3"] + e.ByService["sqs"] + e.ByService["dynamodb"]; math.Abs(e.Total-sum) > 1e-12 || e.Total <= 0 {
		t.Errorf("total %v, want %v", e.Total, sum)
	}
	if e.Label != tb.Label || e.TakenOn != tb.TakenOn || len(e.Unverified) == 0 {
		t.Errorf("estimate not labelled with its table: %+v", e)
	}
}
