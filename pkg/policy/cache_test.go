package policy_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/stores/jsonpos"
)

// gatedRepo counts reads and holds each one until its gate is closed, so a
// test can have many callers waiting on one read.
type gatedRepo struct {
	policy.Repository
	reads   atomic.Int32
	started chan struct{} // one value per read that started
	gate    chan struct{} // closed: reads proceed
}

func newGatedRepo(r policy.Repository) *gatedRepo {
	return &gatedRepo{Repository: r, started: make(chan struct{}, 1000), gate: make(chan struct{})}
}

func (g *gatedRepo) Policy(ctx context.Context, a string) (*policy.Policy, error) {
	g.reads.Add(1)
	g.started <- struct{}{}
	<-g.gate
	return g.Repository.Policy(ctx, a)
}

func (g *gatedRepo) Accounts(ctx context.Context) ([]string, error) {
	g.reads.Add(1)
	g.started <- struct{}{}
	<-g.gate
	return g.Repository.Accounts(ctx)
}

// burst calls Policy from n goroutines at once; once every one of them is
// blocked (on the gated read or waiting for it), it opens the gate and
// waits for them all. Run it inside a synctest bubble.
func burst(t *testing.T, c *policy.Cache, g *gatedRepo, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			if _, err := c.Policy(context.Background(), "a"); err != nil {
				errs <- err
			}
		})
	}
	synctest.Wait()
	close(g.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// A burst of callers that find no entry, or a stale one, cause one read of
// the file between them, not one each (a 20 MB policy parsed once per
// waiting audit task took Workman to 6 GB).
func TestCacheIsSingleFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		dir := policy.NewDir(t.TempDir())
		if err := dir.Put(ctx, "a", samplePolicy()); err != nil {
			t.Fatal(err)
		}
		g := newGatedRepo(dir)
		clk := clock.NewFake(time.Time{})
		c := policy.NewCache(g, policy.CacheConfig{Clock: clk})

		burst(t, c, g, 50)
		if n := g.reads.Load(); n != 1 {
			t.Fatalf("%d reads for a burst of 50 callers with nothing cached, want 1", n)
		}
		clk.Advance(policy.DefaultRefresh)
		g.gate = make(chan struct{})
		burst(t, c, g, 50)
		if n := g.reads.Load(); n != 2 {
			t.Fatalf("%d reads after a burst of 50 callers of a stale entry, want 2", n)
		}
	})
}

// A caller whose context ends stops waiting; the read goes on for the
// others and is cached.
func TestCacheCallerCancelDoesNotFailOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := policy.NewDir(t.TempDir())
		if err := dir.Put(context.Background(), "a", samplePolicy()); err != nil {
			t.Fatal(err)
		}
		g := newGatedRepo(dir)
		c := policy.NewCache(g, policy.CacheConfig{Clock: clock.NewFake(time.Time{})})
		ctx, cancel := context.WithCancel(context.Background())
		first := make(chan error, 1)
		go func() { _, err := c.Policy(ctx, "a"); first <- err }()
		<-g.started
		second := make(chan error, 1)
		go func() { _, err := c.Policy(context.Background(), "a"); second <- err }()
		synctest.Wait()
		cancel()
		if err := <-first; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled caller: %v", err)
		}
		close(g.gate)
		if err := <-second; err != nil {
			t.Fatalf("other caller: %v", err)
		}
		if _, err := c.Policy(context.Background(), "a"); err != nil || g.reads.Load() != 1 {
			t.Fatalf("after: %v, %d reads", err, g.reads.Load())
		}
	})
}

// Policy files are read with a size limit: a file over it is refused with
// a clear error, and the refusal is remembered for a while instead of being
// read again by every caller.
func TestPolicyFileSizeLimit(t *testing.T) {
	ctx := context.Background()
	d := t.TempDir()
	big := `{"spacesToIgnore": ["` + strings.Repeat("x", policy.MaxFileSize) + `"]}`
	if err := os.WriteFile(filepath.Join(d, policy.FileName("big")), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := policy.NewDir(d).Policy(ctx, "big")
	if !errors.Is(err, jsonpos.ErrTooLarge) || !strings.Contains(err.Error(), "big-duplication-policy.json: larger than the 4194304-byte limit") {
		t.Fatalf("Policy of a %d-byte file = %v", len(big), err)
	}
	inner := &countingRepo{Repository: policy.NewDir(d)}
	clk := clock.NewFake(time.Time{})
	c := policy.NewCache(inner, policy.CacheConfig{Clock: clk})
	for range 5 {
		if _, err := c.Policy(ctx, "big"); !errors.Is(err, jsonpos.ErrTooLarge) {
			t.Fatal(err)
		}
	}
	if n := inner.reads.Load(); n != 1 {
		t.Fatalf("%d reads of an oversized file by 5 callers, want 1", n)
	}
	clk.Advance(policy.DefaultFailureRetry)
	if _, err := c.Policy(ctx, "big"); !errors.Is(err, jsonpos.ErrTooLarge) || inner.reads.Load() != 2 {
		t.Fatalf("after the failure retry: %v, %d reads", err, inner.reads.Load())
	}
}

// BenchmarkCacheBurst measures what a burst of callers of a stale entry
// costs against one caller (the baseline): with single-flight reads both
// parse the file once, so B/op and reads/op stay at the baseline's. The
// policy is about 3 MiB (20,000 listed spaces), under MaxFileSize.
func BenchmarkCacheBurst(b *testing.B) {
	ctx := context.Background()
	sp := map[string][]policy.StorePolicy{}
	for i := range 20000 {
		sp[fmt.Sprintf("space-%06d-%s", i, strings.Repeat("p", 100))] = []policy.StorePolicy{{"1", "2"}}
	}
	dir := policy.NewDir(b.TempDir())
	if err := dir.Put(ctx, "a", &policy.Policy{SpacePolicies: sp}); err != nil {
		b.Fatal(err)
	}
	for _, callers := range []int{1, 64} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			inner := &countingRepo{Repository: dir}
			clk := clock.NewFake(time.Time{})
			c := policy.NewCache(inner, policy.CacheConfig{Clock: clk})
			b.ReportAllocs()
			for b.Loop() {
				clk.Advance(policy.DefaultRefresh)
				var wg sync.WaitGroup
				for range callers {
					wg.Go(func() {
						if _, err := c.Policy(ctx, "a"); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
			}
			b.ReportMetric(float64(inner.reads.Load())/float64(b.N), "reads/op")
		})
	}
}
