package awsconfig_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/faultproxy"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/aimd"
	"github.com/millfleet/mill/pkg/awsconfig"
)

// throttleRun is what a throttled run measured.
type throttleRun struct {
	allowed       float64 // requests/s the proxy lets through to the hot bucket
	hotOK, coldOK int64   // requests that succeeded
	refusedTurns  int64   // requests the limiter did not send (ThrottledError)
	slowDowns     int     // 503 SlowDown the proxy answered
	otherErrs     []error // anything else
	took          time.Duration
	hotLimit      float64 // the hot bucket's limit at the end
	coldLimited   bool    // the cold bucket was ever limited
}

// runThrottled puts small objects from hotWorkers goroutines into a hot
// bucket that a proxy in front of the emulator answers 503 SlowDown above
// allowed requests a second, and from coldWorkers goroutines into a cold
// bucket it does not limit, for d, through S3 clients of one Config (one
// limiter). Requests the limiter refuses are tried again after the time
// it says, as Workman would release their task.
func runThrottled(tb testing.TB, allowed float64, hotWorkers, coldWorkers int, d time.Duration) throttleRun {
	tb.Helper()
	base := testenv.AWS(tb)
	ctx := context.Background()
	proxy := testenv.EmulatorProxy(tb)
	raw := base.S3()
	prefix := strings.TrimSuffix(testenv.Prefix(tb), "-")
	hot, cold := prefix+"-hot", prefix+"-cold"
	for _, b := range []string{hot, cold} {
		testenv.CleanupBucket(tb, raw, b)
		if _, err := raw.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			tb.Fatal(err)
		}
	}
	// A Config of its own (a limiter of its own), its S3 clients sent
	// through the proxy.
	cfg, err := awsconfig.Load(ctx, awsconfig.Options{Throttle: aimd.Config{MaxWait: 2 * time.Second}})
	if err != nil {
		tb.Fatal(err)
	}
	var coldLimited atomic.Bool
	t0 := time.Now()
	cfg.OnLimitChange(func(c aimd.Change) {
		if testing.Verbose() && c.Kind == aimd.KindDecrease {
			tb.Logf("%6.2fs %s %s %.1f", time.Since(t0).Seconds(), c.Key, c.Kind, c.Limit)
		}
		if c.Key == "s3 "+cold && c.Limit > 0 {
			coldLimited.Store(true)
		}
	})
	client := cfg.S3(func(o *s3.Options) { o.BaseEndpoint = aws.String(proxy.URL()); o.UsePathStyle = true })
	proxy.Limit(faultproxy.Bucket(hot), allowed, max(1, int(allowed/10)))

	var r throttleRun
	var mu sync.Mutex
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	work := func(bucket string, ok *int64, w int) {
		for i := 0; time.Now().Before(end); i++ {
			// A few keys per worker, overwritten: the request rate is what
			// is measured, and a bucket of thousands of objects is slow to
			// empty on a loaded emulator (its cleanup timed out).
			_, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(fmt.Sprintf("w%d/%d", w, i%16)),
				Body: strings.NewReader("x")})
			var te *aimd.ThrottledError
			switch {
			case err == nil:
				atomic.AddInt64(ok, 1)
			case errors.As(err, &te):
				atomic.AddInt64(&r.refusedTurns, 1)
				time.Sleep(min(te.RetryIn, time.Until(end)))
			case awsconfig.ThrottleError("s3", err):
				// SlowDown after the SDK's retries: try again.
			default:
				mu.Lock()
				r.otherErrs = append(r.otherErrs, err)
				mu.Unlock()
				return
			}
		}
	}
	start := time.Now()
	if testing.Verbose() {
		// The trajectory, each second: the hot bucket's limit, the
		// requests it took, the SlowDowns and the turns refused.
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			var lastOK, lastRefused, lastCold int64
			lastSlow := 0
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				ok, refused := atomic.LoadInt64(&r.hotOK), atomic.LoadInt64(&r.refusedTurns)
				slow, _ := proxy.Answered()
				cold := atomic.LoadInt64(&r.coldOK)
				tb.Logf("%6.2fs limit %5.1f ok %3d slowdown %3d refused %3d; cold ok %3d", time.Since(start).Seconds(),
					cfg.Limiter().Limit("s3 "+hot), ok-lastOK, slow-lastSlow, refused-lastRefused, cold-lastCold)
				lastOK, lastSlow, lastRefused, lastCold = ok, slow, refused, cold
			}
		}()
	}
	for w := range hotWorkers {
		wg.Go(func() { work(hot, &r.hotOK, w) })
	}
	for w := range coldWorkers {
		wg.Go(func() { work(cold, &r.coldOK, w) })
	}
	wg.Wait()
	r.took = time.Since(start)
	r.allowed = allowed
	r.slowDowns, _ = proxy.Answered()
	r.hotLimit = cfg.Limiter().Limit("s3 " + hot)
	r.coldLimited = coldLimited.Load()
	return r
}

func (r throttleRun) hotRate() float64  { return float64(r.hotOK) / r.took.Seconds() }
func (r throttleRun) coldRate() float64 { return float64(r.coldOK) / r.took.Seconds() }

// TestThrottledBucketIsPaced: through the emulator, a bucket answering
// SlowDown above 20 requests a second is limited and paced near that
// rate; a second bucket of the same client is never limited and goes as
// fast as the emulator allows; no request fails otherwise.
func TestThrottledBucketIsPaced(t *testing.T) {
	r := runThrottled(t, 20, 12, 4, 10*time.Second)
	for _, err := range r.otherErrs {
		t.Errorf("a request failed with an error that is not throttling: %v", err)
	}
	if r.hotLimit == 0 {
		t.Error("the throttled bucket was not limited")
	}
	if r.coldLimited {
		t.Error("the unthrottled bucket was limited")
	}
	if r.hotRate() > 1.2*r.allowed+1 {
		t.Errorf("the throttled bucket took %.1f requests/s of %v allowed", r.hotRate(), r.allowed)
	}
	if r.coldRate() < r.hotRate() {
		t.Errorf("the unthrottled bucket went at %.1f requests/s, below the throttled one's %.1f", r.coldRate(), r.hotRate())
	}
	t.Logf("hot %.1f/s of %v allowed (%.2f×), limit %.1f, %d SlowDown, %d turns refused; cold %.1f/s",
		r.hotRate(), r.allowed, r.hotRate()/r.allowed, r.hotLimit, r.slowDowns, r.refusedTurns, r.coldRate())
}

// BenchmarkThrottledBucket reports, over 30 s, the rate the throttled
// bucket achieved as a fraction of the rate its proxy allows (goal ≥ 0.9)
// and the unthrottled bucket's rate in the same run.
func BenchmarkThrottledBucket(b *testing.B) {
	for range b.N {
		r := runThrottled(b, 50, 24, 4, 30*time.Second)
		if len(r.otherErrs) > 0 {
			b.Fatalf("requests failed: %v", r.otherErrs[0])
		}
		b.ReportMetric(r.hotRate()/r.allowed, "throttled/allowed")
		b.ReportMetric(r.hotRate(), "throttled-req/s")
		b.ReportMetric(r.allowed, "allowed-req/s")
		b.ReportMetric(r.coldRate(), "other-req/s")
		b.ReportMetric(float64(r.slowDowns), "slowdowns")
	}
}
