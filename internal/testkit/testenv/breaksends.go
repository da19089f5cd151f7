package testenv

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/testkit/faultproxy"
)

// BreakSends puts an HTTP fault proxy in front of the emulator that breaks
// the answers to the first n SendMessageBatch requests after the emulator
// has taken them (faultproxy.HTTP.BreakBodies), so that the SDK sends each
// again and the queue holds its messages twice (see SendRetries). It
// returns the proxy, closed when the test ends, and the sqs.Options
// function that sends a client through it. It skips the test on real AWS,
// where there is no emulator to stand in front of.
func BreakSends(t testing.TB, n int) (*faultproxy.HTTP, func(*sqs.Options)) {
	t.Helper()
	if RealAWS() {
		t.Skip("the proxy stands in front of the emulator")
	}
	proxy := EmulatorProxy(t)
	left := n // read under the proxy's lock
	proxy.BreakBodies(1, func(r *http.Request) bool {
		// The SQS JSON protocol names the action in X-Amz-Target.
		if left == 0 || !strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".SendMessageBatch") {
			return false
		}
		left--
		return true
	})
	return proxy, func(o *sqs.Options) { o.BaseEndpoint = aws.String(proxy.URL()) }
}

// EmulatorProxy is an HTTP fault proxy in front of the AWS emulator
// (Endpoint), closed when the test ends; the test fails without an
// emulator endpoint.
func EmulatorProxy(tb testing.TB) *faultproxy.HTTP {
	tb.Helper()
	u, err := url.Parse(Endpoint())
	if err != nil || u.Host == "" {
		tb.Fatalf("AWS_ENDPOINT_URL %q: no emulator to stand in front of (%v)", Endpoint(), err)
	}
	proxy, err := faultproxy.NewHTTP(u.Host)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { proxy.Close() })
	return proxy
}
