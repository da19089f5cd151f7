package dup_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/lease/memlease"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/producers/dup"
	"github.com/millfleet/mill/producers/looping"
)

// BenchmarkDupproducerState runs the real dup producer, wired as
// cmd/dupproducer wires it (the registry and policies read from a config
// directory, wiring's store opener, the state in s3://BUCKET/dupproducer.json
// through producercmd.OpenState), over fs stores of 2,000 and 20,000
// spaces (100 spaces per account, every 20th space with 3 source items and
// every 50th with an item only at the destination), with the state bucket
// set up as millctl setup sets it up (versioned, with its lifecycle rules).
// Tasks go to an in-memory queue; the queue fills at a third of the run's
// tasks, so the run takes several invocations (a new state store each, as
// a new process would, loading what the last one saved), the queue emptied
// between them, until it is complete.
//
// Every PutObject to the state bucket is counted at the S3 client's HTTP
// transport. A wrapper around the state store counts, for each save, the
// morsels that changed since the previous save and the size of the whole
// encoded state (what the whole-state rewrite this replaced wrote at every
// save; kept as a running sum of the morsels' encodings, checked against
// State.Encode every 1000 saves and at the end of each invocation). After
// the run it lists the bucket's object versions and reports those that no
// lifecycle rule expires (unexpiring; must be 0).
//
// The space counts are MILL_BENCH_DUP_STATE_SPACES, comma-separated
// (default and acceptance 2000,20000; make bench runs 200,2000, between
// which the whole-state rewrite's bytes per changed morsel grow tenfold
// while the journal's stay flat, in about 50 s). On moto on a shared 2-core machine the
// 2,000-space run takes about 40 seconds and the 20,000-space one 3 to 9
// minutes (15 under heavy load: 42,000 state requests). Versions are
// listed in one page (listMax): moto copies every version of the bucket
// to answer each page.
func BenchmarkDupproducerState(b *testing.B) {
	for _, spaces := range stateSpaces(b) {
		b.Run(fmt.Sprintf("spaces=%d", spaces), func(b *testing.B) {
			for range b.N {
				benchDupproducerState(b, spaces)
			}
		})
	}
}

// stateSpaces reads MILL_BENCH_DUP_STATE_SPACES: space counts, each a
// multiple of 100 (the spaces of one account).
func stateSpaces(b *testing.B) []int {
	out := testenv.BenchSizes(b, "MILL_BENCH_DUP_STATE_SPACES", "2000,20000")
	for _, n := range out {
		if n%100 != 0 {
			b.Fatalf("MILL_BENCH_DUP_STATE_SPACES: %d is not a multiple of 100", n)
		}
	}
	return out
}

func benchDupproducerState(b *testing.B, spaces int) {
	const (
		perAccount = 100
		biteSize   = 2 // a space of 3 items takes two bites
		stateKey   = "dupproducer.json"
	)
	b.StopTimer()
	ctx := context.Background()
	cfg := testenv.AWS(b)
	puts := &putCounter{}
	s3c := cfg.S3(func(o *s3.Options) { o.HTTPClient = &countingClient{inner: o.HTTPClient, c: puts} })
	bucket := testenv.Prefix(b) + "state"
	puts.bucket = bucket
	cleanupVersions(b, s3c, bucket)
	stateBucket(b, ctx, cfg.SQS(), s3c, cfg.DynamoDB(), bucket)

	cfgDir, tasks := dupRegistry(b, spaces, perAccount)
	src := wiring.ConfigSource{Dir: cfgDir}
	reg, err := src.Registry(ctx, s3c)
	if err != nil {
		b.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	pols := policy.NewCache(src.Policies(s3c), policy.CacheConfig{Refresh: 24 * time.Hour, Logger: logger})
	prod, err := dup.New(dup.Config{Registry: reg, Policies: pols, Opener: wiring.NewOpener(reg, &cfg.AWS, cfg.EndpointOverride), Logger: logger})
	if err != nil {
		b.Fatal(err)
	}
	q := memqueue.New("mill-dup-low", memqueue.Config{})
	lse := memlease.New(nil)
	acct := &saveCounter{}

	b.StartTimer()
	start := time.Now()
	invocations := 0
	for {
		invocations++
		if invocations > 20 {
			b.Fatalf("the run is not complete after %d invocations", invocations-1)
		}
		st, err := looping.OpenStateStore("s3://"+bucket+"/"+stateKey, s3c)
		if err != nil {
			b.Fatal(err)
		}
		acct.inner = st
		loop, err := looping.New(looping.Config{Kind: dup.Kind, Producer: prod, Queue: q, State: acct, Lease: lse,
			MaxQueueSize: int64(tasks/3 + 1), BiteSize: biteSize, Logger: logger, Progress: looping.ProgressOff})
		if err != nil {
			b.Fatal(err)
		}
		sum, err := loop.Run(ctx)
		if err != nil {
			b.Fatalf("invocation %d: %v", invocations, err)
		}
		if err := acct.check(); err != nil {
			b.Fatal(err)
		}
		if len(sum.Failed) > 0 {
			b.Fatalf("invocation %d gave up morsels: %v", invocations, sum.Failed)
		}
		if sum.Stopped == looping.StopDone {
			break
		}
		if sum.Stopped != looping.StopQueueFull {
			b.Fatalf("invocation %d stopped: %s", invocations, sum.Stopped)
		}
		if err := q.Purge(ctx); err != nil { // the workers' part
			b.Fatal(err)
		}
	}
	b.StopTimer()
	elapsed := time.Since(start)
	if acct.morsels != spaces {
		b.Fatalf("the run had %d morsels, want one per space (%d)", acct.morsels, spaces)
	}

	v := versionsLeft(b, ctx, s3c, bucket)
	if v.unexpiring != 0 {
		b.Errorf("%d object versions (of %d noncurrent and %d delete markers) are expired by no lifecycle rule", v.unexpiring, v.noncurrent, v.markers)
	}
	perNew := float64(puts.bytes) / float64(acct.changed)
	perOld := float64(acct.oldBytes) / float64(acct.changed)
	b.ReportMetric(float64(puts.bytes), "state-B")
	b.ReportMetric(perNew, "B/changed-morsel")
	b.ReportMetric(float64(puts.n), "state-PUTs")
	// The journal's entries, and the bases it rewrote (a new run's, and
	// one per compaction).
	b.ReportMetric(float64(puts.bytes-puts.baseBytes)/float64(acct.changed), "entry-B/changed-morsel")
	b.ReportMetric(float64(puts.baseBytes)/float64(acct.changed), "base-B/changed-morsel")
	b.ReportMetric(float64(puts.basePut), "base-PUTs")
	b.ReportMetric(float64(acct.oldBytes), "old-state-B")
	b.ReportMetric(perOld, "old-B/changed-morsel")
	b.ReportMetric(perNew/perOld, "journal/old")
	b.ReportMetric(float64(acct.changed), "changed-morsels")
	b.ReportMetric(float64(v.noncurrent+v.markers), "noncurrent-versions")
	b.ReportMetric(float64(v.unexpiring), "unexpiring")
	b.Logf("%d spaces, %d invocations, %d saves, %d morsel changes in %.1fs: %d state PUTs wrote %.1f MB (%.0f B per changed morsel; %.1f MB in base rewrites); the whole-state rewrite would have written %.1f MB (%.0f B per changed morsel, %.0fx); left %d current objects, %d noncurrent versions and %d delete markers, %d of them expired by no rule",
		spaces, invocations, acct.saves, acct.changed, elapsed.Seconds(), puts.n, float64(puts.bytes)/1e6, perNew, float64(puts.baseBytes)/1e6,
		float64(acct.oldBytes)/1e6, perOld, perOld/perNew, v.current, v.noncurrent, v.markers, v.unexpiring)
	b.Logf("state requests (mean latency): %s", puts.profile())
}

// stateBucket creates the state bucket as millctl setup does: the state
// bucket's resource of setup.Resources, applied.
func stateBucket(b *testing.B, ctx context.Context, sqsc setup.SQSAPI, s3c *s3.Client, ddb setup.DynamoDBAPI, bucket string) {
	b.Helper()
	rs, err := setup.Resources(setup.Config{StateBucket: bucket, SkipDB: true}, setup.Clients{SQS: sqsc, S3: s3c, DynamoDB: ddb})
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range rs {
		if r.Kind() == "bucket" && r.Name() == bucket {
			if _, err := setup.Apply(ctx, []setup.Resource{r}, nil); err != nil {
				b.Fatal(err)
			}
			return
		}
	}
	b.Fatalf("setup has no resource for the state bucket %s", bucket)
}

// dupRegistry writes a config directory (accounts.json, the duplication
// accounts and a policy per account) of spaces/perAccount accounts, each
// with an fs source store of perAccount spaces and an fs destination, and
// fills the stores. It returns the directory and the tasks a run queues.
func dupRegistry(b *testing.B, spaces, perAccount int) (dir string, tasks int) {
	b.Helper()
	ctx := context.Background()
	dir, root := b.TempDir(), b.TempDir()
	var accts, ids []string
	for a := range spaces / perAccount {
		id := fmt.Sprintf("account%03d", a)
		ids = append(ids, strconv.Quote(id))
		accts = append(accts, fmt.Sprintf(`{"id": %q, "status": "active", "stores": [
    {"id": "1", "primary": true, "kind": "fs", "root": %q},
    {"id": "2", "kind": "fs", "root": %q}]}`, id, filepath.Join(root, id, "src"), filepath.Join(root, id, "dst")))
		if err := os.WriteFile(filepath.Join(dir, policy.FileName(id)), []byte(`{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`), 0o644); err != nil {
			b.Fatal(err)
		}
		srcStore, err := fsstore.New(filepath.Join(root, id, "src"))
		if err != nil {
			b.Fatal(err)
		}
		dstStore, err := fsstore.New(filepath.Join(root, id, "dst"))
		if err != nil {
			b.Fatal(err)
		}
		for s := range perAccount {
			i := a*perAccount + s
			space := fmt.Sprintf("space-%05d", i)
			if err := srcStore.CreateSpace(ctx, space); err != nil {
				b.Fatal(err)
			}
			tasks++ // the space-level task
			if i%20 == 0 {
				for k := range 3 {
					putItem(b, srcStore, space, fmt.Sprintf("photos/%03d.jpg", k))
					tasks++
				}
			}
			if i%50 == 0 {
				if err := dstStore.CreateSpace(ctx, space); err != nil {
					b.Fatal(err)
				}
				putItem(b, dstStore, space, "gone.jpg") // absent from the source: a delete
				tasks++
			}
		}
	}
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write(stores.FileName, `{"accounts": [`+strings.Join(accts, ",\n")+`]}`)
	write(policy.AccountsFile, "["+strings.Join(ids, ", ")+"]")
	return dir, tasks
}

func putItem(b *testing.B, s storage.Provider, space, id string) {
	b.Helper()
	body := "content of " + space + "/" + id
	if _, err := s.Put(context.Background(), space, id, strings.NewReader(body), storage.PutOptions{Size: int64(len(body))}); err != nil {
		b.Fatal(err)
	}
}

// putCounter counts the PutObject requests to one bucket and their
// payload bytes.
type putCounter struct {
	bucket string

	mu                   sync.Mutex
	n, bytes, baseBytes  int64
	journalPuts, basePut int64
	requests             int64
	wait                 map[string]time.Duration // per request kind: time waiting on S3
	count                map[string]int64
}

// profile describes the requests by kind: count and mean latency.
func (c *putCounter) profile() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.profile0()
}

func (c *putCounter) profile0() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c.count)) {
		parts = append(parts, fmt.Sprintf("%s %d × %.1f ms", k, c.count[k], float64(c.wait[k].Microseconds())/1e3/float64(c.count[k])))
	}
	return strings.Join(parts, ", ")
}

// countingClient is the S3 client's HTTP client, counting PUTs.
type countingClient struct {
	inner interface {
		Do(*http.Request) (*http.Response, error)
	}
	c *putCounter
}

func (cc *countingClient) Do(r *http.Request) (*http.Response, error) {
	key, ok := strings.CutPrefix(r.URL.Path, "/"+cc.c.bucket+"/")
	kind := r.Method
	switch {
	case r.URL.Query().Has("delete"):
		kind = "DeleteObjects"
	case r.URL.Query().Has("list-type"):
		kind = "List"
	case !ok || key == "":
		kind = r.Method + " bucket"
	case r.Method == http.MethodPut && strings.Contains(key, ".journal/"):
		kind = "PUT entry"
	case r.Method == http.MethodPut:
		kind = "PUT base"
	}
	began := time.Now()
	defer func() {
		d := time.Since(began)
		cc.c.mu.Lock()
		defer cc.c.mu.Unlock()
		if cc.c.wait == nil {
			cc.c.wait, cc.c.count = map[string]time.Duration{}, map[string]int64{}
		}
		cc.c.wait[kind] += d
		cc.c.count[kind]++
		cc.c.requests++
		if testing.Verbose() && cc.c.requests%1000 == 0 {
			fmt.Fprintf(os.Stderr, "%s: %d state requests: %s\n", time.Now().UTC().Format(time.TimeOnly), cc.c.requests, cc.c.profile0())
		}
	}()
	if r.Method == http.MethodPut && ok && key != "" && r.URL.Query().Get("partNumber") == "" {
		n := r.ContentLength
		// A streamed (aws-chunked) body: its payload's own length.
		if d := r.Header.Get("X-Amz-Decoded-Content-Length"); d != "" {
			if v, err := strconv.ParseInt(d, 10, 64); err == nil {
				n = v
			}
		}
		cc.c.mu.Lock()
		cc.c.n++
		cc.c.bytes += n
		if !strings.Contains(key, ".journal/") {
			cc.c.basePut++
			cc.c.baseBytes += n
		} else {
			cc.c.journalPuts++
		}
		cc.c.mu.Unlock()
	}
	return cc.inner.Do(r)
}

// saveCounter is the loop's state store: it counts the saves, the morsels
// each changed, and the size of the whole encoded state at each.
type saveCounter struct {
	inner looping.StateStore

	saves, changed, oldBytes int64
	morsels                  int
	last                     []looping.Morsel
	size                     []int // encoded size of each morsel of last
	sum, offset              int   // Σ size; the rest of the encoding (calibrated)
	lastState                *looping.State
	lastEstimate             int
	since                    int // saves since the last check
}

func (s *saveCounter) Load(ctx context.Context) (*looping.State, error) {
	return s.inner.Load(ctx)
}

func (s *saveCounter) String() string { return s.inner.String() }

func (s *saveCounter) Save(ctx context.Context, st *looping.State) error {
	if err := s.inner.Save(ctx, st); err != nil {
		return err
	}
	s.saves++
	same := len(s.last) == len(st.Morsels)
	for i := 0; same && i < len(st.Morsels); i++ {
		same = s.last[i].ID == st.Morsels[i].ID
	}
	if !same { // a new run: every morsel is new
		s.last, s.size, s.sum = make([]looping.Morsel, len(st.Morsels)), make([]int, len(st.Morsels)), 0
		s.morsels = len(st.Morsels)
		for i := range st.Morsels {
			s.last[i] = cloneMorsel(st.Morsels[i])
			s.size[i] = morselSize(st.Morsels[i])
			s.sum += s.size[i]
		}
		s.changed += int64(len(st.Morsels))
		enc, err := st.Encode()
		if err != nil {
			return err
		}
		s.offset = len(enc) - s.sum - headerSize(st)
	} else {
		for i := range st.Morsels {
			if !sameMorsel(&s.last[i], &st.Morsels[i]) {
				s.changed++
				s.last[i] = cloneMorsel(st.Morsels[i])
				n := morselSize(st.Morsels[i])
				s.sum += n - s.size[i]
				s.size[i] = n
			}
		}
	}
	s.lastEstimate = headerSize(st) + s.sum + s.offset
	s.oldBytes += int64(s.lastEstimate)
	s.lastState = st
	if s.since++; s.since >= 1000 {
		return s.check()
	}
	return nil
}

// check compares the running size with the state's encoding at the last
// save.
func (s *saveCounter) check() error {
	s.since = 0
	if s.lastState == nil {
		return nil
	}
	enc, err := s.lastState.Encode()
	if err != nil {
		return err
	}
	if len(enc) != s.lastEstimate {
		return fmt.Errorf("the whole state encodes to %d bytes, the running sum says %d", len(enc), s.lastEstimate)
	}
	return nil
}

// headerSize is the encoded size of st without its morsels.
func headerSize(st *looping.State) int {
	h := *st
	h.Morsels = []looping.Morsel{}
	enc, _ := h.Encode()
	return len(enc)
}

// morselSize is m's size in an encoded state's morsel list.
func morselSize(m looping.Morsel) int {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("    ", "  ")
	_ = enc.Encode(m)
	return buf.Len()
}

func cloneMorsel(m looping.Morsel) looping.Morsel {
	m.Data = bytes.Clone(m.Data)
	return m
}

func sameMorsel(a, b *looping.Morsel) bool {
	return a.ID == b.ID && a.Marker == b.Marker && a.DeletesDone == b.DeletesDone && a.Done == b.Done &&
		a.Skipped == b.Skipped && a.Failed == b.Failed && a.Failures == b.Failures && a.Queued == b.Queued &&
		bytes.Equal(a.Data, b.Data)
}

// versions is what a bucket holds after the run.
type versions struct {
	current, noncurrent, markers, unexpiring int
}

// versionsLeft lists the bucket's object versions and delete markers and
// counts those no enabled lifecycle rule expires: a noncurrent version or
// delete marker needs a rule over its key with NoncurrentVersionExpiration;
// a current delete marker one that removes expired delete markers.
func versionsLeft(b *testing.B, ctx context.Context, c *s3.Client, bucket string) versions {
	b.Helper()
	lc, err := c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(bucket)})
	if err != nil {
		b.Fatalf("lifecycle of %s: %v", bucket, err)
	}
	covers := func(key string, pred func(r s3types.LifecycleRule) bool) bool {
		for _, r := range lc.Rules {
			prefix := ""
			if r.Filter != nil {
				if r.Filter.Tag != nil || r.Filter.And != nil || r.Filter.ObjectSizeGreaterThan != nil || r.Filter.ObjectSizeLessThan != nil {
					continue // narrower than a prefix: not counted on
				}
				prefix = aws.ToString(r.Filter.Prefix)
			} else {
				//lint:ignore SA1019 a rule in the legacy form (no Filter) names its prefix here
				prefix = aws.ToString(r.Prefix)
			}
			if r.Status == s3types.ExpirationStatusEnabled && strings.HasPrefix(key, prefix) && pred(r) {
				return true
			}
		}
		return false
	}
	noncurrentRule := func(r s3types.LifecycleRule) bool {
		return r.NoncurrentVersionExpiration != nil && aws.ToInt32(r.NoncurrentVersionExpiration.NoncurrentDays) > 0
	}
	markerRule := func(r s3types.LifecycleRule) bool {
		return r.Expiration != nil && aws.ToBool(r.Expiration.ExpiredObjectDeleteMarker)
	}
	var v versions
	p := s3.NewListObjectVersionsPaginator(c, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), MaxKeys: aws.Int32(listMax)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range page.Versions {
			if aws.ToBool(o.IsLatest) {
				v.current++
				continue
			}
			v.noncurrent++
			if !covers(aws.ToString(o.Key), noncurrentRule) {
				v.unexpiring++
			}
		}
		for _, m := range page.DeleteMarkers {
			v.markers++
			rule := noncurrentRule
			if aws.ToBool(m.IsLatest) {
				rule = markerRule
			}
			if !covers(aws.ToString(m.Key), rule) {
				v.unexpiring++
			}
		}
	}
	return v
}

// listMax is the MaxKeys of version listings: S3 answers at most 1000 per
// page whatever is asked, and moto, which copies every version of the
// bucket to answer any page, then answers in one.
const listMax = 100000

// cleanupVersions deletes, when the benchmark ends, every version and
// delete marker of bucket, then the bucket (testenv.CleanupBucket's minute
// is not enough for moto to list thousands of versions a page at a time).
func cleanupVersions(b *testing.B, c *s3.Client, bucket string) {
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		for {
			out, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), MaxKeys: aws.Int32(listMax)})
			if err != nil {
				b.Errorf("cleanup: list versions of %s: %v", bucket, err)
				return
			}
			var ids []s3types.ObjectIdentifier
			for _, v := range out.Versions {
				ids = append(ids, s3types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId})
			}
			for _, m := range out.DeleteMarkers {
				ids = append(ids, s3types.ObjectIdentifier{Key: m.Key, VersionId: m.VersionId})
			}
			if len(ids) == 0 {
				break
			}
			for chunk := range slices.Chunk(ids, 1000) {
				if _, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket),
					Delete: &s3types.Delete{Objects: chunk, Quiet: aws.Bool(true)}}); err != nil {
					b.Errorf("cleanup: delete versions of %s: %v", bucket, err)
					return
				}
			}
		}
		if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
			b.Errorf("cleanup: delete bucket %s: %v", bucket, err)
		}
	})
}
