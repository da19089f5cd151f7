package looping_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/producers/looping"
)

// BenchmarkStateWrites20000Spaces saves the state of a dupproducer run
// over 20,000 spaces into a versioned state bucket on the emulator, set up
// as millctl setup sets it up: the run's start, then two bites per morsel
// (one moving its marker, one finishing it), saves of 100 changed morsels
// each so the emulator sees a few hundred requests rather than 40,000. It
// reports the state bytes written per changed morsel by the journaled
// S3Store and by the whole-state rewrite it replaced (the encoded state
// at each save, computed in the same run), their ratio, and what the run
// leaves in the bucket: current objects (the live base and journal) and
// noncurrent versions and delete markers (all expired by the bucket's
// rule), against the versions the whole-state rewrite leaves (one per
// save, which nothing expired).
//
// The bucket is on MILL_BENCH_S3_ENDPOINT when it is set (make bench:
// LocalStack, about 50 s; on moto under load the same run took 5 minutes).
func BenchmarkStateWrites20000Spaces(b *testing.B) {
	const (
		spaces  = 20000
		perSave = 100
	)
	cfg := testenv.AWS(b)
	ctx := context.Background()
	ep := testenv.BenchS3Endpoint(b)
	c := cfg.S3(func(o *s3.Options) { o.UsePathStyle = true; o.BaseEndpoint = aws.String(ep) })
	bucket := testenv.Prefix(b) + "state"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		b.Fatalf("create bucket: %v", err)
	}
	testenv.CleanupBucket(b, c, bucket)
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
		b.Fatal(err)
	}
	if _, err := setup.Apply(ctx, []setup.Resource{&setup.Bucket{Client: c, BucketName: bucket,
		Expire: []setup.Expiry{{ID: "mill-state-versions", NoncurrentDays: setup.StateNoncurrentDays}}}}, nil); err != nil {
		b.Fatal(err)
	}

	start := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	st := &looping.State{Version: looping.StateVersion, Kind: "dupproducer", Queued: looping.Counts{},
		RunFields: looping.RunFields{RunID: "20260601T000000Z", CurrentRunStart: start, NextRunStart: start.Add(7 * 24 * time.Hour), Invocations: 1}}
	for i := range spaces {
		account := fmt.Sprintf("account%03d", i%250)
		st.Morsels = append(st.Morsels, looping.Morsel{ID: fmt.Sprintf("%s/space-%05d/1→2", account, i),
			Data: json.RawMessage(fmt.Sprintf(`{"account":%q,"space":"space-%05d","src":"1","dest":"2"}`, account, i))})
	}
	store := looping.NewS3Store(c, bucket, "dupproducer.json")
	var oldBytes, changed int64
	saves := 0
	save := func(n int) {
		b.Helper()
		if err := store.Save(ctx, st); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		enc, err := st.Encode() // what the whole-state rewrite wrote
		if err != nil {
			b.Fatal(err)
		}
		oldBytes += int64(len(enc))
		changed += int64(n)
		saves++
		b.StartTimer()
	}

	b.ResetTimer()
	save(spaces) // the run's start lists every morsel
	for bite := range 2 {
		for from := 0; from < spaces; from += perSave {
			for i := from; i < from+perSave; i++ {
				m := &st.Morsels[i]
				m.DeletesDone = true
				m.Marker = fmt.Sprintf("photos/%05d.jpg", 1000*(bite+1))
				m.Done = bite == 1
				m.Queued += 1000
				var d struct{ Account string }
				_ = json.Unmarshal(m.Data, &d)
				st.Queued.Add("DUP", d.Account, 1000)
				st.Bites++
			}
			st.Cursor = (from + perSave) % spaces
			st.SavedAt = st.SavedAt.Add(time.Second)
			save(perSave)
		}
	}
	b.StopTimer()

	got, err := looping.NewS3Store(c, bucket, "dupproducer.json").Load(ctx)
	if err != nil {
		b.Fatal(err)
	}
	want, _ := st.Encode()
	if enc, _ := got.Encode(); string(enc) != string(want) {
		b.Fatal("the state loaded back differs from the state saved")
	}
	written, _ := looping.Written(store)
	var current, noncurrent, markers int
	p := s3.NewListObjectVersionsPaginator(c, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, v := range page.Versions {
			if aws.ToBool(v.IsLatest) {
				current++
			} else {
				noncurrent++
			}
		}
		markers += len(page.DeleteMarkers)
	}
	ents, err := looping.JournalEntries(ctx, store)
	if err != nil {
		b.Fatal(err)
	}
	if current != 1+len(ents) {
		b.Errorf("%d current objects, want the base and its %d journal entries", current, len(ents))
	}
	lc, err := c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(bucket)})
	if err != nil || len(lc.Rules) != 1 || lc.Rules[0].NoncurrentVersionExpiration == nil || aws.ToString(lc.Rules[0].Filter.Prefix) != "" {
		b.Fatalf("lifecycle %+v %v: want noncurrent versions of every object expired", lc, err)
	}

	perNew, perOld := float64(written)/float64(changed), float64(oldBytes)/float64(changed)
	b.ReportMetric(perNew, "B/changed-morsel")
	b.ReportMetric(perOld, "old-B/changed-morsel")
	b.ReportMetric(perNew/perOld, "journal/old")
	b.ReportMetric(float64(current), "current-objects")
	b.ReportMetric(float64(noncurrent+markers), "expiring-versions")
	b.ReportMetric(float64(saves), "old-versions")
	b.Logf("%d saves of %d morsel changes: journal wrote %.1f MB, the whole-state rewrite %.1f MB (%.0fx); left %d current objects, %d noncurrent versions and %d delete markers (expire after %d days), against %d versions kept for good",
		saves, changed, float64(written)/1e6, float64(oldBytes)/1e6, perOld/perNew, current, noncurrent, markers, setup.StateNoncurrentDays, saves)
}
